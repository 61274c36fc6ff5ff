/**
 * The questions `l9gpu jobs` asks of a node's store, and the one access rule
 * that answers them: root and [jobs] admin_group see every job, everyone else
 * their own. The store is root's alone, so a user's question reaches it only
 * through the daemon's socket (src/jobs/server.ts), where the asker is who
 * the kernel says; root's CLI reads the store directly. Both call answerJobs.
 */
import type { Db } from '../store/open.js';
import { JOB_ID } from '../core/job-id.js';
import type { Viewer } from './access.js';
import { listJobs, listWasteInputs, type JobListRow } from './list.js';
import type { WasteInput } from './waste.js';
import { GROUP_BY, type GroupBy, type JobGroupRow } from './by.js';
import { groupJobsInStore } from './by-store.js';
import { findJob, reportFromStore } from './report.js';
import type { Prices } from '../figures/prices.js';
import type { JobReport } from './report-model.js';

/** `limit` caps the whole list (0: no cap); `offset` is where this page starts in it (the `next` of the page before). */
export type ListRequest = {
  op: 'list';
  user: string | null;
  account: string | null;
  partition: string | null;
  state: 'running' | 'completed' | 'all';
  since: number | null;
  limit: number;
  by?: GroupBy | null;
  offset?: number;
  waste?: boolean;
};
export type ShowRequest = { op: 'show'; jobId: string };
export type JobsRequest = ListRequest | ShowRequest;

/**
 * A list with `by`: groups (rows empty). `next`: there is more past this page
 * (the socket's answers hold at most [limits] jobs_rows), ask again from there.
 * `denied`: the asker may not see it, and is told nothing more.
 */
export type ListAnswer = {
  ok: true;
  op: 'list';
  user: string | null;
  rows: JobListRow[];
  by?: GroupBy;
  groups?: JobGroupRow[];
  next?: number;
  waste?: WasteInput[];
};
export type ShowAnswer = { ok: true; op: 'show'; report: JobReport };
export type Refusal = { ok: false; error: string; code: number; denied?: true };
export type JobsAnswer = ListAnswer | ShowAnswer | Refusal;

const STATES = ['running', 'completed', 'all'] as const;
const name = (v: unknown, what: string): string | null => {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string' || v.length === 0 || v.length > 256 || /[\x00-\x1f]/.test(v)) throw new Error(`${what}: not a name`);
  return v;
};

/** A request as it arrives from a socket: anything; what is not a well-formed request is refused, naming why. */
export function parseJobsRequest(text: string): JobsRequest {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`not JSON (${(e as Error).message})`);
  }
  if (!r || typeof r !== 'object') throw new Error('not a JSON object');
  if (r.op === 'show') {
    if (typeof r.jobId !== 'string' || !JOB_ID.test(r.jobId)) throw new Error('jobId: not a job id (123 or 122_4)');
    return { op: 'show', jobId: r.jobId };
  }
  if (r.op !== 'list') throw new Error(`op: "${String(r.op).slice(0, 20)}" is not list or show`);
  if (!STATES.includes(r.state as 'all')) throw new Error('state: not running, completed or all');
  if (!Number.isInteger(r.limit) || (r.limit as number) < 0 || (r.limit as number) > 1_000_000)
    throw new Error('limit: not an integer from 0 to 1000000');
  if (r.since !== null && r.since !== undefined && !Number.isFinite(r.since)) throw new Error('since: not a time in ms');
  if (r.by !== null && r.by !== undefined && !GROUP_BY.includes(r.by as GroupBy))
    throw new Error('by: not user, account, partition or name');
  if (r.waste !== undefined && typeof r.waste !== 'boolean') throw new Error('waste: not true or false');
  if (r.waste === true && r.by !== null && r.by !== undefined) throw new Error('waste and by: one or the other');
  if (r.offset !== undefined && (!Number.isInteger(r.offset) || (r.offset as number) < 0 || (r.offset as number) > 1_000_000_000))
    throw new Error('offset: not an integer from 0 to 1000000000');
  return {
    op: 'list',
    user: name(r.user, 'user'),
    account: name(r.account, 'account'),
    partition: name(r.partition, 'partition'),
    state: r.state as ListRequest['state'],
    since: (r.since as number | null) ?? null,
    limit: r.limit as number,
    by: (r.by as GroupBy | null | undefined) ?? null,
    offset: (r.offset as number | undefined) ?? 0,
    ...(r.waste === true ? { waste: true } : {}),
  };
}

/** Where a page of a list starts and how long it is: `more` when the list goes on past it. */
function page(req: ListRequest, maxRows: number): { offset: number; size: number; capped: boolean } {
  const offset = req.offset ?? 0;
  const wanted = req.limit > 0 ? Math.max(0, req.limit - offset) : Infinity;
  return { offset, size: Math.min(wanted, maxRows), capped: wanted > maxRows };
}

/**
 * `maxRows`: the most rows (or groups) in one answer; a longer list is paged
 * (the answer's `next`). `groupsMemo`: where the groups of a --by list may be
 * kept between its pages (each page would fold every job again).
 */
export function answerJobs(
  db: Db,
  node: string,
  prices: Prices | null,
  who: Viewer,
  req: JobsRequest,
  maxRows = Infinity,
  groupsMemo: (fold: () => JobGroupRow[]) => JobGroupRow[] = (fold) => fold(),
): JobsAnswer {
  if (req.op === 'list') {
    if (req.user && req.user !== who.name && !who.privileged)
      return { ok: false, error: `you can only list your own jobs (${who.name}); root and [jobs] admin_group see everyone's`, code: 1 };
    const user = req.user ?? (who.privileged ? null : who.name);
    const p = page(req, maxRows);
    const next = (got: number) => (p.capped && got > p.size ? { next: p.offset + p.size } : {});
    if (req.by) {
      // every job that matches adds up: the limit caps the groups, not the jobs
      const by = req.by;
      // folded in SQL, one job at a time: memory of one sum per group, whatever the jobs (src/jobs/by-store.ts)
      const groups = groupsMemo(() => groupJobsInStore(db, { ...req, user }, by, node, prices)).slice(p.offset);
      return { ok: true, op: 'list', user, rows: [], by: req.by, groups: groups.slice(0, p.size), ...next(groups.length) };
    }
    if (p.size === 0) return { ok: true, op: 'list', user, rows: [], ...(req.waste ? { waste: [] } : {}) };
    if (req.waste) {
      // the fold's inputs, a page of jobs at a time: the asker's CLI adds the time limits from Slurm accounting and folds them
      // (src/jobs/waste.ts)
      const inputs = listWasteInputs(
        db,
        { ...req, user, limit: p.size === Infinity ? 0 : p.size + (p.capped ? 1 : 0), offset: p.offset },
        node,
      );
      return { ok: true, op: 'list', user, rows: [], waste: inputs.slice(0, p.size), ...next(inputs.length) };
    }
    // one row past the page says whether there is a next one
    const rows = listJobs(
      db,
      { ...req, user, limit: p.size === Infinity ? 0 : p.size + (p.capped ? 1 : 0), offset: p.offset },
      node,
      prices,
    );
    return { ok: true, op: 'list', user, rows: rows.slice(0, p.size), ...next(rows.length) };
  }
  const found = findJob(db, req.jobId);
  if (!found) {
    return {
      ok: false,
      error:
        `job ${req.jobId} is not known to this node (${node}): it ran elsewhere or used no GPU ` +
        `here. For a cluster-wide report: l9gpu jobs show ${req.jobId} --source promql --url <your ` +
        `Prometheus/VictoriaMetrics URL>`,
      code: 1,
    };
  }
  const report = reportFromStore(db, found.row, found.runs, node, prices);
  const denied = accessError(report, who);
  return denied ? { ok: false, error: denied, code: 1, denied: true } : { ok: true, op: 'show', report };
}

/**
 * Why this viewer may not see this report (undefined: they may). It names
 * neither the owner nor where else to look: Slurm's PrivateData=jobs tells
 * a user nothing of another's job, and neither does l9gpu.
 */
export function accessError(report: JobReport, who: Viewer): string | undefined {
  if (!report.job.user || report.job.user === who.name || who.privileged) return undefined;
  return `job ${report.job.id} is not yours`;
}
