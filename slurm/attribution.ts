/**
 * The "slurm" attribution provider: GPU UUID -> open bindings -> slurm.*
 * attributes on every GPU point. The bindings are cached and reloaded only
 * when the store changed (SQLite's data_version), never queried per point.
 *
 * Shared GPUs (several open bindings: shards, MPS): each point is emitted
 * once per job with that job's attributes and the GPU's unsplit value, and
 * gpu.job.share says how much of the GPU each job gets: the job's part of the
 * per-process memory NVML reports on that GPU (pid -> job through cgroup or
 * environ), or 1/N without process data. A process point belongs to exactly
 * one job: the one owning its pid.
 *
 * The provider also writes the node's GPU inventory (UUID, minor, PCI id,
 * MIG parent) that the hooks use to turn GRES indices into UUIDs, and runs
 * the reconciler.
 */
import type { AttributionProvider } from '../src/attribution/provider.js';
import type { Logger } from '../src/log.js';
import { GPU } from '../src/metrics/gpu-metrics.js';
import { metric } from '../src/metrics/registry.js';
import type { Attributes, Batch, Emitter, Point } from '../src/metrics/model.js';
import { openBindings, upsertInventory, type InventoryGpu, type OpenBinding } from '../src/store/jobs.js';
import type { Db } from '../src/store/open.js';
import { samplesFromPoints } from '../src/jobs/samples.js';
import { PidJobCache } from './proc-job.js';
import { RollupWriter, type RollupBinding } from './rollups.js';
import type { Reconciler } from './reconciler.js';

const SHARE = metric('gpu.job.share');
const OUTSIDE = metric('gpu.process.outside_allocation');
const BINDINGS = metric('l9gpu.slurm.bindings');
const AGE = metric('l9gpu.slurm.reconcile.age');

interface Bound {
  jobId: string;
  runKey: string;
  attrs: Attributes;
}

const SUMMARY = {
  energy: metric('gpu.job.energy'),
  duration: metric('gpu.job.duration'),
  util: metric('gpu.job.utilization'),
  mem: metric('gpu.job.memory.peak'),
};
const PRUNE_EVERY_MS = 3_600_000;

export interface RollupOptions {
  seriesRetentionMs: number;
  jobRetentionMs: number;
}

export function jobAttributes(b: OpenBinding): Attributes {
  const a: Attributes = { 'slurm.job.id': b.jobId };
  if (b.user) a['slurm.user'] = b.user;
  if (b.account) a['slurm.account'] = b.account;
  if (b.partition) a['slurm.partition'] = b.partition;
  if (b.name) a['slurm.job.name'] = b.name;
  if (b.arrayJobId) a['slurm.array.job.id'] = b.arrayJobId;
  if (b.arrayTaskId) a['slurm.array.task.id'] = b.arrayTaskId;
  if (b.cluster) a['slurm.cluster.name'] = b.cluster;
  return a;
}

export class SlurmAttribution implements AttributionProvider {
  readonly name = 'slurm' as const;
  private byGpu = new Map<string, Bound[]>();
  private dataVersion = -1;
  private readonly known = new Map<string, string>();
  private readonly pids = new PidJobCache();
  private timer: NodeJS.Timeout | undefined;
  private reconciling = false;
  private readonly said = new Set<string>();
  private readonly rollups: RollupWriter;
  /** Job-end summaries waiting for the next batch. */
  private pendingSummary: Point[] = [];
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly reconciler: Reconciler | undefined,
    reconcileMs: number,
    private readonly retention: RollupOptions = { seriesRetentionMs: 30 * 86_400_000, jobRetentionMs: 365 * 86_400_000 },
  ) {
    this.rollups = new RollupWriter(db);
    if (reconciler) {
      const tick = () => {
        if (this.reconciling) return;
        this.reconciling = true;
        reconciler
          .reconcileOnce()
          .catch(() => {}) // logged by the reconciler; the bindings stay as they are
          .finally(() => {
            this.reconciling = false;
            // data_version only moves for other connections' commits; the reconciler shares ours
            this.dataVersion = -1;
          });
      };
      tick();
      this.timer = setInterval(tick, reconcileMs);
    }
  }

  /** Reloads the bindings if another connection (a hook, the reconciler) committed since the last look. */
  private refresh(): void {
    const v = this.db.pragma('data_version', { simple: true }) as number;
    if (v === this.dataVersion) return;
    this.dataVersion = v;
    const m = new Map<string, Bound[]>();
    for (const b of openBindings(this.db)) {
      let l = m.get(b.gpuUuid);
      if (!l) m.set(b.gpuUuid, (l = []));
      if (!l.some((x) => x.jobId === b.jobId)) l.push({ jobId: b.jobId, runKey: b.runKey, attrs: jobAttributes(b) });
    }
    // bindings that closed since the last look: their job-end summary, once
    for (const [uuid, old] of this.byGpu) {
      for (const b of old) {
        if (m.get(uuid)?.some((x) => x.jobId === b.jobId && x.runKey === b.runKey)) continue;
        const f = this.rollups.finish(b.jobId, b.runKey, uuid);
        if (!f) continue;
        const a = { ...f.identity, ...b.attrs };
        this.pendingSummary.push(
          { metric: SUMMARY.energy, value: f.figures.energyJ, attributes: a },
          { metric: SUMMARY.duration, value: f.figures.seconds * f.figures.shareMean, attributes: a },
          ...(f.figures.utilMean !== null ? [{ metric: SUMMARY.util, value: f.figures.utilMean, attributes: a }] : []),
          ...(f.figures.memUsedMax !== null ? [{ metric: SUMMARY.mem, value: f.figures.memUsedMax, attributes: a }] : []),
        );
      }
    }
    this.byGpu = m;
  }

  attribute(batch: Batch): Batch {
    if (!batch.points.some((p) => typeof p.attributes['gpu.uuid'] === 'string')) return batch;
    this.observeInventory(batch.points);
    this.refresh();
    const out: Point[] = [];
    const procMem = new Map<string, Map<string, number>>(); // gpu -> job -> bytes
    const outside = new Map<string, number>();
    const withProcesses = new Set<string>(); // GPUs whose process list this batch carries
    for (const p of batch.points) {
      const uuid = p.attributes['gpu.uuid'];
      const jobs = typeof uuid === 'string' ? this.byGpu.get(uuid) : undefined;
      if (p.metric === GPU.procCount && typeof uuid === 'string') withProcesses.add(uuid);
      if (p.metric === GPU.procMem && typeof uuid === 'string') {
        const pid = Number(p.attributes['process.pid']);
        const job = this.pids.job(pid);
        const bound = jobs?.find((j) => j.jobId === job);
        if (bound) {
          let m = procMem.get(uuid);
          if (!m) procMem.set(uuid, (m = new Map()));
          m.set(bound.jobId, (m.get(bound.jobId) ?? 0) + p.value);
          out.push({ ...p, attributes: { ...p.attributes, ...bound.attrs } });
        } else {
          outside.set(uuid, (outside.get(uuid) ?? 0) + 1);
          const key = `${uuid}/${pid}/${job}`;
          if (!this.said.has(key)) {
            this.said.add(key);
            this.log.warn('process on a GPU outside its allocation', { gpu: uuid, pid, job: job ?? 'none', bound: jobs?.map((j) => j.jobId).join(',') || 'none' });
          }
          out.push(job ? { ...p, attributes: { ...p.attributes, 'slurm.job.id': job } } : p);
        }
        continue;
      }
      if (!jobs || jobs.length === 0) out.push(p);
      else for (const j of jobs) out.push({ ...p, attributes: { ...p.attributes, ...j.attrs } });
    }
    // once per GPU of the batch: shares and the outside-allocation count
    const seen = new Set<string>();
    const shares = new Map<string, RollupBinding[]>();
    const identities = new Map<string, Attributes>();
    for (const p of batch.points) {
      const uuid = p.attributes['gpu.uuid'];
      if (typeof uuid !== 'string' || seen.has(uuid) || (p.metric !== GPU.util && p.metric !== GPU.memUsed)) continue;
      seen.add(uuid);
      const identity = identityOf(p.attributes);
      const jobs = this.byGpu.get(uuid);
      identities.set(uuid, identity);
      if (jobs?.length) {
        const mem = procMem.get(uuid);
        const total = mem ? [...mem.values()].reduce((a, b) => a + b, 0) : 0;
        const list: RollupBinding[] = [];
        for (const j of jobs) {
          const share = total > 0 ? (mem!.get(j.jobId) ?? 0) / total : 1 / jobs.length;
          out.push({ metric: SHARE, value: share, attributes: { ...identity, ...j.attrs } });
          list.push({ jobId: j.jobId, runKey: j.runKey, share });
        }
        shares.set(uuid, list);
      }
      if (withProcesses.has(uuid)) out.push({ metric: OUTSIDE, value: outside.get(uuid) ?? 0, attributes: identity });
    }
    // the rollups see what the sinks see: the same bindings and shares
    if (shares.size) {
      try {
        this.rollups.record(samplesFromPoints(batch.points, batch.time, (p) => p.metric.name), identities, shares, 2.5 * batch.intervalMs, batch.time);
      } catch (e) {
        this.log.once(`rollup-${(e as Error).message}`, 'error', 'cannot update the job rollups', { error: (e as Error).message });
      }
    }
    if (this.pendingSummary.length) {
      out.push(...this.pendingSummary);
      this.pendingSummary = [];
    }
    if (batch.time - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = batch.time;
      try {
        this.rollups.prune(this.retention.seriesRetentionMs, this.retention.jobRetentionMs, batch.time);
      } catch (e) {
        this.log.once(`prune-${(e as Error).message}`, 'warn', 'cannot prune old jobs', { error: (e as Error).message });
      }
    }
    return { ...batch, points: out };
  }

  /** Keeps the gpus table current: the hooks map GRES indices to UUIDs through it. Written only on change. */
  private observeInventory(points: readonly Point[]): void {
    const changed: InventoryGpu[] = [];
    for (const p of points) {
      if (p.metric !== GPU.info && p.metric !== GPU.memTotal) continue;
      const a = p.attributes;
      const uuid = a['gpu.uuid'] as string;
      const minor = typeof a['gpu.device.minor'] === 'number' ? a['gpu.device.minor'] : null;
      const g: InventoryGpu = {
        uuid,
        vendor: String(a['gpu.vendor']),
        vendorIndex: typeof a['gpu.index'] === 'number' ? a['gpu.index'] : null,
        minor,
        pciBusId: (a['gpu.pci.bus_id'] as string) ?? null,
        model: (a['gpu.model'] as string) ?? null,
        migParent: (a['gpu.mig.parent_uuid'] as string) ?? null,
        migGi: typeof a['gpu.mig.instance_id'] === 'number' ? a['gpu.mig.instance_id'] : null,
        migCi: typeof a['gpu.mig.compute_instance_id'] === 'number' ? a['gpu.mig.compute_instance_id'] : null,
      };
      const key = JSON.stringify(g);
      const prev = this.known.get(uuid);
      // gpu.info (with the minor) wins over memory.total (without) for the same GPU
      if (prev === key || (prev && minor === null && p.metric === GPU.memTotal)) continue;
      this.known.set(uuid, key);
      changed.push(g);
    }
    if (changed.length) {
      try {
        upsertInventory(this.db, changed);
      } catch (e) {
        for (const g of changed) this.known.delete(g.uuid);
        this.log.once(`inventory-${(e as Error).message}`, 'error', 'cannot write the GPU inventory', { error: (e as Error).message });
      }
    }
  }

  collectSelf(out: Emitter): void {
    this.refresh();
    let n = 0;
    for (const l of this.byGpu.values()) n += l.length;
    out.add(BINDINGS, n, {});
    if (this.reconciler?.lastOk) out.add(AGE, (Date.now() - this.reconciler.lastOk) / 1000, {});
  }

  status(): string {
    this.refresh();
    return `slurm: ${[...this.byGpu.values()].reduce((a, l) => a + l.length, 0)} open binding(s)`;
  }

  close(): void {
    clearInterval(this.timer);
    this.db.close();
  }
}

function identityOf(a: Attributes): Attributes {
  const id: Attributes = {};
  for (const k of ['gpu.index', 'gpu.uuid', 'gpu.model', 'gpu.vendor', 'gpu.pci.bus_id', 'gpu.mig.instance_id', 'gpu.mig.compute_instance_id', 'gpu.mig.parent_uuid']) if (k in a) id[k] = a[k]!;
  return id;
}
