/** What both `l9gpu jobs` commands need: the configuration, the viewer, the store's answers, and --since. */
import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolveAgentAttribution } from '../../daemon/schema.js';
import type { Config } from '../core/config/load.js';
import { loadCliConfig } from './config.js';
import { AccessDenied, CliError } from './errors.js';
import { openStoreReadOnly, storePath } from '../store/open.js';
import type { Db } from '../store/open.js';
import { viewer, type Viewer } from '../jobs/access.js';
import {
  answerJobs,
  type JobsAnswer,
  type JobsRequest,
  type ListAnswer,
  type ListRequest,
  type Refusal,
  type ShowAnswer,
} from '../jobs/api.js';
import type { Prices } from '../figures/prices.js';
import type { JobReport } from '../jobs/report-model.js';
import { getMeta } from '../store/meta.js';
import { LEARNED_NODE_KEY } from '../../slurm/node-name.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { JOBS_SECTION } from '../jobs/config.js';

export interface JobsContext {
  cfg: Config;
  viewer: Viewer;
  stateDir: string;
}

export function jobsContext(configPath: string | undefined): JobsContext {
  const cfg = loadCliConfig(configPath);
  return { cfg, viewer: viewer(trustedAdminGroup(cfg)), stateDir: readSection(cfg, DAEMON_SECTION).state_dir };
}

/**
 * [jobs] admin_group grants seeing everyone's jobs: for a user, it counts
 * only from a file root owns and nobody else may write (the site's config),
 * never from their own --config, L9GPU_CONFIG file or a flag.
 */
export function trustedAdminGroup(cfg: Config, uid = process.getuid?.()): string | null {
  const group = readSection(cfg, JOBS_SECTION).admin_group;
  if (!group || uid === 0) return group;
  if (cfg.sourceOf('jobs', 'admin_group').source !== 'file' || !cfg.file) return null;
  try {
    const st = statSync(cfg.file);
    return st.uid === 0 && (st.mode & 0o022) === 0 ? group : null;
  } catch {
    return null;
  }
}

/** The node's store, and the node's name in the scheduler as the provider learned it there. */
export function openJobsStore(ctx: JobsContext): { db: Db; node: string } {
  let db: Db;
  try {
    db = openStoreReadOnly(ctx.stateDir);
  } catch (e) {
    throw new CliError(`cannot read the job store ${storePath(ctx.stateDir)}: ${(e as Error).message}`, 1);
  }
  // no provider here (attribution none, or no slurm.conf on this machine): the name the hooks recorded is still the node's in Slurm
  const node =
    resolveAgentAttribution(ctx.cfg).manifest?.nodeName(ctx.cfg, process.env, db) ??
    getMeta(db, LEARNED_NODE_KEY) ??
    hostname().split('.')[0]!;
  return { db, node };
}

/** This node's jobs as a list (every page of it), under the access rule of the store (src/jobs/api.ts). */
export async function askList(ctx: JobsContext, req: ListRequest, prices: Prices): Promise<ListAnswer> {
  let a = await ask(ctx, req, prices);
  // the daemon answers a long list a page at a time: the user still gets all of it
  while (a.ok && a.op === 'list' && a.next !== undefined) {
    const more = await ask(ctx, { ...req, offset: a.next }, prices);
    if (!more.ok || more.op !== 'list') {
      a = more;
      break;
    }
    a = {
      ...more,
      rows: [...a.rows, ...more.rows],
      ...(a.groups ? { groups: [...a.groups, ...(more.groups ?? [])] } : {}),
      ...(a.waste ? { waste: [...a.waste, ...(more.waste ?? [])] } : {}),
    };
  }
  return answered(a) as ListAnswer;
}

/** One job's report from this node's store, under the store's access rule. */
export async function askShow(ctx: JobsContext, jobId: string, prices: Prices): Promise<JobReport> {
  return (answered(await ask(ctx, { op: 'show', jobId }, prices)) as ShowAnswer).report;
}

function answered(a: JobsAnswer): Exclude<JobsAnswer, Refusal> {
  if (!a.ok) throw a.denied ? new AccessDenied(a.error) : new CliError(a.error, a.code);
  return a;
}

/**
 * A question about this node's jobs: root reads the store; anyone else asks
 * the daemon, which answers under the same rule for the uid the kernel
 * reports (the store is root's alone) and with its own prices.
 */
async function ask(ctx: JobsContext, req: JobsRequest, prices: Prices): Promise<JobsAnswer> {
  if (process.getuid?.() !== 0) return askDaemon(ctx, req);
  const { db, node } = openJobsStore(ctx);
  try {
    return answerJobs(db, node, prices, ctx.viewer, req);
  } finally {
    db.close();
  }
}

async function askDaemon(ctx: JobsContext, req: JobsRequest): Promise<JobsAnswer> {
  // the socket's modules (node:net and the streams) only for a user's question: root's reads the store
  const [{ askJobsDaemon }, { jobsSocketPath }] = await Promise.all([import('../jobs/client.js'), import('../jobs/server.js')]);
  try {
    return await askJobsDaemon(jobsSocketPath(ctx.stateDir), req);
  } catch (e) {
    throw new CliError(`${(e as Error).message}; the job store is readable by root only, users' questions go through the daemon`, 1);
  }
}

/** "2026-11-01", "2026-11-01T08:00", "24h", "7d", "90m" -> ms since the epoch. */
export function parseSince(s: string, now = Date.now()): number {
  const rel = /^(\d+(?:\.\d+)?)\s*(m|h|d|w)$/i.exec(s.trim());
  if (rel)
    return (
      now - Number(rel[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[rel[2]!.toLowerCase() as 'm' | 'h' | 'd' | 'w']
    );
  if (/^\d{4}-\d{2}-\d{2}/.test(s)) {
    const t = Date.parse(s.length === 10 ? `${s}T00:00:00` : s);
    if (!Number.isNaN(t)) return t;
  }
  throw new CliError(`--since: "${s}" is not a time (examples: 2026-11-01, 2026-11-01T08:00, 24h, 7d)`, 2);
}
