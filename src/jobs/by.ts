/**
 * `l9gpu jobs --by user|account|partition|name`: the listed jobs rolled up per
 * group, for "who wasted how many GPU-hours last week".
 *
 * Idle GPU-hours are the GPU-hours a job held and did not use: each GPU's
 * GPU-hours times (1 - its mean utilization over the job). A GPU never used
 * counts whole, one busy half the time counts half; a GPU without any
 * utilization reading counts none (nothing says it was idle). A group's mean
 * utilization is its jobs' means weighted by their GPU-hours, so that where
 * every GPU had readings, idle = GPU-hours x (1 - mean).
 *
 * Where GPUs have GPM, the same by SM activity (utilization counts a kernel
 * on one SM as busy): the GPU-hours GPM covered, those weighted by SM activity
 * and those idle by it (src/jobs/list.ts smGpuHours); null for a group none
 * of whose jobs had GPM.
 */
import type { JobListRow } from './list.js';

import type { GpuRow } from './report-model.js';
import { byText } from '../core/text-table.js';

export const GROUP_BY = ['user', 'account', 'partition', 'name'] as const;
export type GroupBy = (typeof GROUP_BY)[number];

export interface JobGroupRow {
  /** The user, account, partition or job name (a pod's workload); null: jobs without one. */
  group: string | null;
  jobs: number;
  gpu_hours: number;
  idle_gpu_hours: number;
  util_mean: number | null;
  gpm_gpu_hours: number | null;
  sm_gpu_hours: number | null;
  sm_idle_gpu_hours: number | null;
  /** The sum of the jobs' known energy; null: no job's is known. */
  energy_kwh: number | null;
  /** The sum of the jobs' costs; null: none has one. */
  cost: number | null;
  currency: string | null;
  co2e_kg: number | null;
}

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
const SM_HOURS = ['gpm_gpu_hours', 'sm_gpu_hours', 'sm_idle_gpu_hours'] as const;
type SmHours = Pick<JobGroupRow, (typeof SM_HOURS)[number]>;


/** One row per group, most idle GPU-hours first (then most GPU-hours, then by name). */
export function groupJobs(rows: readonly JobListRow[], by: GroupBy, currency: string | null): JobGroupRow[] {
  const acc = new Map<string | null, { jobs: number; gh: number; idle: number; utilGh: number; utilW: number; kwh: number | null; cost: number | null; co2e: number | null; gpm: SmHours }>();
  for (const r of rows) {
    const key = r[by];
    let a = acc.get(key);
    if (!a) acc.set(key, (a = { jobs: 0, gh: 0, idle: 0, utilGh: 0, utilW: 0, kwh: null, cost: null, co2e: null, gpm: { gpm_gpu_hours: null, sm_gpu_hours: null, sm_idle_gpu_hours: null } }));
    a.jobs++;
    a.gh += r.gpu_hours;
    a.idle += r.idle_gpu_hours;
    if (r.util_mean !== null) {
      a.utilGh += r.gpu_hours;
      a.utilW += r.gpu_hours * r.util_mean;
    }
    if (r.energy_kwh !== null) a.kwh = (a.kwh ?? 0) + r.energy_kwh;
    if (r.cost !== null) a.cost = (a.cost ?? 0) + r.cost;
    if (r.co2e_g !== null) a.co2e = (a.co2e ?? 0) + r.co2e_g;
    for (const k of SM_HOURS) if (r[k] !== null) a.gpm[k] = (a.gpm[k] ?? 0) + r[k];
  }
  return [...acc]
    .map(([group, a]) => ({
      group,
      jobs: a.jobs,
      gpu_hours: r6(a.gh),
      idle_gpu_hours: r6(a.idle),
      util_mean: a.utilGh > 0 ? r6(a.utilW / a.utilGh) : null,
      ...(Object.fromEntries(SM_HOURS.map((k) => [k, a.gpm[k] === null ? null : r6(a.gpm[k])])) as SmHours),
      energy_kwh: a.kwh === null ? null : r6(a.kwh),
      // the sum of the listed costs, to the cent: the roll-up adds up to the list
      cost: a.cost === null ? null : Math.round(a.cost * 100) / 100,
      currency: a.cost === null ? null : currency,
      co2e_kg: a.co2e === null ? null : r6(a.co2e / 1000),
    }))
    .sort((x, y) => y.idle_gpu_hours - x.idle_gpu_hours || y.gpu_hours - x.gpu_hours || byText(x.group ?? '', y.group ?? ''));
}

/** The rows as --json and --csv print them: the group under its dimension's name ("user": "alice"). */
export function keyedGroups(by: GroupBy, rows: readonly JobGroupRow[]): Record<string, unknown>[] {
  return rows.map(({ group, ...rest }) => ({ [by]: group, ...rest }));
}
