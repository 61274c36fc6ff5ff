/**
 * Writes and reads of jobs and bindings. One transaction per hook call; every
 * write is idempotent (an epilog twice, an epilog without a prolog, the
 * reconciler opening what a prolog already opened).
 *
 * Every write transaction is BEGIN IMMEDIATE: in WAL mode a deferred one that
 * reads, then writes after another connection committed (the daemon commits
 * every tick) fails at once with SQLITE_BUSY_SNAPSHOT, without waiting on the
 * busy timeout. Seen as "database is locked" in epilogs under the real Slurm.
 */
import type { Attributes } from '../core/metrics/model.js';
import type { Db } from './open.js';
import { boundLabel } from '../core/bound-label.js';
import { bootId, monoAt } from '../core/clock.js';
import type { RunIdentity } from '../core/run-identity.js';

/** A run as written to the jobs table: the run identity (what the writer knows of it; the end is JobEnd's). */
export interface JobRecord extends Pick<RunIdentity, 'jobId' | 'runKey'>, Partial<Omit<RunIdentity, 'jobId' | 'runKey' | 'endTime'>> {
  /** The provider that wrote the run; null: Slurm (runs written before there were others). */
  scheduler?: string | null;
  /** The run's attributes as its provider puts them on points (other schedulers than Slurm). */
  attrs?: Attributes | null;
}

export interface JobEnd {
  endTime: number;
  state?: string | null;
  exitCode?: number | null;
  exitSignal?: number | null;
}

export interface GpuBinding {
  /** A GPU or MIG UUID; "gres:<index>" while the inventory cannot resolve it yet. */
  uuid: string;
  shared: boolean;
  /** The binding's own attributes (Kubernetes: the container holding the GPU, the device ids). */
  attrs?: Attributes | null;
}

export type Source = 'prolog' | 'epilog' | 'poll';

const COLS = [
  'cluster',
  'user',
  'uid',
  'account',
  'partition',
  'qos',
  'name',
  'array_job_id',
  'array_task_id',
  'het_job_id',
  'het_job_offset',
  'start_time',
  'scheduler',
  'attrs',
] as const;

/**
 * Longest job name kept: the name is the job's user's (sbatch -J), the
 * prolog writes it without the daemon's [limits] (it reads no more config than
 * it must), and the store must not hold 120 kB per run. Attribution cuts again
 * to label_length.
 */
export const STORED_NAME_MAX = 1024;

/**
 * A start after now (SLURM_JOB_START_TIME from a controller whose clock is
 * ahead of this node's) is now: a run time is measured on this node's clock,
 * as the end is, and is never negative.
 */
const startBy = (t: number | null | undefined, now: number): number | null => (t === null || t === undefined ? null : Math.min(t, now));

function jobValues(j: JobRecord, now: number): Record<(typeof COLS)[number], unknown> {
  return {
    cluster: j.cluster ?? null,
    user: j.user ?? null,
    uid: j.uid ?? null,
    account: j.account ?? null,
    partition: j.partition ?? null,
    qos: j.qos ?? null,
    name: j.name ? boundLabel(j.name, STORED_NAME_MAX) : null,
    array_job_id: j.arrayJobId ?? null,
    array_task_id: j.arrayTaskId ?? null,
    het_job_id: j.hetJobId ?? null,
    het_job_offset: j.hetJobOffset ?? null,
    start_time: startBy(j.startTime, now),
    scheduler: j.scheduler ?? null,
    attrs: j.attrs ? JSON.stringify(j.attrs) : null,
  };
}

/** Insert or fill in a job run: known fields are never overwritten by unknown (null) ones. */
function upsertJob(db: Db, j: JobRecord, source: Source, now: number): void {
  const v = jobValues(j, now);
  const start = v.start_time as number | null;
  db.prepare(
    `INSERT INTO jobs (job_id, run_key, ${COLS.join(', ')}, source, updated_at, start_mono, boot_id)
     VALUES (@job_id, @run_key, ${COLS.map((c) => `@${c}`).join(', ')}, @source, @now, @start_mono, @boot_id)
     ON CONFLICT (job_id, run_key) DO UPDATE SET ${COLS.map((c) => `${c} = COALESCE(excluded.${c}, jobs.${c})`).join(', ')},
       updated_at = excluded.updated_at,
       start_mono = CASE WHEN excluded.source = 'prolog' OR jobs.start_mono IS NULL THEN COALESCE(excluded.start_mono,
         jobs.start_mono) ELSE jobs.start_mono END,
       boot_id = CASE WHEN excluded.source = 'prolog' OR jobs.boot_id IS NULL THEN COALESCE(excluded.boot_id, jobs.boot_id) ELSE
         jobs.boot_id END,
       source = CASE WHEN excluded.source = 'prolog' THEN 'prolog' ELSE jobs.source END`,
  ).run({
    job_id: j.jobId,
    run_key: j.runKey,
    ...v,
    source,
    now,
    start_mono: start === null ? null : monoAt(start),
    boot_id: bootId() || null,
  });
}

/**
 * A job run started on this node with these GPUs (prolog, or the reconciler
 * finding a job the prolog missed). Earlier runs of the same job id (requeue)
 * are closed. A poll may see a job RUNNING while its prolog still runs (24.11
 * shows it so, Reason=Prolog): the prolog's record then confirms the binding
 * and its source becomes 'prolog', the authoritative one.
 */
export function recordStart(db: Db, j: JobRecord, gpus: readonly GpuBinding[], source: Source, now = Date.now()): void {
  db.transaction(() => {
    const start = startBy(j.startTime, now) ?? now;
    db.prepare(`UPDATE bindings SET end_time = ?, closed_by = 'requeue' WHERE job_id = ? AND run_key <> ? AND end_time IS NULL`).run(
      now,
      j.jobId,
      j.runKey,
    );
    db.prepare(
      `UPDATE jobs SET end_time = ?, end_mono = ?, state = COALESCE(state, 'REQUEUED'), ` +
        `updated_at = ? WHERE job_id = ? AND run_key <> ? AND end_time IS NULL`,
    ).run(now, monoAt(now), now, j.jobId, j.runKey);
    upsertJob(db, { ...j, startTime: start }, source, now);
    const ins = db.prepare(
      `INSERT INTO bindings (job_id, run_key, gpu_uuid, start_time, source, shared, attrs) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (job_id, run_key, gpu_uuid) DO UPDATE SET shared = MAX(bindings.shared, excluded.shared), attrs =
         COALESCE(excluded.attrs, bindings.attrs),
         source = CASE WHEN excluded.source = 'prolog' THEN 'prolog' ELSE bindings.source END`,
    );
    // a GPU that another job holds open is shared, whatever the job's environment said: both bindings say so
    const others = db.prepare(`SELECT COUNT(*) AS n FROM bindings WHERE gpu_uuid = ? AND end_time IS NULL AND job_id <> ?`);
    const markOthers = db.prepare(`UPDATE bindings SET shared = 1 WHERE gpu_uuid = ? AND end_time IS NULL AND job_id <> ? AND shared = 0`);
    for (const g of gpus) {
      const held = !g.uuid.startsWith('gres:') && (others.get(g.uuid, j.jobId) as { n: number }).n > 0;
      if (held) markOthers.run(g.uuid, j.jobId);
      ins.run(j.jobId, j.runKey, g.uuid, start, source, g.shared || held ? 1 : 0, g.attrs ? JSON.stringify(g.attrs) : null);
    }
  }).immediate();
}

/**
 * A job run ended (epilog, or the reconciler for a missed epilog). Without a
 * prior start, the job and its bindings are recorded closed. A second call
 * changes nothing already recorded.
 */
export function recordEnd(db: Db, job: JobRecord, end: JobEnd, gpus: readonly GpuBinding[], closedBy: Source, now = Date.now()): void {
  db.transaction(() => {
    let j = job;
    // On requeue slurmd runs the killed run's epilog with the restart count already bumped:
    // the epilog ends the run of this job that is open here, whatever key its environment suggests.
    const open = db.prepare('SELECT run_key AS k FROM jobs WHERE job_id = ? AND end_time IS NULL').all(j.jobId) as { k: string }[];
    if (open.length > 0 && !open.some((r) => r.k === j.runKey)) j = { ...j, runKey: open[0]!.k };
    upsertJob(db, j, closedBy, now);
    const start =
      (db.prepare('SELECT start_time FROM jobs WHERE job_id = ? AND run_key = ?').get(j.jobId, j.runKey) as { start_time: number | null })
        .start_time ?? end.endTime;
    const ins = db.prepare(
      `INSERT INTO bindings (job_id, run_key, gpu_uuid, start_time, end_time, source, closed_by, shared) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (job_id, run_key, gpu_uuid) DO NOTHING`,
    );
    for (const g of gpus) ins.run(j.jobId, j.runKey, g.uuid, start, end.endTime, closedBy, closedBy, g.shared ? 1 : 0);
    db.prepare(`UPDATE bindings SET end_time = ?, closed_by = ? WHERE job_id = ? AND run_key = ? AND end_time IS NULL`).run(
      end.endTime,
      closedBy,
      j.jobId,
      j.runKey,
    );
    db.prepare(
      // the first end recorded wins: a second epilog (or a late poll) does not rewrite it
      `UPDATE jobs SET end_mono = CASE WHEN end_time IS NULL THEN @endMono ELSE end_mono END, end_time = COALESCE(end_time, @end),
        state = COALESCE(state, @state), exit_code = COALESCE(exit_code, @code), exit_signal = COALESCE(exit_signal, @sig),
          updated_at = @now
       WHERE job_id = @job AND run_key = @run`,
    ).run({
      end: end.endTime,
      endMono: monoAt(end.endTime),
      state: end.state ?? null,
      code: end.exitCode ?? null,
      sig: end.exitSignal ?? null,
      now,
      job: j.jobId,
      run: j.runKey,
    });
  }).immediate();
}

/**
 * Reopens a run an epilog closed before `before` (a moment the caller then
 * saw the run still going): on requeue slurmd may run the killed run's epilog
 * after the new run's prolog, with the restart count already bumped, and that
 * epilog then closes the new run. Only the epilog's close is undone; true when
 * the run was reopened.
 */
export function reopenRun(db: Db, jobId: string, runKey: string, before: number, now = Date.now()): boolean {
  return db
    .transaction(() => {
      const row = db.prepare(`SELECT end_time AS e FROM jobs WHERE job_id = ? AND run_key = ?`).get(jobId, runKey) as
        { e: number | null } | undefined;
      if (!row || row.e === null || row.e > before) return false;
      const n = db
        .prepare(
          `UPDATE bindings SET end_time = NULL, closed_by = NULL WHERE job_id = ? AND run_key = ? AND ` +
            `closed_by = 'epilog' AND end_time <= ?`,
        )
        .run(jobId, runKey, before).changes;
      if (n === 0) return false;
      db.prepare(
        `UPDATE jobs SET end_time = NULL, end_mono = NULL, state = NULL, exit_code = NULL, ` +
          `exit_signal = NULL, updated_at = ? WHERE job_id = ? AND run_key = ?`,
      ).run(now, jobId, runKey);
      return true;
    })
    .immediate();
}

/** The GPU inventory is src/store/gpus.ts's (the gpus table's owner); named here too for the callers that always took it from here. */
export { inventory, inventoryByVendor, upsertInventory, type InventoryGpu } from './gpus.js';

/** An open binding of a GPU to a run, with the run identity's fields its points carry. */
export interface OpenBinding extends Pick<
  RunIdentity,
  'jobId' | 'runKey' | 'cluster' | 'user' | 'account' | 'partition' | 'name' | 'arrayJobId' | 'arrayTaskId'
> {
  gpuUuid: string;
  shared: boolean;
  start: number;
  /** The run's and the binding's attributes, for providers other than Slurm (JSON in the store). */
  jobAttrs: Attributes | null;
  bindingAttrs: Attributes | null;
}

type OpenRow = Omit<OpenBinding, 'shared' | 'jobAttrs' | 'bindingAttrs'> & {
  shared: number;
  jobAttrs: string | null;
  bindingAttrs: string | null;
};

/** The open bindings of one provider's runs ('slurm' also takes runs written before runs named their provider). */
export function openBindings(db: Db, scheduler = 'slurm'): OpenBinding[] {
  return (
    db
      .prepare(
        `SELECT b.job_id AS jobId, b.run_key AS runKey, b.gpu_uuid AS gpuUuid, b.shared AS shared, b.start_time AS start,
                j.cluster, j.user, j.account, j.partition, j.name, j.array_job_id AS arrayJobId, j.array_task_id AS arrayTaskId,
                j.attrs AS jobAttrs, b.attrs AS bindingAttrs
         FROM bindings b JOIN jobs j USING (job_id, run_key)
         WHERE b.end_time IS NULL AND COALESCE(j.scheduler, 'slurm') = ? ORDER BY b.job_id, b.gpu_uuid`,
      )
      .all(scheduler) as OpenRow[]
  ).map((r) => ({
    ...r,
    shared: !!r.shared,
    jobAttrs: r.jobAttrs ? (JSON.parse(r.jobAttrs) as Attributes) : null,
    bindingAttrs: r.bindingAttrs ? (JSON.parse(r.bindingAttrs) as Attributes) : null,
  }));
}

/*
 * The reconcilers' questions and corrections (slurm/reconciler.ts,
 * src/attribution/kubernetes/pod-sync.ts): named here so that the store is
 * the one owner of the jobs and bindings tables.
 */

/** How many bindings are open, of any run. */
export function openBindingCount(db: Db): number {
  return (db.prepare(`SELECT COUNT(*) AS n FROM bindings WHERE end_time IS NULL`).get() as { n: number }).n;
}

/** The key of this job's open run keyed by SLUID (a hook's, 25.11+), if there is one. */
export function openSluidRun(db: Db, jobId: string): string | undefined {
  return (
    db.prepare(`SELECT run_key AS k FROM jobs WHERE job_id = ? AND end_time IS NULL AND run_key LIKE 'sluid:%'`).get(jobId) as
      { k: string } | undefined
  )?.k;
}

/** Drops a run's open "gres:<index>" bindings (once its GPUs are bound by UUID). */
export function dropGresBindings(db: Db, jobId: string, runKey: string): void {
  db.prepare(`DELETE FROM bindings WHERE job_id = ? AND run_key = ? AND end_time IS NULL AND gpu_uuid LIKE 'gres:%'`).run(jobId, runKey);
}

/** Every open run (GPU or not) with its start (or last update) and whether it holds an open binding. */
export function openRunsBound(db: Db): { jobId: string; runKey: string; start: number; bound: boolean }[] {
  return (
    db
      .prepare(
        `SELECT j.job_id AS jobId, j.run_key AS runKey, COALESCE(j.start_time, j.updated_at) AS start,
                EXISTS (SELECT 1 FROM bindings b WHERE b.job_id = j.job_id AND b.run_key = j.run_key AND b.end_time IS NULL) AS bound
         FROM jobs j WHERE j.end_time IS NULL`,
      )
      .all() as { jobId: string; runKey: string; start: number; bound: number }[]
  ).map((r) => ({ ...r, bound: r.bound === 1 }));
}

/** One provider's open runs and their starts. */
export function openRunsOf(db: Db, scheduler: string): { jobId: string; runKey: string; start: number | null }[] {
  return db
    .prepare(`SELECT job_id AS jobId, run_key AS runKey, start_time AS start FROM jobs WHERE scheduler = ? AND end_time IS NULL`)
    .all(scheduler) as { jobId: string; runKey: string; start: number | null }[];
}

/** Runs with a binding opened before `before` that is still open. */
export function runsBoundSince(db: Db, before: number): { jobId: string; runKey: string }[] {
  return db
    .prepare(`SELECT DISTINCT job_id AS jobId, run_key AS runKey FROM bindings WHERE end_time IS NULL AND start_time < ?`)
    .all(before) as { jobId: string; runKey: string }[];
}

/** Closes a run's open bindings of GPUs it no longer holds (closed by a poll). */
export function closeBindingsExcept(db: Db, jobId: string, runKey: string, keep: ReadonlySet<string>, now: number): void {
  const close = db.prepare(
    `UPDATE bindings SET end_time = ?, closed_by = 'poll' WHERE job_id = ? AND run_key = ? AND end_time IS NULL AND gpu_uuid = ?`,
  );
  for (const { uuid } of db
    .prepare(`SELECT gpu_uuid AS uuid FROM bindings WHERE job_id = ? AND run_key = ? AND end_time IS NULL`)
    .all(jobId, runKey) as { uuid: string }[]) {
    if (!keep.has(uuid)) close.run(now, jobId, runKey, uuid);
  }
}

/** Jobs that ended and were updated after `since` with no end state yet, or FAILED (which may be more precise), latest end first. */
export function endsWithoutState(db: Db, since: number): string[] {
  return (
    db
      .prepare(
        `SELECT DISTINCT job_id AS jobId FROM jobs WHERE end_time IS NOT NULL AND end_time > ? AND ` +
          `(state IS NULL OR state = 'FAILED') AND updated_at > ? ORDER BY end_time DESC`,
      )
      .all(since, since) as {
      jobId: string;
    }[]
  ).map((t) => t.jobId);
}

/**
 * The end state the scheduler answered for an ended job with none (or
 * FAILED), and, given its end time, the end of the bindings a poll closed
 * later than that. Returns how many runs got the state.
 */
export function recordEndState(
  db: Db,
  jobId: string,
  end: { state: string; exitCode: number | null; exitSignal: number | null; endTime: number | null },
  now: number,
): number {
  const n = db
    .prepare(
      `UPDATE jobs SET state = @state, exit_code = COALESCE(@code, exit_code), exit_signal = ` +
        `COALESCE(@sig, exit_signal), updated_at = @now WHERE job_id = @job AND end_time IS NOT ` +
        `NULL AND (state IS NULL OR state = 'FAILED')`,
    )
    .run({ state: end.state, code: end.exitCode, sig: end.exitSignal, now, job: jobId }).changes;
  if (end.endTime)
    db.prepare(`UPDATE bindings SET end_time = @end WHERE job_id = @job AND closed_by = 'poll' AND end_time > @end`).run({
      end: end.endTime,
      job: jobId,
    });
  return n;
}

/*
 * The readers' questions (the attribution transforms, the ledger's counted
 * figures, the job reports) and the prune's statements: named here, the jobs
 * and bindings tables' one owner, so no other module writes SQL on them.
 */

/** Who the store has a job as (its latest run), prepared once: what a job named by a user's process or file is checked against. */
export function jobOwnerLookup(db: Db): (jobId: string) => { uid: number | null; user: string | null } | undefined {
  const q = db.prepare('SELECT uid, user FROM jobs WHERE job_id = ? ORDER BY start_time DESC LIMIT 1');
  return (jobId) => q.get(jobId) as { uid: number | null; user: string | null } | undefined;
}

/** One attribute of each open run of a provider (null where the run has none), prepared once. */
export function openRunAttribute(db: Db, attribute: string): (scheduler: string) => { jobId: string; value: string | null }[] {
  const q = db.prepare(`SELECT job_id AS jobId, json_extract(attrs, ?) AS value FROM jobs WHERE scheduler = ? AND end_time IS NULL`);
  const path = `$.${JSON.stringify(attribute)}`;
  return (scheduler) => q.all(path, scheduler) as { jobId: string; value: string | null }[];
}

/** The run of a job its figures count for: the open one, else the latest. */
export function latestRunKey(db: Db, jobId: string): string | undefined {
  return (
    db.prepare('SELECT run_key FROM jobs WHERE job_id = ? ORDER BY end_time IS NULL DESC, start_time DESC LIMIT 1').get(jobId) as
      { run_key: string } | undefined
  )?.run_key;
}

/** Every run of a job (its rows as stored), latest first. */
export function runsOfJob(db: Db, jobId: string): unknown[] {
  return db.prepare('SELECT * FROM jobs WHERE job_id = ? ORDER BY start_time DESC').all(jobId);
}

/** Every run of an array task (its rows as stored), latest first. */
export function runsOfArrayTask(db: Db, arrayJobId: string, taskId: string): unknown[] {
  return db.prepare('SELECT * FROM jobs WHERE array_job_id = ? AND array_task_id = ? ORDER BY start_time DESC').all(arrayJobId, taskId);
}

/**
 * A page of the runs a filter takes (its rows as stored): `where` is a WHERE
 * clause over `jobs j` and its arguments, `order` an ORDER BY list over `j`
 * (src/jobs/list.ts listWhere, LIST_ORDER); limit <= 0: no limit.
 */
export function listedRuns(
  db: Db,
  where: { sql: string; args: readonly unknown[] },
  order: string,
  limit: number,
  offset: number,
): unknown[] {
  return db
    .prepare(`SELECT * FROM jobs j ${where.sql} ORDER BY ${order} LIMIT ? OFFSET ?`)
    .all(...where.args, limit > 0 ? limit : -1, offset);
}

/** The prune's statements on jobs and bindings (src/ledger/rollup-writer.ts PRUNE_SQL; each searches an index). */
export const RUN_PRUNE_SQL = {
  // jobs_end (schema 7): the oldest ended jobs first, a range of the index, never a scan of every job kept
  expired:
    `SELECT rowid AS id, job_id AS job, run_key AS run FROM jobs WHERE end_time IS NOT NULL AND ` +
    `end_time < ? ORDER BY end_time LIMIT ?`,
  dropBindings: `DELETE FROM bindings WHERE job_id = ? AND run_key = ?`,
  dropJob: `DELETE FROM jobs WHERE rowid = ?`,
  // the series pass goes on from where the last batch stopped (end time, rowid)
  ended: `SELECT rowid AS id, job_id AS job, run_key AS run, end_time AS t FROM jobs
    WHERE end_time IS NOT NULL AND end_time >= @t AND end_time < @cut AND (end_time > @t OR rowid > @id) ORDER BY end_time, rowid
      LIMIT @limit`,
} as const;
