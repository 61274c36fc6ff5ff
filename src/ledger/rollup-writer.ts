/**
 * Keeps the per (job run x GPU) rollups in the store, one transaction per
 * tick, and a per-minute series for plots. The state of each open binding
 * lives in memory and is persisted at every tick (the daemon restarts
 * without losing a job's figures).
 */
import type { Attributes } from '../core/metrics/model.js';
import { emptyRollup, figures, loadRollup, step, type GpuFigures, type GpuRollup, type GpuSample } from '../figures/rollup.js';
import { metaKeySql } from '../store/meta.js';
import { COUNTED_PRUNE_SQL } from '../store/counted.js';
import { RUN_PRUNE_SQL } from '../store/jobs.js';
import type { Db } from '../store/open.js';
import { ROLLUP_PRUNE_SQL, rollupStatements, type GpmColumn } from '../store/rollups.js';

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

/** The GPM columns of job_gpu (schema migration 6, src/store/rollups.ts), from a rollup's figures. */
function gpmColumns(f: GpuFigures): Record<GpmColumn, number | null> {
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
    const st = rollupStatements(db);
    this.load = st.load;
    this.upsert = st.upsert;
    this.series = st.series;
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

/** Where the series retention's pass stopped: the end time and rowid of the last job it took. */
const SERIES_MARK = metaKeySql('prune.series_through');

/**
 * The prune's statements (exported for the test that every one of them uses an index: EXPLAIN QUERY PLAN), each
 * its table's owner's: a job run's figures, series, engines and NCCL cleared before its row goes (bindings last:
 * their foreign key); the series pass goes on from where the last batch stopped, kept in meta across restarts.
 */
export const PRUNE_SQL = {
  expired: RUN_PRUNE_SQL.expired,
  drop: [...ROLLUP_PRUNE_SQL.drop, ...COUNTED_PRUNE_SQL.drop, RUN_PRUNE_SQL.dropBindings],
  dropJob: RUN_PRUNE_SQL.dropJob,
  ended: RUN_PRUNE_SQL.ended,
  dropSeries: ROLLUP_PRUNE_SQL.dropSeries,
  mark: SERIES_MARK.get,
  setMark: SERIES_MARK.set,
} as const;

/**
 * Jobs a prune batch takes: short enough that a hook waiting on the lock
 * waits one batch (tens of ms: bench/store-years.ts), not the whole prune.
 * 500 held the lock up to 180 ms on a loaded machine.
 */
export const PRUNE_BATCH = 200;
/** Jobs a series batch looks at: most have no series left (an index probe each), so more of them fit in the same time. */
export const SERIES_BATCH = 1000;
