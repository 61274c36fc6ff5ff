/**
 * Running jobs from Slurm's own commands, parsed defensively by version:
 * `squeue --json` (22.05's openapi v0.0.38, and the data_parser formats of
 * 23.02+ where numbers become {set, infinite, number} and job_state a list),
 * `scontrol show job -d` text (no JSON before 23.02), and `sacct -P`.
 */
import { expandHostlist, expandIndexList } from './hostlist.js';
import { clip, printable } from '../src/core/printable.js';
import type { RunIdentity } from '../src/core/run-identity.js';

/** A running job as Slurm's commands say it: the run identity but its run key (the reconciler's, from the fields below). */
export interface SlurmJob extends Omit<RunIdentity, 'runKey'> {
  state: string;
  restarts: number;
  /** The run's SLUID (26.05: squeue/scontrol JSON step_id.sluid, scontrol text SLUID=); null before 25.11. */
  sluid: string | null;
  nodes: string[];
  /** GRES indices of gpus per node (gres_detail / GRES=...(IDX:...)). */
  gpuIdx: Record<string, number[]>;
  /** GRES indices per node that the job holds through a shard or MPS (shared with other jobs). */
  sharedIdx: Record<string, number[]>;
  exitCode: number | null;
}

type J = Record<string, unknown>;

/** A number in any squeue JSON shape: 5, "5", {set: true, number: 5}, {set: false} -> null. */
export function jnum(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
  if (v && typeof v === 'object') {
    const o = v as J;
    if (o.set === false || o.infinite === true) return null;
    return jnum(o.number);
  }
  return null;
}
const jstr = (v: unknown): string | null => (typeof v === 'string' && v !== '' && v !== '(null)' ? v : null);
/** The latest time a Date can hold (ms): a "time" beyond it is no time. */
const MAX_TIME_MS = 8.64e15;
const secs = (v: unknown): number | null => {
  const n = jnum(v);
  return n && n > 0 && n * 1000 <= MAX_TIME_MS ? n * 1000 : null;
};
/** Digits as a safe integer, or null (400 digits are no count and no uid). */
const int = (v: string | undefined | null): number | null => {
  const n = v ? Number(v) : NaN;
  return Number.isSafeInteger(n) ? n : null;
};

/** f(), its error prefixed with where the value came from (a hostlist error alone names no source). */
function named<T>(where: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`);
  }
}

/**
 * A time as Slurm prints it (2026-11-21T08:33:57, local time), in ms; null
 * for "Unknown", "None" and anything that is not a time (never NaN).
 */
export function slurmTime(v: string | null | undefined): number | null {
  if (!v || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(v)) return null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : null;
}

/**
 * "gpu:2(IDX:0-1)", "gpu:a100:2(IDX:0,2)" -> GPU indices. A shard or MPS
 * entry names the GPU it lives on the same way ("shard:1(IDX:0)",
 * "mps:50(IDX:0)"), or per GPU as "shard:8(-/5,5/5,3/5,0/5)" (23.11.2+:
 * position = GPU index, "-" = none). `shared` lists the GPUs held through a
 * shard or MPS, and only those: a job may hold one GPU whole and share another.
 */
export function parseGresDetail(detail: string): { idx: number[]; shared: number[] } {
  const out = { idx: [] as number[], shared: [] as number[] };
  for (const part of detail.split(/,(?=[a-z]+:)/i)) {
    const m = /^(gpu|shard|mps)(?::[^:(]+)?(?::\d+)?\(([^)]*)\)/i.exec(part.trim());
    if (!m) continue;
    const isShared = m[1]!.toLowerCase() !== 'gpu';
    const body = m[2]!;
    let idx: number[] = [];
    if (/^IDX:/i.test(body)) idx = expandIndexList(body.slice(4));
    else if (isShared) body.split(',').forEach((c, i) => c.trim() !== '-' && Number(c.split('/')[0]) > 0 && idx.push(i));
    for (const i of idx) if (!out.idx.includes(i)) out.idx.push(i);
    if (isShared) for (const i of idx) if (!out.shared.includes(i)) out.shared.push(i);
  }
  return out;
}

/**
 * job_state in any shape: "RUNNING" (v0.0.38/39), or from v0.0.40 a list with
 * the base state first and flags after it. A completing job reads
 * ["COMPLETED", "COMPLETING"] there: it still runs on its nodes until its
 * epilog ends, so COMPLETING wins over the base state.
 */
export function jobState(v: unknown): string {
  // strings only: String() of an object whose "toString" is a string throws (JSON can say {"toString": "x"})
  if (!Array.isArray(v)) return typeof v === 'string' ? v : '';
  const all = v.filter((x): x is string => typeof x === 'string');
  return all.includes('COMPLETING') ? 'COMPLETING' : (all[0] ?? '');
}

/** `squeue --json`: every job in the answer (callers filter by node and state). */
export function parseSqueueJson(text: string): SlurmJob[] {
  let j: J;
  try {
    j = JSON.parse(text) as J;
  } catch (e) {
    throw new Error(`squeue --json: not JSON (${(e as Error).message})`);
  }
  // With the controller down squeue --json exits 0 with an empty job list and an error entry:
  // trusting the list would close every binding on the node.
  if (!j || typeof j !== 'object' || Array.isArray(j)) throw new Error(`squeue --json: not an object: ${JSON.stringify(j).slice(0, 60)}`);
  if (Array.isArray(j.errors) && j.errors.length > 0) {
    const e = (j.errors[0] ?? {}) as J;
    throw new Error(
      `squeue --json: ` +
        `${[e.source, e.description ?? e.error].filter((x) => typeof x === 'string' && x).join(': ') || JSON.stringify(e).slice(0, 120)}`,
    );
  }
  if (!Array.isArray(j.jobs)) throw new Error('squeue --json: no "jobs" list');
  return (j.jobs as J[]).map((x, i) => {
    if (!x || typeof x !== 'object' || Array.isArray(x)) throw new Error(`squeue --json: jobs[${i}] is not an object`);
    const nodes = named(`squeue --json: jobs[${i}] nodes`, () => expandHostlist(jstr(x.nodes) ?? ''));
    const details = Array.isArray(x.gres_detail) ? (x.gres_detail as unknown[]).map((d) => (typeof d === 'string' ? d : '')) : [];
    const gpuIdx: Record<string, number[]> = {};
    const sharedIdx: Record<string, number[]> = {};
    // one gres_detail entry per allocated node, in node order
    details.forEach((d, i) => {
      const node = nodes[i];
      if (!node) return;
      const g = named(`squeue --json: jobs[${i}] gres_detail`, () => parseGresDetail(d));
      gpuIdx[node] = g.idx;
      if (g.shared.length) sharedIdx[node] = g.shared;
    });
    const state = jobState(x.job_state);
    const arrayJob = jnum(x.array_job_id);
    const het = jnum(x.het_job_id);
    const exit = x.exit_code as J | number | undefined;
    return {
      jobId: String(jnum(x.job_id) ?? ''),
      arrayJobId: arrayJob ? String(arrayJob) : null,
      arrayTaskId: jnum(x.array_task_id) !== null && arrayJob ? String(jnum(x.array_task_id)) : null,
      hetJobId: het ? String(het) : null,
      hetJobOffset: het ? String(jnum(x.het_job_offset) ?? '') || null : null,
      user: jstr(x.user_name),
      uid: jnum(x.user_id),
      account: jstr(x.account),
      partition: jstr(x.partition),
      qos: jstr(x.qos),
      name: jstr(x.name),
      cluster: jstr(x.cluster),
      state,
      startTime: secs(x.start_time),
      endTime: secs(x.end_time),
      restarts: jnum(x.restart_cnt) ?? 0,
      sluid: jstr((x.step_id as J | undefined)?.sluid) ?? jstr(x.sluid),
      nodes,
      gpuIdx,
      sharedIdx,
      exitCode: typeof exit === 'number' ? exit : exit && typeof exit === 'object' ? jnum((exit as J).return_code) : null,
    };
  });
}

/**
 * A record whose text a user's own text has made ambiguous: a job's name, comment, command, working
 * directory and output paths are printed raw (slurmctld takes any byte in them), so one holding
 * " UserId=root(0)", or a newline and a line of fields, or a blank line and a record, could
 * otherwise be read as the job's (or another job's) user, account, nodes or GPUs.
 */
export class AmbiguousJobRecord extends Error {}

/** Keys each record prints exactly once (slurm_sprint_job_info, 22.05 to 26.05): a record without one was cut short. */
const ONCE = ['UserId', 'JobState', 'StartTime', 'EndTime', 'Partition', 'NodeList'];

/**
 * `scontrol show job [-d]` text: blank-line separated records of Key=Value
 * tokens, each read only when nothing in it can be a user's text posing as
 * fields. In a record, every key read must be printed once, the per-node GRES
 * lines only where slurmctld prints them (right after JOB_GRES=, or after
 * NodeList= where there is no JOB_GRES line, and never without -d), the array
 * and het ids only before the name. Across records, a piece that does not
 * start a record, a record of a job `known` (squeue's ids: numbers, no one's
 * text) does not list, and a job's second record are a user's text after a
 * blank line: the records before them, and every record of that id, are not
 * read. A record not read is in `unreadable` (id -> why, no user text in it),
 * never in `jobs`. sluid: whether this Slurm prints SLUID= (25.11+), else it
 * is never read.
 */
export function parseScontrolRecords(
  text: string,
  o: { detail?: boolean; known?: ReadonlySet<string>; sluid?: boolean } = {},
): { jobs: SlurmJob[]; unreadable: Map<string, string> } {
  const unreadable = new Map<string, string>();
  const blame = (id: string | undefined, why: string) => {
    if (id !== undefined && !unreadable.has(id))
      unreadable.set(id, `scontrol show job ${id}: ${why} (a job name, comment or path holding a blank line?): the record is not read`);
  };
  const recs: { id: string; text: string; prev: string | undefined }[] = [];
  const at = new Map<string, number>();
  let prev: string | undefined;
  for (const piece of text
    .split(/\n\s*\n/)
    .map((r) => r.trim())
    .filter((r) => r !== '')) {
    const id = /^JobId=(\d{1,10})(?:\s|$)/.exec(piece)?.[1];
    // before the first record: scontrol's own words ("No jobs in the system")
    if (id === undefined) blame(prev, 'its record goes on after a blank line');
    else if (o.known && !o.known.has(id)) blame(prev, `a record of job ${id}, which squeue does not list, follows it`);
    else if (at.has(id)) {
      blame(id, 'two records of one job');
      blame(recs[at.get(id)!]!.prev, `a second record of job ${id} follows the first one after it`);
      blame(prev, `a second record of job ${id} follows it`);
    } else {
      at.set(id, recs.length);
      recs.push({ id, text: piece, prev });
      prev = id;
    }
  }
  const jobs: SlurmJob[] = [];
  for (const r of recs) {
    if (unreadable.has(r.id)) continue;
    try {
      jobs.push(scontrolRecord(r.id, r.text, o.detail ?? true, o.sluid ?? true));
    } catch (e) {
      // any record's error is its own (a forged NodeList of 10^8 nodes is a hostlist error): never the other jobs'
      unreadable.set(
        r.id,
        e instanceof AmbiguousJobRecord ? e.message : `scontrol show job ${r.id}: ${printable(clip((e as Error).message, 200))}`,
      );
    }
  }
  return { jobs, unreadable };
}

/** Every record of `scontrol show job -d` text (parseScontrolRecords), or AmbiguousJobRecord naming the first not read. */
export function parseScontrolJobs(text: string): SlurmJob[] {
  const { jobs, unreadable } = parseScontrolRecords(text);
  const why = unreadable.values().next();
  if (!why.done) throw new AmbiguousJobRecord(why.value);
  return jobs;
}

/** One record; AmbiguousJobRecord where a user's text may pose as its fields. */
function scontrolRecord(id: string, rec: string, detail: boolean, sluidPrinted: boolean): SlurmJob {
  const where = `scontrol show job ${id}`;
  const ambiguous = (why: string): never => {
    throw new AmbiguousJobRecord(`${where}: ${why} (a job name, comment or path holding a newline or Key= text?): the record is not read`);
  };
  const count = (key: string) => rec.match(new RegExp(`(?:^|\\s)${key}=`, 'g'))?.length ?? 0;
  for (const key of ONCE) if (count(key) !== 1) ambiguous(`${key}= is printed ${count(key)} times, once in a record`);
  const kv = (key: string): string | null => {
    const n = count(key);
    if (n > 1) ambiguous(`${key}= is printed ${n} times`);
    const m = new RegExp(`(?:^|\\s)${key}=(\\S*)`).exec(rec);
    return m ? jstr(m[1]) : null;
  };
  if (count('JobId') !== 1) ambiguous(`JobId= is printed ${count('JobId')} times`);
  // the array and het ids are printed before the name on its line (an absent one cannot be added by a name after it)
  const head = rec.slice(0, Math.max(0, rec.search(/\sJobName=/))) || rec.split('\n')[0]!;
  const headKv = (key: string): string | null => jstr(new RegExp(`\\s${key}=(\\S*)`).exec(head)?.[1]);
  const gpuIdx: Record<string, number[]> = {};
  const sharedIdx: Record<string, number[]> = {};
  // per-node lines: "Nodes=n[1-2] CPU_IDs=0-7 Mem=0 GRES=gpu:h100:2(IDX:0-1)"; before 19.05 "GRES_IDX="; only in the run of
  // lines slurmctld prints them in
  const lines = rec.split('\n');
  // without -d slurmctld prints no GRES detail: such a line is a user's
  if (!detail && lines.some((l) => /^\s*(?:JOB_GRES|Nodes)=/.test(l))) ambiguous('a GRES detail line in a record asked for without -d');
  const gresAt = lines.findIndex((l) => /^\s*JOB_GRES=/.test(l));
  if (count('JOB_GRES') > 1) ambiguous(`JOB_GRES= is printed ${count('JOB_GRES')} times`);
  const from = (gresAt >= 0 ? gresAt : lines.findIndex((l) => /^\s*NodeList=/.test(l))) + 1;
  let to = from;
  while (to < lines.length && /^\s*Nodes=/.test(lines[to]!)) to++;
  if (lines.some((l, i) => (i < from || i >= to) && /^\s*Nodes=\S+\s.*?\bGRES(?:_IDX)?=/.test(l)))
    ambiguous('a per-node GRES line is outside the lines that hold them');
  for (const m of lines
    .slice(from, to)
    .join('\n')
    .matchAll(/^\s*Nodes=(\S+)\s.*?\bGRES(?:_IDX)?=(\S+)/gm)) {
    const g = named(`${where} GRES`, () => parseGresDetail(m[2]!));
    for (const node of named(`${where} Nodes`, () => expandHostlist(m[1]!))) {
      gpuIdx[node] = [...(gpuIdx[node] ?? []), ...g.idx];
      if (g.shared.length) sharedIdx[node] = [...(sharedIdx[node] ?? []), ...g.shared];
    }
  }
  const user = /(?:^|\s)UserId=([^(\s]+)\((\d+)\)/.exec(rec);
  if (count('ExitCode') > 1) ambiguous(`ExitCode= is printed ${count('ExitCode')} times`);
  const exit = /(?:^|\s)ExitCode=(\d+):(\d+)/.exec(rec);
  return {
    jobId: kv('JobId') ?? '',
    arrayJobId: headKv('ArrayJobId'),
    arrayTaskId: headKv('ArrayTaskId'),
    hetJobId: headKv('HetJobId'),
    hetJobOffset: headKv('HetJobOffset'),
    user: user ? user[1]! : null,
    uid: user ? int(user[2]) : null,
    account: kv('Account'),
    partition: kv('Partition'),
    qos: kv('QOS'),
    name: kv('JobName'),
    cluster: null,
    state: kv('JobState') ?? '',
    startTime: slurmTime(kv('StartTime')),
    endTime: slurmTime(kv('EndTime')),
    restarts: int(kv('Restarts')) ?? 0,
    // printed with -d alone, on the line after the first, by 25.11 and later only: where the release prints none, a
    // name's newline could put one there
    sluid: detail && sluidPrinted && /^\s+SLUID=\S+\s*$/.test(lines[1] ?? '') ? kv('SLUID') : null,
    nodes: named(`${where} NodeList`, () => expandHostlist(kv('NodeList') ?? '')),
    gpuIdx,
    sharedIdx,
    exitCode: exit ? int(exit[1]) : null,
  };
}

export interface SacctRecord {
  jobIdRaw: string;
  jobId: string;
  state: string;
  exitCode: number | null;
  exitSignal: number | null;
  start: number | null;
  end: number | null;
}

export const SACCT_FIELDS = 'JobIDRaw,JobID,State,ExitCode,Start,End';

/**
 * `sacct -X -P -n -o JobIDRaw,JobID,State,ExitCode,Start,End`; with a header
 * line (no -n) the columns are found by name, in any order and number.
 */
export function parseSacct(text: string): SacctRecord[] {
  const lines = text.split('\n').filter((l) => l.trim());
  let cols = SACCT_FIELDS.split(',');
  if (lines[0]?.startsWith('JobIDRaw|') || lines[0]?.startsWith('JobID|')) cols = lines.shift()!.split('|');
  const at = (name: string) => {
    const i = cols.indexOf(name);
    if (i < 0) throw new Error(`sacct: no ${name} column`);
    return i;
  };
  const ix = { raw: at('JobIDRaw'), id: at('JobID'), state: at('State'), exit: at('ExitCode'), start: at('Start'), end: at('End') };
  return lines.map((l) => {
    const f = l.split('|');
    if (f.length < cols.length) throw new Error(`sacct: expected ${cols.length} fields, got ${f.length}: ${l.slice(0, 80)}`);
    const ec = /^(\d+):(\d+)$/.exec(f[ix.exit]!);
    // "CANCELLED by 0" -> CANCELLED
    return {
      jobIdRaw: f[ix.raw]!,
      jobId: f[ix.id]!,
      state: f[ix.state]!.split(' ')[0]!,
      exitCode: ec ? int(ec[1]) : null,
      exitSignal: ec ? int(ec[2]) : null,
      start: slurmTime(f[ix.start]),
      end: slurmTime(f[ix.end]),
    };
  });
}
