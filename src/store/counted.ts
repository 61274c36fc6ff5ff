/**
 * The tables of the figures counted from the sources' own cumulative series
 * (src/ledger/deltas-rollup.ts): job_engine (what a job's inference engines
 * served), job_nccl (its NCCL communication) and engine_series (the last value
 * of each series they were counted from). Their one owner: the ledger writes
 * through these statements and the job reports read through these questions.
 */
import type { Db } from './open.js';

/** An engine row as stored. */
export interface EngineRow {
  engine: string;
  endpoint: string;
  model: string;
  first_time: number;
  last_time: number;
  requests: number;
  prompt_tokens: number | null;
  generation_tokens: number | null;
  ttft: string | null;
  itl: string | null;
}

/** The engine rows' statements for one write (src/ledger/engine-rollup.ts): a row as stored, and its replacement. */
export function engineRowStatements(db: Db) {
  return {
    get: db.prepare(
      'SELECT requests, prompt_tokens, generation_tokens, ttft, itl, first_time FROM job_engine ' +
        'WHERE job_id = ? AND run_key = ? AND engine = ? AND endpoint = ? AND model = ?',
    ),
    put: db.prepare(
      `INSERT OR REPLACE INTO job_engine (job_id, run_key, engine, endpoint, model, first_time, last_time, requests, ` +
        `prompt_tokens, generation_tokens, ttft, itl)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

/** A run's engine rows, by engine, endpoint and model. */
export function engineRows(db: Db, jobId: string, runKey: string): EngineRow[] {
  return db
    .prepare('SELECT * FROM job_engine WHERE job_id = ? AND run_key = ? ORDER BY engine, endpoint, model')
    .all(jobId, runKey) as EngineRow[];
}

/** The NCCL rows' upsert for one write (src/ledger/nccl-rollup.ts): what a batch counted adds to the stored row. */
export function ncclRowStatement(db: Db) {
  return db.prepare(`INSERT INTO job_nccl (job_id, run_key, comm, comm_name, collective, size, rank, n_ranks, n_nodes, first_time,
        last_time, ops, bytes, seconds)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT (job_id, run_key, comm, collective, size, rank) DO UPDATE SET
                              last_time = excluded.last_time, ops = ops + excluded.ops, bytes = bytes + excluded.bytes, seconds =
                                seconds + excluded.seconds`);
}

/** An NCCL row as stored (without the node, which the report adds). */
export interface NcclRow {
  comm: string;
  comm_name: string;
  collective: string;
  size: string;
  rank: number;
  n_ranks: number;
  n_nodes: number;
  ops: number;
  bytes: number;
  seconds: number;
}

/** A run's NCCL rows. */
export function ncclRows(db: Db, jobId: string, runKey: string): NcclRow[] {
  return db
    .prepare(
      'SELECT comm, comm_name, collective, size, rank, n_ranks, n_nodes, ops, bytes, seconds FROM ' +
        'job_nccl WHERE job_id = ? AND run_key = ?',
    )
    .all(jobId, runKey) as NcclRow[];
}

/** The prune's statements on the counted figures (src/ledger/rollup-writer.ts PRUNE_SQL; each searches an index). */
export const COUNTED_PRUNE_SQL = {
  drop: [`DELETE FROM job_engine WHERE job_id = ? AND run_key = ?`, `DELETE FROM job_nccl WHERE job_id = ? AND run_key = ?`],
} as const;

/** Series unseen since a moment, a batch of them (exported for the test that it uses an index). */
export const FORGET_SQL = 'DELETE FROM engine_series WHERE key IN (SELECT key FROM engine_series WHERE seen < ? LIMIT ?)';

/** A series' last value as stored for a job, if it has one. */
export function storedSeriesValue(db: Db, key: string, jobId: string): { value: number; hist: string | null } | undefined {
  return db.prepare('SELECT value, hist FROM engine_series WHERE key = ? AND job_id = ?').get(key, jobId) as
    { value: number; hist: string | null } | undefined;
}

/** The statement writing a series' last value (key, job, value, buckets as JSON or null, when seen), for one save. */
export function seriesValueStatement(db: Db) {
  return db.prepare('INSERT OR REPLACE INTO engine_series (key, job_id, value, hist, seen) VALUES (?, ?, ?, ?, ?)');
}

/** At most `limit` series unseen since `before` forgotten (engine_series_seen, schema 7); returns how many. */
export function forgetSeries(db: Db, before: number, limit: number): number {
  return db.prepare(FORGET_SQL).run(before, limit).changes;
}
