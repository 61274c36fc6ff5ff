/**
 * The job ledger: the stage between attribution and the sinks. From the
 * attributed batch alone (its GPU points and the jobs holding each GPU, with
 * their shares) it keeps the per (job run x GPU) rollups and per-minute
 * series in the store, the GPU inventory, prunes old jobs, and emits a
 * job-end summary when a job leaves a GPU (per node: the node's last GPU).
 * It knows no scheduler: Slurm, Kubernetes or any later provider feeds it
 * the same way.
 */
import { gapCapMs } from '../figures/gap-cap.js';
import { identityOf } from '../core/gpu-identity.js';
import type { Logger } from '../core/log.js';
import { GPU } from '../core/metrics/gpu-metrics.js';
import type { Attributes, Batch, JobShare, Point } from '../core/metrics/model.js';
import { metric, type MetricDef } from '../core/metrics/registry.js';
import type { GpmFigures } from '../figures/rollup.js';
import { samplesFromPoints } from '../figures/samples.js';
import type { Db } from '../store/open.js';
import { DeltaRollups } from './deltas-rollup.js';
import { ENGINE_FIGURES } from './engine-rollup.js';
import { NCCL_FIGURES } from './nccl-rollup.js';
import { InventoryWriter } from './inventory.js';
import { PRUNE_BATCH, RollupWriter, SERIES_BATCH, type Finished, type RollupBinding } from './rollup-writer.js';
import { GPU_COUNT_ATTRIBUTE, nodeFigures, type SummaryGrain } from '../figures/node-summary.js';
import { runPrunePass, type PassReport, type PruneStep } from './prune-pass.js';
import { CostRates, type CostSource } from './cost-rate.js';

const SUMMARY = {
  energy: metric('gpu.job.energy'),
  duration: metric('gpu.job.duration'),
  util: metric('gpu.job.utilization'),
  mem: metric('gpu.job.memory.peak'),
};

/** The GPM means and bytes of a binding's end, by GpmFigures field: the metric and, for a pipe, its gpu.pipe. */
const GPM_SUMMARY: readonly [Exclude<keyof GpmFigures, 'seconds'>, MetricDef, Attributes][] = [
  ['smActive', metric('gpu.job.sm.active'), {}],
  ['smOccupancy', metric('gpu.job.sm.occupancy'), {}],
  ['tensorActive', metric('gpu.job.tensor.active'), {}],
  ['dramActive', metric('gpu.job.dram.active'), {}],
  ['fp64Active', metric('gpu.job.pipe.active'), { 'gpu.pipe': 'fp64' }],
  ['fp32Active', metric('gpu.job.pipe.active'), { 'gpu.pipe': 'fp32' }],
  ['fp16Active', metric('gpu.job.pipe.active'), { 'gpu.pipe': 'fp16' }],
  ['nvlinkBytes', metric('gpu.job.nvlink.io'), {}],
  ['pcieBytes', metric('gpu.job.pcie.io'), {}],
];

/** The job-end summaries of a GPU without GPM (the GPM means and bytes are emitted only where the GPU counted them). */
export const SUMMARY_METRICS_WITHOUT_GPM = [...new Set(Object.values(SUMMARY).map((d) => d.name))];

/** Registry names of what the ledger emits. */
export const LEDGER_METRICS = [...new Set([...Object.values(SUMMARY), ...GPM_SUMMARY.map(([, d]) => d)].map((d) => d.name))];

/** The summaries every grain has: energy, GPU-seconds, and the utilization mean and memory peak where the GPU reads them. */
function summaryPoints(energyJ: number, seconds: number, util: number | null, memPeak: number | null, a: Attributes): Point[] {
  return [
    { metric: SUMMARY.energy, value: energyJ, attributes: a },
    { metric: SUMMARY.duration, value: seconds, attributes: a },
    ...(util !== null ? [{ metric: SUMMARY.util, value: util, attributes: a }] : []),
    ...(memPeak !== null ? [{ metric: SUMMARY.mem, value: memPeak, attributes: a }] : []),
  ];
}

const SM_ACTIVE = GPM_SUMMARY.find(([k]) => k === 'smActive')![1];

const sameRun = (a: JobShare, b: JobShare) => a.jobId === b.jobId && a.runKey === b.runKey;
const runId = (j: JobShare) => `${j.jobId}\0${j.runKey}`;
const currencyOf = (a: Attributes): Attributes => (a['cost.currency'] !== undefined ? { 'cost.currency': a['cost.currency'] } : {});

/** A binding's GPM summary points: the figures the GPU counted (none without GPM). */
function gpmSummary(f: GpmFigures | null, a: Attributes): Point[] {
  if (!f) return [];
  return GPM_SUMMARY.flatMap(([k, d, extra]) => (f[k] === null ? [] : [{ metric: d, value: f[k], attributes: { ...a, ...extra } }]));
}

const PRUNE_EVERY_MS = 3_600_000;

export interface Retention {
  /** Per-minute series of ended jobs are dropped after this. */
  seriesMs: number;
  /** Ended jobs and their figures are dropped after this. */
  jobsMs: number;
}

/**
 * A prune's steps, in order: whole jobs past the job retention first (the
 * series step then has fewer to look at), the series of jobs past the series
 * retention, the counted series' last values unseen for a day.
 */
export function pruneSteps(
  rollups: RollupWriter,
  retention: Retention,
  now: number,
  counted: readonly { prune(now: number, limit?: number): number }[] = [],
): PruneStep[] {
  return [
    { name: 'jobs', batch: () => rollups.pruneJobs(retention.jobsMs, now, PRUNE_BATCH), limit: PRUNE_BATCH },
    { name: 'series', batch: () => rollups.pruneSeries(retention.seriesMs, now, SERIES_BATCH), limit: SERIES_BATCH },
    ...counted.map((c, i) => ({ name: `counted series ${i}`, batch: () => c.prune(now, PRUNE_BATCH), limit: PRUNE_BATCH })),
  ];
}

export class JobLedger {
  private readonly rollups: RollupWriter;
  private readonly inventory: InventoryWriter;
  /** The jobs each GPU had in the last batch that carried it. */
  private readonly holders = new Map<string, readonly JobShare[]>();
  private lastPrune = 0;
  /** The prune pass running in the background (src/ledger/prune-pass.ts), if one is. */
  private pass: Promise<PassReport | undefined> | undefined;
  /** The error of the rollup writes while they fail ('' while they work). */
  private writeError = '';
  /** The figures counted from the sources' own cumulative series: the inference engines', NCCL's. */
  private readonly counted: readonly DeltaRollups<unknown>[];
  /** Cost rates and job-end cost and CO2e, with [jobs] prices (src/ledger/cost-rate.ts). */
  private readonly cost: CostRates | undefined;
  /** Per node: the runs that left some of the node's GPUs and hold others still, with their figures of those they left. */
  private readonly leaving = new Map<string, { share: JobShare; ends: Finished[] }>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly retention: Retention,
    cost?: CostSource,
    /** Per GPU (job_labels = points) or per node (info): src/figures/node-summary.ts. */
    private readonly grain: SummaryGrain = 'gpu',
  ) {
    this.cost = cost && new CostRates(cost);
    this.rollups = new RollupWriter(db);
    this.counted = [new DeltaRollups(db, log, ENGINE_FIGURES), new DeltaRollups(db, log, NCCL_FIGURES)];
    this.inventory = new InventoryWriter(db, log);
  }

  /** Takes an attributed batch; returns the points to send with it (job-end summaries). */
  observe(batch: Batch): Point[] {
    for (const c of this.counted) c.observe(batch.points, batch.time);
    if (!batch.points.some((p) => p.metric.scope === 'gpu' && typeof p.attributes['gpu.uuid'] === 'string')) return [];
    this.inventory.observe(batch.points);
    const samples = samplesFromPoints(batch.points, batch.time, (p) => p.metric.name, batch.mono);
    const identities = new Map<string, Attributes>();
    for (const p of batch.points) {
      const uuid = p.attributes['gpu.uuid'];
      if (typeof uuid === 'string' && !identities.has(uuid) && (p.metric === GPU.util || p.metric === GPU.memUsed))
        identities.set(uuid, identityOf(p.attributes));
    }
    const summaries = this.endedJobs(identities, batch.jobs);
    // the rollups see what the sinks see: the same jobs and shares
    const bound = new Map<string, RollupBinding[]>();
    for (const uuid of identities.keys()) {
      const jobs = batch.jobs?.get(uuid);
      if (jobs?.length)
        bound.set(
          uuid,
          jobs.map((j) => ({ jobId: j.jobId, runKey: j.runKey, share: j.share })),
        );
    }
    if (bound.size) {
      try {
        this.rollups.record(samples, identities, bound, gapCapMs(batch.intervalMs), batch.time);
        if (this.writeError) this.log.info('job ledger: writing again', { after: this.writeError });
        this.writeError = '';
      } catch (e) {
        // a full disk or a lock: said when it starts (or changes) and when it ends, not every tick
        const msg = (e as Error).message;
        if (msg !== this.writeError)
          this.log.error('cannot update the job rollups: the samples of this tick are not in the job reports', { error: msg });
        this.writeError = msg;
      }
    }
    this.prune(batch.time);
    if (this.cost) summaries.push(...this.cost.observe(batch));
    return summaries;
  }

  /**
   * Jobs that held a GPU of this batch last time and hold it no more: their final figures, once (per GPU; per node,
   * once the run holds none of the node's GPUs).
   */
  private endedJobs(gpus: ReadonlyMap<string, Attributes>, jobs: Batch['jobs']): Point[] {
    const out: Point[] = [];
    for (const uuid of gpus.keys()) {
      const now = jobs?.get(uuid) ?? [];
      for (const j of this.holders.get(uuid) ?? []) {
        if (now.some((x) => sameRun(x, j))) continue;
        const f = this.rollups.finish(j.jobId, j.runKey, uuid);
        if (!f) continue;
        if (this.grain === 'gpu') out.push(...this.gpuSummary(f, j));
        else {
          const k = runId(j);
          const leaving = this.leaving.get(k);
          if (leaving) leaving.ends.push(f);
          else this.leaving.set(k, { share: j, ends: [f] });
        }
      }
      if (now.length) this.holders.set(uuid, now);
      else this.holders.delete(uuid);
    }
    for (const [k, { share, ends }] of this.leaving) {
      if ([...this.holders.values()].some((list) => list.some((x) => sameRun(x, share)))) continue;
      this.leaving.delete(k);
      out.push(...this.nodeSummary(share, ends));
    }
    return out;
  }

  /** A run's job-end summary on one GPU: the GPU's identity and the run's attributes. */
  private gpuSummary(f: Finished, j: JobShare): Point[] {
    const a = { ...f.identity, ...j.attributes };
    return [
      ...summaryPoints(f.figures.energyJ, f.figures.seconds * f.figures.shareMean, f.figures.utilMean, f.figures.memUsedMax, a),
      ...gpmSummary(f.figures.gpm, a),
      ...(this.cost?.jobEnd(f.figures, a, j.partition ?? null) ?? []),
    ];
  }

  /** A run's job-end summary on this node, once it holds none of the node's GPUs: the run's attributes and gpu.count. */
  private nodeSummary(j: JobShare, ends: readonly Finished[]): Point[] {
    const n = nodeFigures(ends.map((e) => e.figures));
    const a = { ...j.attributes, [GPU_COUNT_ATTRIBUTE]: n.gpus };
    // each GPU priced as its own summary is (its model's price), the node's figure their sum
    const costs = new Map<MetricDef, Point>();
    for (const e of ends) {
      for (const p of this.cost?.jobEnd(e.figures, { ...e.identity, ...j.attributes }, j.partition ?? null) ?? []) {
        const sum = costs.get(p.metric);
        if (sum) costs.set(p.metric, { ...sum, value: (sum.value as number) + (p.value as number) });
        else costs.set(p.metric, { metric: p.metric, value: p.value, attributes: { ...a, ...currencyOf(p.attributes) } });
      }
    }
    return [
      ...summaryPoints(n.energyJ, n.gpuSeconds, n.utilMean, n.memUsedMax, a),
      ...(n.smActive !== null ? [{ metric: SM_ACTIVE, value: n.smActive, attributes: a }] : []),
      ...costs.values(),
    ];
  }

  /** The prune pass under way, if one is: resolves with what it did (undefined if it failed: said in the log). */
  pruning(): Promise<PassReport | undefined> | undefined {
    return this.pass;
  }

  /**
   * Hourly, started from a tick and run beside the next ones: batches of a
   * few hundred jobs in short transactions, then the space given back. A pass
   * still running when the hour comes round is left to finish.
   */
  private prune(now: number): void {
    if (now - this.lastPrune <= PRUNE_EVERY_MS || this.pass) return;
    this.lastPrune = now;
    const pass = runPrunePass(this.db, pruneSteps(this.rollups, this.retention, now, this.counted))
      .then((r) => {
        if (r.rows.jobs || r.pagesGivenBack) {
          this.log.info('pruned old jobs', {
            jobs: r.rows.jobs,
            seriesOfJobs: r.rows.series,
            batches: r.batches,
            longestBatchMs: Math.round(r.longestBatchMs),
            mbGivenBack: +(
              (r.pagesGivenBack * (this.db.open ? (this.db.pragma('page_size', { simple: true }) as number) : 4096)) /
              1048576
            ).toFixed(1),
            seconds: +(r.ms / 1000).toFixed(1),
          });
        }
        return r;
      })
      .catch((e: Error) => {
        this.log.once(`prune-${e.message}`, 'warn', 'cannot prune old jobs', { error: e.message });
        return undefined;
      })
      .finally(() => {
        if (this.pass === pass) this.pass = undefined;
      });
    this.pass = pass;
  }
}
