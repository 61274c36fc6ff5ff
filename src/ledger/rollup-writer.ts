/**
 * Keeps the per (job run x GPU) rollups in the store, one transaction per
 * tick, and a per-minute series for plots. The state of each open binding
 * lives in memory and is persisted at every tick (the daemon restarts
 * without losing a job's figures).
 */
import type { Attributes } from '../core/metrics/model.js';
import { emptyRollup, figures, loadRollup, step, type GpuFigures, type GpuRollup, type GpuSample } from '../figures/rollup.js';
import type { Db } from '../store/open.js';

export interface RollupBinding {
  jobId: string;
  runKey: string;
  share: number;
}

interface Held {
  r: GpuRollup;
  identity: Attributes;
}

export interface Finished {
  jobId: string;
  runKey: string;
  uuid: string;
  identity: Attributes;
  figures: GpuFigures;
}

/** The GPM columns of job_gpu (schema migration 6), from a rollup's figures. */
const GPM_COLUMNS = [
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

function gpmColumns(f: GpuFigures): Record<(typeof GPM_COLUMNS)[number], number | null> {
  const g = f.gpm;
  return {
    gpm_s: g?.seconds ?? null,
    sm_active: g?.smActive ?? null,
    sm_occupancy: g?.smOccupancy ?? null,
    tensor_active: g?.tensorActive ?? null,
    dram_active: g?.dramActive ?? null,
    fp64_active: g?.fp64Active ?? null,
    fp32_active: g?.fp32Active ?? null,
    fp16_active: g?.fp16Active ?? null,
    nvlink_bytes: g?.nvlinkBytes ?? null,
    pcie_bytes: g?.pcieBytes ?? null,
    idle_s: f.idle.basis === 'none' ? null : f.idle.seconds,
  };
}

const key = (job: string, run: string, uuid: string) => `${job}\u0000${run}\u0000${uuid}`;

export class RollupWriter {
  private readonly held = new Map<string, Held>();
  private readonly load;
  private readonly upsert;
  private readonly series;

  constructor(private readonly db: Db) {
    this.load = db.prepare('SELECT state, identity FROM job_gpu WHERE job_id = ? AND run_key = ? AND gpu_uuid = ?');
    this.upsert = db.prepare(
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
    );
    this.series = db.prepare(
      `INSERT INTO job_gpu_series (job_id, run_key, gpu_uuid, minute, util_sum, power_sum, mem_used_max, n) VALUES (?, ?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (job_id, run_key, gpu_uuid, minute) DO UPDATE SET util_sum = util_sum + excluded.util_sum, power_sum = power_sum
         + excluded.power_sum,
         mem_used_max = MAX(COALESCE(mem_used_max, 0), COALESCE(excluded.mem_used_max, 0)), n = n + 1`,
    );
  }

  private get(job: string, run: string, uuid: string, identity: Attributes): Held {
    const k = key(job, run, uuid);
    let h = this.held.get(k);
    if (!h) {
      const row = this.load.get(job, run, uuid) as { state: string; identity: string | null } | undefined;
      h = { r: row ? loadRollup(row.state) : emptyRollup(), identity: row?.identity ? (JSON.parse(row.identity) as Attributes) : identity };
      this.held.set(k, h);
    }
    h.identity = identity;
    return h;
  }

  /** One tick: every open binding of every sampled GPU, in one transaction. */
  record(
    samples: ReadonlyMap<string, GpuSample>,
    identities: ReadonlyMap<string, Attributes>,
    bindings: ReadonlyMap<string, RollupBinding[]>,
    maxGapMs: number,
    now = Date.now(),
  ): void {
    const work: [string, GpuSample, RollupBinding[]][] = [];
    for (const [uuid, s] of samples) {
      const b = bindings.get(uuid);
      if (b?.length) work.push([uuid, s, b]);
    }
    if (work.length === 0) return;
    this.db
      .transaction(() => {
        for (const [uuid, s, bs] of work) {
          const identity = identities.get(uuid) ?? {};
          for (const b of bs) {
            const h = this.get(b.jobId, b.runKey, uuid, identity);
            step(h.r, { ...s, share: b.share }, maxGapMs);
            const f = figures(h.r);
            this.upsert.run({
              job: b.jobId,
              run: b.runKey,
              uuid,
              model: (identity['gpu.model'] as string) ?? null,
              identity: JSON.stringify(identity),
              samples: f.samples,
              covered: f.seconds,
              gpuHours: f.gpuHours,
              util: f.utilMean,
              mem: f.memUsedMax,
              memTotal: f.memTotal,
              energy: f.energyJ,
              state: JSON.stringify(h.r),
              now,
              ...gpmColumns(f),
            });
            this.series.run(b.jobId, b.runKey, uuid, Math.floor(s.t / 60_000), s.util ?? 0, s.power ?? 0, s.memUsed ?? null);
          }
        }
      })
      .immediate();
  }

  /** A binding closed: its final figures (for the job-end summary), and it leaves memory. */
  finish(jobId: string, runKey: string, uuid: string): Finished | undefined {
    const k = key(jobId, runKey, uuid);
    const h = this.held.get(k);
    this.held.delete(k);
    if (!h || h.r.samples === 0) return undefined;
    return { jobId, runKey, uuid, identity: h.identity, figures: figures(h.r) };
  }

  private pruneSql: ReturnType<RollupWriter['prepPrune']> | undefined;

  private prepPrune() {
    const p = (sql: string) => this.db.prepare(sql);
    return {
      expired: p(PRUNE_SQL.expired),
      drop: PRUNE_SQL.drop.map(p),
      dropJob: p(PRUNE_SQL.dropJob),
      ended: p(PRUNE_SQL.ended),
      dropSeries: p(PRUNE_SQL.dropSeries),
      mark: p(PRUNE_SQL.mark),
      setMark: p(PRUNE_SQL.setMark),
    };
  }

  /**
   * One batch of the job retention: at most `limit` ended jobs older than it,
   * with their figures, series, engines, NCCL and bindings, in one short
   * transaction. Returns how many jobs went (fewer than `limit`: none left).
   */
  pruneJobs(jobRetentionMs: number, now: number, limit = PRUNE_BATCH): number {
    const q = (this.pruneSql ??= this.prepPrune());
    return this.db
      .transaction(() => {
        const rows = q.expired.all(now - jobRetentionMs, limit) as { id: number; job: string; run: string }[];
        for (const r of rows) {
          for (const d of q.drop) d.run(r.job, r.run);
          q.dropJob.run(r.id);
        }
        return rows.length;
      })
      .immediate();
  }

  /**
   * One batch of the series retention: the per-minute series of at most
   * `limit` jobs ended before it, after the last batch's mark. Returns how
   * many jobs were taken (fewer than `limit`: caught up).
   */
  pruneSeries(seriesRetentionMs: number, now: number, limit = SERIES_BATCH): number {
    const q = (this.pruneSql ??= this.prepPrune());
    return this.db
      .transaction(() => {
        const m = /^(-?\d+):(-?\d+)$/.exec((q.mark.get() as { value: string } | undefined)?.value ?? '');
        const rows = q.ended.all({ t: m ? Number(m[1]) : 0, id: m ? Number(m[2]) : 0, cut: now - seriesRetentionMs, limit }) as {
          id: number;
          job: string;
          run: string;
          t: number;
        }[];
        for (const r of rows) q.dropSeries.run(r.job, r.run);
        const last = rows.at(-1);
        if (last) q.setMark.run(`${last.t}:${last.id}`);
        return rows.length;
      })
      .immediate();
  }
}

/** The tables holding a job run's figures, cleared before its row goes (bindings last: their foreign key). */
const JOB_TABLES = ['job_gpu', 'job_gpu_series', 'job_engine', 'job_nccl', 'bindings'] as const;

/** Where the series retention's pass stopped: the end time and rowid of the last job it took. */
const SERIES_MARK = 'prune.series_through';

/** The prune's statements (exported for the test that every one of them uses an index: EXPLAIN QUERY PLAN). */
export const PRUNE_SQL = {
  // jobs_end (schema 7): the oldest ended jobs first, a range of the index, never a scan of every job kept
  expired:
    `SELECT rowid AS id, job_id AS job, run_key AS run FROM jobs WHERE end_time IS NOT NULL AND ` +
    `end_time < ? ORDER BY end_time LIMIT ?`,
  drop: JOB_TABLES.map((t) => `DELETE FROM ${t} WHERE job_id = ? AND run_key = ?`),
  dropJob: `DELETE FROM jobs WHERE rowid = ?`,
  // the series pass goes on from where the last batch stopped (end time, rowid), kept in meta across restarts
  ended: `SELECT rowid AS id, job_id AS job, run_key AS run, end_time AS t FROM jobs
    WHERE end_time IS NOT NULL AND end_time >= @t AND end_time < @cut AND (end_time > @t OR rowid > @id) ORDER BY end_time, rowid
      LIMIT @limit`,
  dropSeries: `DELETE FROM job_gpu_series WHERE job_id = ? AND run_key = ?`,
  mark: `SELECT value FROM meta WHERE key = '${SERIES_MARK}'`,
  setMark: `INSERT INTO meta (key, value) VALUES ('${SERIES_MARK}', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
} as const;

/**
 * Jobs a prune batch takes: short enough that a hook waiting on the lock
 * waits one batch (tens of ms: bench/store-years.ts), not the whole prune.
 * 500 held the lock up to 180 ms on a loaded machine.
 */
export const PRUNE_BATCH = 200;
/** Jobs a series batch looks at: most have no series left (an index probe each), so more of them fit in the same time. */
export const SERIES_BATCH = 1000;
