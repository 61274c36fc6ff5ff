/**
 * The job_gpu and job_gpu_series tables' one owner: the per (job run x GPU)
 * rollups and their per-minute series that the job ledger writes
 * (src/ledger/rollup-writer.ts) and the job reports read (src/jobs/: list,
 * report, jobs --by). A run's GPUs are its bindings: the reads that join them
 * to their rollups are named here, beside the rollups (the bindings
 * themselves are src/store/jobs.ts's).
 */
import type { Db } from './open.js';

/** The GPM columns of job_gpu (schema migration 6). */
export const GPM_COLUMNS = [
  'gpm_s',
  'sm_active',
  'sm_occupancy',
  'tensor_active',
  'dram_active',
  'fp64_active',
  'fp32_active',
  'fp16_active',
  'nvlink_bytes',
  'pcie_bytes',
  'idle_s',
] as const;

export type GpmColumn = (typeof GPM_COLUMNS)[number];

/** The ledger's statements, prepared once: a rollup's stored state, its upsert, a sample into its minute of the series. */
export function rollupStatements(db: Db) {
  return {
    load: db.prepare('SELECT state, identity FROM job_gpu WHERE job_id = ? AND run_key = ? AND gpu_uuid = ?'),
    upsert: db.prepare(
      `INSERT INTO job_gpu (job_id, run_key, gpu_uuid, model, identity, samples, covered_s, gpu_hours, util_mean, mem_used_max,
        mem_total, energy_j, state, updated_at, ${GPM_COLUMNS.join(', ')})
       VALUES (@job, @run, @uuid, @model, @identity, @samples, @covered, @gpuHours, @util, @mem, @memTotal, @energy, @state, @now,
         ${GPM_COLUMNS.map((c) => `@${c}`).join(', ')})
       ON CONFLICT (job_id, run_key, gpu_uuid) DO UPDATE SET model = excluded.model, identity = excluded.identity, samples =
         excluded.samples,
         covered_s = excluded.covered_s, gpu_hours = excluded.gpu_hours, util_mean = excluded.util_mean, mem_used_max =
           excluded.mem_used_max,
         mem_total = excluded.mem_total, energy_j = excluded.energy_j, state = excluded.state, updated_at = excluded.updated_at,
         ${GPM_COLUMNS.map((c) => `${c} = excluded.${c}`).join(', ')}`,
    ),
    series: db.prepare(
      `INSERT INTO job_gpu_series (job_id, run_key, gpu_uuid, minute, util_sum, power_sum, mem_used_max, n) VALUES (?, ?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (job_id, run_key, gpu_uuid, minute) DO UPDATE SET util_sum = util_sum + excluded.util_sum, power_sum = power_sum
         + excluded.power_sum,
         mem_used_max = MAX(COALESCE(mem_used_max, 0), COALESCE(excluded.mem_used_max, 0)), n = n + 1`,
    ),
  };
}

/** The prune's statements on the rollups (src/ledger/rollup-writer.ts PRUNE_SQL; each searches an index). */
export const ROLLUP_PRUNE_SQL = {
  drop: [`DELETE FROM job_gpu WHERE job_id = ? AND run_key = ?`, `DELETE FROM job_gpu_series WHERE job_id = ? AND run_key = ?`],
  dropSeries: `DELETE FROM job_gpu_series WHERE job_id = ? AND run_key = ?`,
} as const;

/** A bound GPU of a listed run, with its rollup's model and state where it has one. */
export interface ListedRunGpu {
  job_id: string;
  run_key: string;
  gpu_uuid: string;
  shared: number;
  model: string | null;
  state: string | null;
}

/** The bound GPUs of the runs given (job id, run key), with their rollups (`l9gpu jobs`, --waste). */
export function gpusOfRuns(db: Db, runs: readonly (readonly [string, string])[]): ListedRunGpu[] {
  return db
    .prepare(
      `SELECT b.job_id, b.run_key, b.gpu_uuid, b.shared, g.model, g.state FROM bindings b
              LEFT JOIN job_gpu g ON g.job_id = b.job_id AND g.run_key = b.run_key AND g.gpu_uuid = b.gpu_uuid
              WHERE (b.job_id, b.run_key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`,
    )
    .all(JSON.stringify(runs)) as ListedRunGpu[];
}

/** A bound GPU of one run, with its rollup's model, identity and state where it has one. */
export interface RunGpu {
  uuid: string;
  shared: number;
  model: string | null;
  identity: string | null;
  state: string | null;
}

/** One run's bound GPUs with their rollups, by GPU UUID (`l9gpu jobs show`). */
export function gpusOfRun(db: Db, jobId: string, runKey: string): RunGpu[] {
  return db
    .prepare(
      `SELECT b.gpu_uuid AS uuid, b.shared AS shared, g.model AS model, g.identity AS identity, g.state AS state FROM bindings b
              LEFT JOIN job_gpu g ON g.job_id = b.job_id AND g.run_key = b.run_key AND g.gpu_uuid = b.gpu_uuid
              WHERE b.job_id = ? AND b.run_key = ? ORDER BY b.gpu_uuid`,
    )
    .all(jobId, runKey) as RunGpu[];
}

/** One run's mean utilization per minute over its GPUs, oldest first. */
export function utilizationSeries(db: Db, jobId: string, runKey: string): { minute: number; util: number }[] {
  return db
    .prepare(
      `SELECT minute, SUM(util_sum) / SUM(n) AS util FROM job_gpu_series WHERE job_id = ? AND run_key = ? GROUP BY minute ORDER BY minute`,
    )
    .all(jobId, runKey) as { minute: number; util: number }[];
}

/** The jobs columns `jobs --by` may group on. */
export type FigureGroup = 'user' | 'account' | 'partition' | 'name';

/**
 * A run's group and its GPUs' sums, as `jobs --by` folds them (src/jobs/by-store.ts):
 * group, GPU-hours, idle GPU-hours, utilization x seconds, seconds with
 * utilization, GPM-covered GPU-hours, SM-weighted GPU-hours, energy, whether
 * any energy is known, cost, CO2e.
 */
export type RunFiguresRow = [
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

/**
 * One row per job run: its group, then its GPUs' sums as totalsOf,
 * idleGpuHours and smGpuHours (src/jobs/list.ts) make them. known: whether any GPU's
 * energy was measured (its figures' energySource is not 'none'), asked of the
 * state only where none was counted (a counter read once is a known 0 J).
 * Grouped by start time and rowid: so, SQLite takes each job's rows as they
 * come, whichever index of jobs the filter uses (by rowid alone it sorts them
 * all when the filter uses jobs_user_start: EXPLAIN QUERY PLAN says "USE TEMP
 * B-TREE FOR GROUP BY").
 */
const PRICED =
  'SUM(l9gpu_gpu_cost(g.model, j.partition, g.gpu_hours, g.energy_j)) AS cost, ' +
  'SUM(l9gpu_gpu_co2e(g.model, j.partition, g.gpu_hours, g.energy_j)) AS co2e';

const figuresSql = (by: FigureGroup, priced: boolean) => `SELECT j.${by} AS grp,
    SUM(g.gpu_hours) AS gh,
    SUM(CASE WHEN g.util_mean IS NOT NULL THEN g.gpu_hours * (1 - g.util_mean) END) AS idle,
    SUM(CASE WHEN g.util_mean IS NOT NULL THEN g.util_mean * g.covered_s END) AS util_w,
    SUM(CASE WHEN g.util_mean IS NOT NULL THEN g.covered_s END) AS util_s,
    SUM(CASE WHEN g.sm_active IS NOT NULL AND g.covered_s > 0 THEN g.gpu_hours * MIN(1, g.gpm_s / g.covered_s) END) AS gpm_gh,
    SUM(CASE WHEN g.sm_active IS NOT NULL AND g.covered_s > 0 THEN g.gpu_hours * MIN(1, g.gpm_s / g.covered_s) * g.sm_active END) AS sm_gh,
    SUM(g.energy_j) AS energy_j,
    MAX(CASE WHEN g.gpu_hours IS NULL THEN 0 WHEN g.energy_j <> 0 THEN 1 WHEN json_extract(g.state, '$.energyFromCounter') THEN 1
             WHEN json_extract(g.state, '$.powerN') > 1 THEN 1 ELSE 0 END) AS known,
    ${priced ? PRICED : 'NULL AS cost, NULL AS co2e'}
  FROM jobs j
  LEFT JOIN bindings b ON b.job_id = j.job_id AND b.run_key = j.run_key
  LEFT JOIN job_gpu g ON g.job_id = b.job_id AND g.run_key = b.run_key AND g.gpu_uuid = b.gpu_uuid`;

/**
 * Each run the filter takes, as it comes (one GROUP BY over the figures job_gpu keeps in columns: never the
 * rollup state's JSON, never the list of runs held). `where`: a WHERE clause over `jobs j` and its arguments
 * (src/jobs/list.ts listWhere). priced: the connection has l9gpu_gpu_cost and l9gpu_gpu_co2e (per GPU: model,
 * partition, GPU-hours, energy), and the rows carry their sums.
 */
export function runFigures(
  db: Db,
  by: FigureGroup,
  priced: boolean,
  where: { sql: string; args: readonly unknown[] },
): IterableIterator<RunFiguresRow> {
  return db
    .prepare(`${figuresSql(by, priced)} ${where.sql} GROUP BY j.start_time, j.rowid`)
    .raw()
    .iterate(...where.args) as IterableIterator<RunFiguresRow>;
}
