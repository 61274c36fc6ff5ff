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

/** What the roll-up adds up of one job: its figures as the list gives them. */
export type JobFigures = Pick<
  JobListRow,
  'gpu_hours' | 'idle_gpu_hours' | 'util_mean' | (typeof SM_HOURS)[number] | 'energy_kwh' | 'cost' | 'co2e_g'
>;

/** The sums of a group, each Neumaier's pair (the sum and what it lost), two by two. */
const SUMS = ['gh', 'idle', 'utilGh', 'utilW', 'kwh', 'cost', 'co2e', ...SM_HOURS] as const;
type Sum = (typeof SUMS)[number];
const AT = Object.fromEntries(SUMS.map((k, i) => [k, i])) as Record<Sum, number>;

interface GroupSums {
  jobs: number;
  /** The sums that had a value added (bit AT[k]): the others are null (no job's energy, cost, GPM known). */
  seen: number;
  v: Float64Array;
}

/** x into sum k, compensated (Neumaier): a group of 500,000 jobs adds up to its jobs' figures, not to the rounding of half a million
 * additions. */
function addTo(a: GroupSums, k: Sum, x: number): void {
  const i = AT[k] * 2;
  const s = a.v[i]!;
  const t = s + x;
  a.v[i + 1]! += Math.abs(s) >= Math.abs(x) ? s - t + x : x - t + s;
  a.v[i] = t;
  a.seen |= 1 << AT[k];
}

const sumOf = (a: GroupSums, k: Sum): number | null => (a.seen & (1 << AT[k]) ? a.v[AT[k] * 2]! + a.v[AT[k] * 2 + 1]! : null);

/**
 * The roll-up a job at a time: what it holds is one sum per group, never the
 * jobs, so that a fold streamed from the store (by-store.ts) is bounded by
 * its groups. groupJobs is the same fold over a list already made.
 */
export class GroupFold {
  private readonly acc = new Map<string | null, GroupSums>();

  get groups(): number {
    return this.acc.size;
  }

  add(key: string | null, r: JobFigures): void {
    let a = this.acc.get(key);
    if (!a) this.acc.set(key, (a = { jobs: 0, seen: 0, v: new Float64Array(SUMS.length * 2) }));
    a.jobs++;
    addTo(a, 'gh', r.gpu_hours);
    addTo(a, 'idle', r.idle_gpu_hours);
    if (r.util_mean !== null) {
      addTo(a, 'utilGh', r.gpu_hours);
      addTo(a, 'utilW', r.gpu_hours * r.util_mean);
    }
    if (r.energy_kwh !== null) addTo(a, 'kwh', r.energy_kwh);
    if (r.cost !== null) addTo(a, 'cost', r.cost);
    if (r.co2e_g !== null) addTo(a, 'co2e', r.co2e_g);
    for (const k of SM_HOURS) if (r[k] !== null) addTo(a, k, r[k]);
  }

  /** One row per group, most idle GPU-hours first (then most GPU-hours, then by name). */
  rows(currency: string | null): JobGroupRow[] {
    const r6n = (x: number | null) => (x === null ? null : r6(x));
    return [...this.acc]
      .map(([group, a]) => {
        const utilGh = sumOf(a, 'utilGh') ?? 0;
        const cost = sumOf(a, 'cost');
        const co2e = sumOf(a, 'co2e');
        return {
          group,
          jobs: a.jobs,
          gpu_hours: r6(sumOf(a, 'gh') ?? 0),
          idle_gpu_hours: r6(sumOf(a, 'idle') ?? 0),
          util_mean: utilGh > 0 ? r6(sumOf(a, 'utilW')! / utilGh) : null,
          ...(Object.fromEntries(SM_HOURS.map((k) => [k, r6n(sumOf(a, k))])) as SmHours),
          energy_kwh: r6n(sumOf(a, 'kwh')),
          // the sum of the listed costs, to the cent: the roll-up adds up to the list
          cost: cost === null ? null : Math.round(cost * 100) / 100,
          currency: cost === null ? null : currency,
          co2e_kg: co2e === null ? null : r6(co2e / 1000),
        };
      })
      .sort((x, y) => y.idle_gpu_hours - x.idle_gpu_hours || y.gpu_hours - x.gpu_hours || byText(x.group ?? '', y.group ?? ''));
  }
}

/** One row per group, most idle GPU-hours first (then most GPU-hours, then by name). */
export function groupJobs(rows: readonly (JobFigures & Pick<JobListRow, GroupBy>)[], by: GroupBy, currency: string | null): JobGroupRow[] {
  const fold = new GroupFold();
  for (const r of rows) fold.add(r[by], r);
  return fold.rows(currency);
}

/** The rows as --json and --csv print them: the group under its dimension's name ("user": "alice"). */
export function keyedGroups(by: GroupBy, rows: readonly JobGroupRow[]): Record<string, unknown>[] {
  return rows.map(({ group, ...rest }) => ({ [by]: group, ...rest }));
}
