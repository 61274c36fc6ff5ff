/**
 * `l9gpu jobs --waste`: the jobs that wasted GPU-hours, in the classes of
 * Princeton's Job Defense Shield (allocated GPUs never used, low activity,
 * a job that would fit a MIG slice or fewer GPUs, a time limit far above
 * the run time), each with the GPU-hours it wasted. One fold (wasteRows)
 * over compact per-job inputs, built from this node's store (wasteInputOf)
 * or from the cluster's job-end summary metrics through PromQL
 * (src/jobs/waste-promql.ts): the two agree by construction. The rules are
 * written in docs/jobs.md.
 */
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { UNUSED_UTIL } from '../figures/rollup.js';
import { JOBS_SECTION } from './config.js';
import { clip, printable } from '../core/printable.js';
import type { GpuRow, JobHeader } from './report-model.js';

/** What the fold needs of one GPU of a job. */
export interface WasteGpu {
  node: string;
  uuid: string;
  gpu_hours: number;
  util_mean: number | null;
  /** Mean SM activity (GPM); null without GPM. */
  sm_active: number | null;
  mem_peak_bytes: number | null;
  mem_total_bytes: number | null;
}

/** A job run as the rows name it: the report header's fields. */
type WasteJob = Pick<JobHeader, 'id' | 'user' | 'account' | 'partition' | 'state' | 'start' | 'elapsed_s'>;

/** What the fold needs of one job run. */
export interface WasteInput extends WasteJob {
  /** From Slurm accounting where it answers; null: unknown (no time-limit class). */
  time_limit_s: number | null;
  gpus: WasteGpu[];
}

export const WASTE_CLASSES = ['unused-gpus', 'low-activity', 'fewer-gpus', 'mig-slice', 'time-limit'] as const;
export type WasteClass = (typeof WASTE_CLASSES)[number];

export interface WasteRow extends WasteJob {
  gpus: number;
  gpu_hours: number;
  class: WasteClass;
  wasted_gpu_hours: number;
  /** What the class saw, for people. */
  detail: string;
}

export interface WasteThresholds {
  /** Mean activity (SM activity, else utilization) of the used GPUs below this: low-activity. */
  lowActivity: number;
  /** Time limit at least this many times the run time: time-limit. */
  timeLimitFactor: number;
}

export function wasteThresholds(cfg: Config): WasteThresholds {
  const j = readSection(cfg, JOBS_SECTION);
  return { lowActivity: j.waste_low_activity, timeLimitFactor: j.waste_time_limit_factor };
}

/** The smallest MIG slice of an H100/A100: 1 of 7 compute slices, 1 of 8 memory slices (1g.10gb of 80 GB, 1g.5gb of 40 GB). */
const MIG_SMS = 1 / 7;
const MIG_MEMORY = 1 / 8;
/** A limit less than this above the run time is not worth a row (the scheduler's granularity). */
const MIN_SPARE_LIMIT_S = 3600;

const r4 = (x: number) => Math.round(x * 1e4) / 1e4;
const pct = (x: number) => `${Math.round(x * 100)}%`;
const GiB = 1024 ** 3;

/** A GPU's activity: SM activity where it has GPM, else its utilization. */
const activity = (g: WasteGpu): number | null => g.sm_active ?? g.util_mean;
const unused = (g: WasteGpu): boolean =>
  g.util_mean !== null && g.util_mean < UNUSED_UTIL && (g.sm_active === null || g.sm_active < UNUSED_UTIL);

/** A job's wasted GPU-hours by class (a job may be in several: their GPU-hours overlap, they are not to be added up). */
export function wasteOf(j: WasteInput, t: WasteThresholds): WasteRow[] {
  const gh = j.gpus.reduce((s, g) => s + g.gpu_hours, 0);
  const row = (c: WasteClass, wasted: number, detail: string): WasteRow => ({
    id: j.id,
    user: j.user,
    account: j.account,
    partition: j.partition,
    state: j.state,
    start: j.start,
    elapsed_s: j.elapsed_s,
    gpus: j.gpus.length,
    gpu_hours: r4(gh),
    class: c,
    wasted_gpu_hours: r4(wasted),
    detail,
  });
  const out: WasteRow[] = [];
  const idle = j.gpus.filter(unused);
  if (idle.length)
    out.push(
      row(
        'unused-gpus',
        idle.reduce((s, g) => s + g.gpu_hours, 0),
        `${idle.length} of ${j.gpus.length} GPU(s) never used (utilization under ${pct(UNUSED_UTIL)})`,
      ),
    );
  const used = j.gpus.filter((g) => !unused(g) && activity(g) !== null);
  const usedGh = used.reduce((s, g) => s + g.gpu_hours, 0);
  if (used.length && usedGh > 0) {
    const act = used.reduce((s, g) => s + activity(g)! * g.gpu_hours, 0) / usedGh;
    const by = used.every((g) => g.sm_active !== null)
      ? 'SM activity'
      : used.some((g) => g.sm_active !== null)
        ? 'SM activity (utilization where no GPM)'
        : 'utilization';
    if (act < t.lowActivity)
      out.push(row('low-activity', usedGh * (1 - act), `${by} ${pct(act)} on the GPUs it used (under ${pct(t.lowActivity)})`));
    // the GPUs the work would fit: its activities added up, and its memory over the smallest GPU's
    const totals = used.filter((g) => g.mem_total_bytes);
    const memNeed =
      totals.length === used.length && used.every((g) => g.mem_peak_bytes !== null)
        ? used.reduce((s, g) => s + g.mem_peak_bytes!, 0) / Math.min(...used.map((g) => g.mem_total_bytes!))
        : Infinity;
    const actNeed = used.reduce((s, g) => s + activity(g)!, 0);
    // activities are sums of rounded means (0.1 x 3 is 0.30000000000000004): a hair over a whole GPU is that GPU; bytes are exact
    const need = Math.max(1, Math.ceil(actNeed - 1e-9), Math.ceil(memNeed));
    if (used.length > 1 && need < used.length) {
      out.push(
        row(
          'fewer-gpus',
          (usedGh / used.length) * (used.length - need),
          `${used.length} GPUs used, ${need} would do (activity adds up to ${actNeed.toFixed(2)} GPUs, memory to ${memNeed.toFixed(2)})`,
        ),
      );
    }
    const g = used[0]!;
    if (
      used.length === 1 &&
      !g.uuid.startsWith('MIG-') &&
      activity(g)! <= MIG_SMS &&
      g.mem_peak_bytes !== null &&
      g.mem_total_bytes &&
      g.mem_peak_bytes <= g.mem_total_bytes * MIG_MEMORY
    ) {
      out.push(
        row(
          'mig-slice',
          g.gpu_hours * (1 - MIG_SMS),
          `${by} ${pct(activity(g)!)} and ${(g.mem_peak_bytes / GiB).toFixed(1)} GiB peak: the ` +
            `smallest MIG slice (1/7 of the SMs, 1/8 of the memory) would do`,
        ),
      );
    }
  }
  if (
    j.time_limit_s !== null &&
    j.elapsed_s !== null &&
    j.elapsed_s > 0 &&
    j.state !== 'RUNNING' &&
    j.time_limit_s >= t.timeLimitFactor * j.elapsed_s &&
    j.time_limit_s - j.elapsed_s >= MIN_SPARE_LIMIT_S
  ) {
    // the GPU-hours the scheduler kept for the job past its end: backfill could not place other jobs in them
    out.push(
      row(
        'time-limit',
        (j.gpus.length * (j.time_limit_s - j.elapsed_s)) / 3600,
        `ran ${(j.elapsed_s / 3600).toFixed(1)} h of a ${(j.time_limit_s / 3600).toFixed(1)} h limit`,
      ),
    );
  }
  return out;
}

/** Every job's rows, most GPU-hours wasted first (then by job id and class). */
export function wasteRows(jobs: readonly WasteInput[], t: WasteThresholds): WasteRow[] {
  return jobs
    .flatMap((j) => wasteOf(j, t))
    .sort(
      (a, b) =>
        b.wasted_gpu_hours - a.wasted_gpu_hours ||
        a.id.localeCompare(b.id, 'en', { numeric: true }) ||
        WASTE_CLASSES.indexOf(a.class) - WASTE_CLASSES.indexOf(b.class),
    );
}

/** A job's input from its report rows (the store's, or any report's). */
export function wasteGpusOf(gpus: readonly GpuRow[]): WasteGpu[] {
  return gpus.map((g) => ({
    node: g.node,
    uuid: g.uuid,
    gpu_hours: g.figures.gpuHours,
    util_mean: g.figures.utilMean,
    sm_active: g.figures.gpm?.smActive ?? null,
    mem_peak_bytes: g.figures.memUsedMax,
    mem_total_bytes: g.figures.memTotal,
  }));
}

/**
 * The lines saying which jobs got no time-limit class, one per reason, five
 * ids each at most. An id from `--source promql` is a metric label, anyone's
 * text: shown printable and short, as every other place shows it.
 */
export function timeLimitNotes(unread: ReadonlyMap<string, readonly string[]>): string[] {
  return [...unread].map(
    ([why, ids]) =>
      `l9gpu: no time-limit class for job(s) ${ids
        .slice(0, 5)
        .map((id) => printable(clip(id, 40)))
        .join(', ')}${ids.length > 5 ? ` and ${ids.length - 5} more` : ''}: ${printable(clip(why.replace(/\s+/g, ' ').trim(), 300))}\n`,
  );
}
