/**
 * `jobs --by` over this node's store, folded in SQL: one GROUP BY over the
 * figures job_gpu keeps in columns (never the rollup state's JSON, and never
 * the list of jobs) gives each job's sums, and each job's sums, rounded as the
 * list rounds them, go into its group (by.ts GroupFold) as they come. What is
 * held is one sum per group: a user's 500,000 jobs cost what 500 do.
 *
 * Each figure is the list's (list.ts listJobs, report.ts totalsOf) worked out
 * over the same GPUs with the same operations: a job's GPUs are those bound to
 * it that have figures; the costs are gpuCost's, per GPU, called from SQL.
 * Only the order of additions differs (SQLite's SUM, the store's order of the
 * jobs): a last-bit difference, below the sixth decimal the figures keep.
 *
 * The query is the tables' owner's (src/store/rollups.ts runFigures); the
 * filter (list.ts listWhere), the prices it calls and the fold are here.
 */
import type { Db } from '../store/open.js';
import { runFigures } from '../store/rollups.js';
import { gpuCost, type Prices } from '../figures/prices.js';
import { GROUP_BY, GroupFold, type GroupBy, type JobGroupRow } from './by.js';
import { listWhere, type ListFilter } from './list.js';
import { MAX_GROUPS, tooManyGroups } from './question-bounds.js';

/** What src/figures/prices.ts counts a kWh in. */
const J_PER_KWH = 3.6e6;

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * The groups of the jobs that match `f` (its limit and offset are not the
 * fold's: every job that matches adds up). Past `maxGroups` groups it stops
 * with QuestionTooLarge.
 */
export function groupJobsInStore(
  db: Db,
  f: Omit<ListFilter, 'limit' | 'offset'>,
  by: GroupBy,
  node: string,
  prices: Prices | null,
  maxGroups = MAX_GROUPS,
): JobGroupRow[] {
  if (!GROUP_BY.includes(by)) throw new Error(`by: ${String(by)} is not one of ${GROUP_BY.join(', ')}`);
  if (prices) {
    // per GPU, as jobCost adds them: each at its own model's and its job's partition's price on this node
    const cost = (model: string | null, partition: string | null, gh: number | null, energyJ: number | null) =>
      gh === null ? null : gpuCost(prices, { model, partition, node }, gh, energyJ ?? 0);
    db.function(
      'l9gpu_gpu_cost',
      { deterministic: true },
      (m, p, gh, e) => cost(m as string | null, p as string | null, gh as number | null, e as number | null)?.cost ?? null,
    );
    db.function(
      'l9gpu_gpu_co2e',
      { deterministic: true },
      (m, p, gh, e) => cost(m as string | null, p as string | null, gh as number | null, e as number | null)?.co2eG ?? null,
    );
  }
  const fold = new GroupFold();
  // the query is the rollups' owner's (src/store/rollups.ts runFigures): one row per run, as it comes
  for (const [grp, gh, idle, utilW, utilS, gpmGh, smGh, energyJ, known, cost, co2e] of runFigures(db, by, prices !== null, listWhere(f))) {
    fold.add(grp, {
      gpu_hours: r6(gh ?? 0),
      idle_gpu_hours: r6(idle ?? 0),
      util_mean: utilS !== null && utilS > 0 ? r6(utilW! / utilS) : null,
      gpm_gpu_hours: gpmGh === null ? null : r6(gpmGh),
      sm_gpu_hours: gpmGh === null ? null : r6(smGh!),
      sm_idle_gpu_hours: gpmGh === null ? null : r6(gpmGh - smGh!),
      energy_kwh: known ? r6((energyJ ?? 0) / J_PER_KWH) : null,
      // a job's cost to the cent and CO2e to the milligram, as jobCost rounds them
      cost: cost === null ? null : Math.round(cost * 100) / 100,
      co2e_g: co2e === null ? null : Math.round(co2e * 1000) / 1000,
    });
    if (fold.groups > maxGroups) throw tooManyGroups(by, maxGroups);
  }
  return fold.rows(prices?.currency ?? null);
}
