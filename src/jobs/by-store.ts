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
 */
import type { Db } from '../store/open.js';
import { gpuCost, type Prices } from '../figures/prices.js';
import { GROUP_BY, GroupFold, type GroupBy, type JobGroupRow } from './by.js';
import { listWhere, type ListFilter } from './list.js';
import { MAX_GROUPS, tooManyGroups } from './question-bounds.js';

/** What src/figures/prices.ts counts a kWh in. */
const J_PER_KWH = 3.6e6;

/**
 * One row per job run: its group, then its GPUs' sums as totalsOf,
 * idleGpuHours and smGpuHours (list.ts) make them. known: whether any GPU's
 * energy was measured (its figures' energySource is not 'none'), asked of the
 * state only where none was counted (a counter read once is a known 0 J).
 * Grouped by start time and rowid: so, SQLite takes each job's rows as they
 * come, whichever index of jobs the filter uses (by rowid alone it sorts them
 * all when the filter uses jobs_user_start: EXPLAIN QUERY PLAN says "USE TEMP
 * B-TREE FOR GROUP BY").
 */
const figuresSql = (by: GroupBy, priced: boolean) => `SELECT j.${by} AS grp,
    SUM(g.gpu_hours) AS gh,
    SUM(CASE WHEN g.util_mean IS NOT NULL THEN g.gpu_hours * (1 - g.util_mean) END) AS idle,
    SUM(CASE WHEN g.util_mean IS NOT NULL THEN g.util_mean * g.covered_s END) AS util_w,
    SUM(CASE WHEN g.util_mean IS NOT NULL THEN g.covered_s END) AS util_s,
    SUM(CASE WHEN g.sm_active IS NOT NULL AND g.covered_s > 0 THEN g.gpu_hours * MIN(1, g.gpm_s / g.covered_s) END) AS gpm_gh,
    SUM(CASE WHEN g.sm_active IS NOT NULL AND g.covered_s > 0 THEN g.gpu_hours * MIN(1, g.gpm_s / g.covered_s) * g.sm_active END) AS sm_gh,
    SUM(g.energy_j) AS energy_j,
    MAX(CASE WHEN g.gpu_hours IS NULL THEN 0 WHEN g.energy_j <> 0 THEN 1 WHEN json_extract(g.state, '$.energyFromCounter') THEN 1
             WHEN json_extract(g.state, '$.powerN') > 1 THEN 1 ELSE 0 END) AS known,
    ${priced ? 'SUM(l9gpu_gpu_cost(g.model, j.partition, g.gpu_hours, g.energy_j)) AS cost, ' + 'SUM(l9gpu_gpu_co2e(g.model, j.partition, g.gpu_hours, g.energy_j)) AS co2e' : 'NULL AS cost, NULL AS co2e'}
  FROM jobs j
  LEFT JOIN bindings b ON b.job_id = j.job_id AND b.run_key = j.run_key
  LEFT JOIN job_gpu g ON g.job_id = b.job_id AND g.run_key = b.run_key AND g.gpu_uuid = b.gpu_uuid`;

type Row = [
  grp: string | null,
  gh: number | null,
  idle: number | null,
  utilW: number | null,
  utilS: number | null,
  gpmGh: number | null,
  smGh: number | null,
  energyJ: number | null,
  known: number | null,
  cost: number | null,
  co2e: number | null,
];

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
  const { sql, args } = listWhere(f);
  const fold = new GroupFold();
  const rows = db
    .prepare(`${figuresSql(by, prices !== null)} ${sql} GROUP BY j.start_time, j.rowid`)
    .raw()
    .iterate(...args) as IterableIterator<Row>;
  for (const [grp, gh, idle, utilW, utilS, gpmGh, smGh, energyJ, known, cost, co2e] of rows) {
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
