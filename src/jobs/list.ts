/** `l9gpu jobs`: one row per job from the store, filtered in SQL, newest first. */
import type { Db } from '../store/open.js';
import { listedRuns } from '../store/jobs.js';
import { gpusOfRuns } from '../store/rollups.js';
import { figures, loadRollup } from '../figures/rollup.js';
import { displayId, headerOf, jobState, totalsOf } from './report.js';
import type { Prices } from '../figures/prices.js';
import type { GpuRow, JobHeader } from './report-model.js';
import { jobNotes } from './notes.js';
import { wasteGpusOf, type WasteInput } from './waste.js';

export interface ListFilter {
  user?: string | null;
  account?: string | null;
  partition?: string | null;
  state: 'running' | 'completed' | 'all';
  since?: number | null;
  limit: number;
  /** Rows of the ordered list skipped first (a page past the first). */
  offset?: number;
}

/** A row of `l9gpu jobs`: the run as the report's header names it (name: a pod's workload, "deployment/llama-ft"), and its totals. */
export interface JobListRow extends Pick<JobHeader, 'id' | 'name' | 'user' | 'account' | 'partition' | 'state' | 'start' | 'elapsed_s'> {
  /** Present for runs of another provider than Slurm: "kubernetes" for a pod. */
  scheduler?: string;
  gpus: number;
  gpu_hours: number;
  /** GPU-hours not used: each GPU's GPU-hours x (1 - its mean utilization) (src/jobs/by.ts). */
  idle_gpu_hours: number;
  util_mean: number | null;
  /** GPU-hours GPM covered, and of them those weighted by SM activity and those idle by it (smGpuHours); null without GPM. */
  gpm_gpu_hours: number | null;
  sm_gpu_hours: number | null;
  sm_idle_gpu_hours: number | null;
  mem_peak_bytes: number | null;
  /** null: unknown (no GPU of the job measured it). */
  energy_kwh: number | null;
  cost: number | null;
  co2e_g: number | null;
  problems: string[];
}

/** A run of the list with its GPUs' report rows and how many GPUs it was bound to. */
interface ListedRun {
  job: Parameters<typeof headerOf>[0];
  gpus: GpuRow[];
  bound: number;
}

/** The filter's WHERE clause over `jobs j` ('' for none) and its arguments: the list's and jobs --by's (by-store.ts). */
export function listWhere(f: Omit<ListFilter, 'limit' | 'offset'>): { sql: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (clause: string, ...values: unknown[]): void => {
    where.push(clause);
    args.push(...values);
  };
  if (f.user) add('j.user = ?', f.user);
  if (f.account) add('j.account = ?', f.account);
  if (f.partition) add('j.partition = ?', f.partition);
  if (f.state === 'running') add('j.end_time IS NULL');
  if (f.state === 'completed') add('j.end_time IS NOT NULL');
  if (f.since) add('j.start_time >= ?', f.since);
  return { sql: where.length ? `WHERE ${where.join(' AND ')}` : '', args };
}

/** The order of the list, newest first; job_id, run_key break ties in start time: pages of the same list neither repeat nor skip a row. */
export const LIST_ORDER = 'j.start_time DESC, j.job_id DESC, j.run_key DESC';

/** The runs that match, newest first, each with its GPUs' figures (the rows of list, the inputs of --waste). */
function listRuns(db: Db, f: ListFilter, node: string): ListedRun[] {
  const jobs = listedRuns(db, listWhere(f), LIST_ORDER, f.limit, f.offset ?? 0) as Parameters<typeof headerOf>[0][];
  if (jobs.length === 0) return [];
  // the GPUs of the listed runs only: notes need per-GPU figures
  const gpuRows = gpusOfRuns(
    db,
    jobs.map((j) => [j.job_id, j.run_key] as const),
  );
  const byRun = new Map<string, GpuRow[]>();
  for (const r of gpuRows) {
    const f = r.state ? figures(loadRollup(r.state)) : null;
    if (!f) continue;
    const k = `${r.job_id}/${r.run_key}`;
    if (!byRun.has(k)) byRun.set(k, []);
    byRun.get(k)!.push({ node, uuid: r.gpu_uuid, model: r.model, index: null, shared: !!r.shared || f.shareMean < 1, figures: f });
  }
  const bound = new Map<string, number>();
  for (const r of gpuRows) bound.set(`${r.job_id}/${r.run_key}`, (bound.get(`${r.job_id}/${r.run_key}`) ?? 0) + 1);
  return jobs.map((job) => ({
    job,
    gpus: byRun.get(`${job.job_id}/${job.run_key}`) ?? [],
    bound: bound.get(`${job.job_id}/${job.run_key}`) ?? 0,
  }));
}

export function listJobs(db: Db, f: ListFilter, node: string, prices: Prices | null, now = Date.now()): JobListRow[] {
  return listRuns(db, f, node).map(({ job: j, gpus, bound }) => {
    const totals = totalsOf(gpus, prices, j.partition);
    const header = headerOf(j, 1, [node], now);
    return {
      id: displayId(j.job_id, j.array_job_id, j.array_task_id),
      name: j.name,
      ...(j.scheduler && j.scheduler !== 'slurm' ? { scheduler: j.scheduler } : {}),
      user: j.user,
      account: j.account,
      partition: j.partition,
      state: jobState(j),
      start: header.start,
      elapsed_s: header.elapsed_s,
      gpus: bound,
      gpu_hours: totals.gpu_hours,
      idle_gpu_hours: idleGpuHours(gpus),
      util_mean: totals.util_mean,
      ...smGpuHours(gpus),
      mem_peak_bytes: totals.mem_peak_bytes,
      energy_kwh: totals.energy_kwh,
      cost: totals.cost,
      co2e_g: totals.co2e_g,
      problems: jobNotes(header, gpus, totals)
        .filter((n) => n.level === 'warn')
        .map((n) => n.code),
    };
  });
}

/** The inputs of `jobs --waste` (src/jobs/waste.ts) for the runs that match; their time limits are Slurm accounting's to fill. */
export function listWasteInputs(db: Db, f: ListFilter, node: string, now = Date.now()): WasteInput[] {
  return listRuns(db, f, node).map(({ job: j, gpus }) => {
    const header = headerOf(j, 1, [node], now);
    return {
      id: header.id,
      user: j.user,
      account: j.account,
      partition: j.partition,
      state: header.state,
      start: header.start,
      elapsed_s: header.elapsed_s,
      time_limit_s: null,
      gpus: wasteGpusOf(gpus),
    };
  });
}

/** A job's idle GPU-hours: each GPU's GPU-hours times (1 - its mean utilization), a GPU without readings counting none (what jobs --by
 * sums). */
export function idleGpuHours(gpus: readonly GpuRow[]): number {
  let idle = 0;
  for (const g of gpus) if (g.figures.utilMean !== null) idle += g.figures.gpuHours * (1 - g.figures.utilMean);
  return Math.round(idle * 1e6) / 1e6;
}

/**
 * A job's GPU-hours by SM activity (GPM), what jobs --by sums: of each GPU's
 * GPU-hours the part GPM covered (its GPM seconds of its sampled seconds),
 * that times its mean SM activity (SM-weighted), and that times the rest
 * (idle by SM activity). All null when no GPU of the job has GPM: nothing
 * says how its SMs were used.
 */
export function smGpuHours(gpus: readonly GpuRow[]): Pick<JobListRow, 'gpm_gpu_hours' | 'sm_gpu_hours' | 'sm_idle_gpu_hours'> {
  let gh = 0;
  let sm = 0;
  let any = false;
  for (const g of gpus) {
    const f = g.figures;
    if (f.gpm?.smActive === null || f.gpm?.smActive === undefined || f.seconds <= 0) continue;
    any = true;
    const covered = f.gpuHours * Math.min(1, f.gpm.seconds / f.seconds);
    gh += covered;
    sm += covered * f.gpm.smActive;
  }
  const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
  return any
    ? { gpm_gpu_hours: r6(gh), sm_gpu_hours: r6(sm), sm_idle_gpu_hours: r6(gh - sm) }
    : { gpm_gpu_hours: null, sm_gpu_hours: null, sm_idle_gpu_hours: null };
}
