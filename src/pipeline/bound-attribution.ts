/**
 * The attribution transform of every provider that keeps its runs in the
 * store (Slurm, Kubernetes): GPU UUID -> open bindings -> the run's
 * attributes on every GPU point. The bindings are cached and reloaded only
 * when the store changed (SQLite's data_version), never queried per point.
 *
 * Shared GPUs (several open bindings: shards, MPS, time-slicing): each point
 * is emitted once per run with that run's attributes and the GPU's unsplit
 * value, and gpu.job.share says how much of the GPU each run gets: the run's
 * part of the per-process memory NVML reports on that GPU (pid -> run through
 * the provider's reading of /proc), or 1/N without process data. A process
 * point belongs to exactly one run: the one owning its pid.
 *
 * [attribution] job_labels = info: a GPU's own points go out once, with its
 * identity alone, and gpu.job.share is the one series per (GPU, run) that
 * carries the run's attributes (queries join on host.name and gpu.uuid); a
 * process's, an engine's and an NCCL rank's points keep their run's, as their
 * series are the process's anyway. omit_from_points leaves attributes off
 * every point but the share: batch.jobs keeps them all, for the ledger's
 * job-end summaries and cost rates.
 *
 * It writes nothing: the job ledger downstream keeps rollups, inventory and
 * job-end summaries from the batch's `jobs` (each run's share and partition),
 * and counts a process's own series (an engine's, an NCCL rank's) by the run
 * key stamped on its points (Point.job), whatever the provider: it reads no
 * provider's attribute keys. A job a point names in its source's words is the
 * one its scope's declared job hint names (jobHintOf), not a key known here.
 */
import type { AttributionProvider } from '../core/attribution.js';
import { identityOf } from '../core/gpu-identity.js';
import { PidGpus } from '../core/pid-gpus.js';
import type { Logger } from '../core/log.js';
import { GPU } from '../core/metrics/gpu-metrics.js';
import {
  isStable,
  stableAttributes,
  type Attributes,
  type Batch,
  type Emitter,
  type JobShare,
  type Point,
  type PointJob,
} from '../core/metrics/model.js';
import { jobHintOf, type MetricDef } from '../core/metrics/registry.js';
import { openBindings, type OpenBinding } from '../store/jobs.js';
import type { Db } from '../store/open.js';
import { migInstances } from '../store/gpus.js';
import { boundLabel } from '../core/bound-label.js';
import { DEFAULT_LIMITS, type BudgetLedger } from '../core/limits.js';
import { DEFAULT_JOB_LABELS, pointAttributes, type JobLabels } from '../core/job-labels.js';

/** [limits] label_length on the runs' attributes, and the ledger counting the values cut (against the run's user); [attribution]'s placing
 * of them. */
export interface LabelBound {
  readonly labelLength?: number;
  readonly budgets?: BudgetLedger;
  /** Default: every attribute on every point. */
  readonly jobLabels?: JobLabels;
}

export interface BoundAttributionOptions extends LabelBound {
  /** The provider's name, and the `scheduler` its runs carry in the store. */
  readonly name: string;
  /** A binding's attributes on the points of its GPU. */
  readonly attributesOf: (b: OpenBinding) => Attributes;
  /** What a run known only by its id (a process of a run not open here) gets. */
  readonly bareAttributes: (jobId: string) => Attributes;
  /** The run a process belongs to, as the provider reads /proc. */
  readonly pids: { job(pid: number): string | null };
  /** Who the store has a run as (undefined: not known): a job a user's file names must be that user's. */
  readonly jobOwner?: (jobId: string) => { user: string | null; uid: number | null } | undefined;
  readonly metrics: { readonly share: MetricDef; readonly outside: MetricDef; readonly bindings: MetricDef; readonly syncAge: MetricDef };
  /** When the scheduler last answered the provider (ms since epoch), for the self-metrics. */
  readonly lastSynced?: () => number | undefined;
}

interface Bound {
  jobId: string;
  runKey: string;
  /** Every attribute of the run: on gpu.job.share and batch.jobs. */
  attrs: Attributes;
  /** Those its points carry (omit_from_points). */
  pointAttrs: Attributes;
  /** The run's partition, for the ledger's prices (on its shares). */
  partition: string | null;
}

/** What a process's points (an engine's, an NCCL rank's) of one run get: its attributes, and its run key for the ledger. */
interface RunAdd {
  attrs: Attributes;
  job: PointJob;
}

const runAdd = (id: string, attrs: Attributes): RunAdd => ({ attrs, job: { id, added: Object.keys(attrs) } });

/** What one batch's point pass counts per GPU for the shares pass. */
interface GpuTally {
  /** GPU -> run -> bytes of its processes' memory. */
  readonly procMem: Map<string, Map<string, number>>;
  /** GPU -> processes outside their allocation. */
  readonly outside: Map<string, number>;
  /** GPUs whose process list this batch carries. */
  readonly withProcesses: Set<string>;
}

export class BoundAttribution implements AttributionProvider {
  readonly name: string;
  private byGpu = new Map<string, Bound[]>();
  /** Each open run's attributes (those points carry) and its GPUs on this node (for an engine's points: the engine's process is the run's).
   * */
  private byJob = new Map<string, { attrs: Attributes; gpus: string[] }>();
  /** "parent/GPU instance" -> the MIG device's UUID (null: ambiguous). */
  private migDevice = new Map<string, string | null>();
  private dataVersion = -1;
  private readonly pidGpus = new PidGpus();
  private readonly said = new Set<string>();
  /** What an engine's points of each job get (its run's attributes and GPUs here), made once until the bindings change. */
  private engineAdds = new Map<string, RunAdd>();
  /** An engine series' attributes with its job's added, by the series' own (stable) attributes: made once, not every tick. */
  private readonly withJob = new WeakMap<Attributes, { add: Attributes; attributes: Attributes }>();
  /** Whether a GPU's own points carry its runs' attributes (job_labels = points). */
  private readonly onGpuPoints: boolean;
  private readonly forPoints: (a: Attributes) => Attributes;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly o: BoundAttributionOptions,
  ) {
    this.name = o.name;
    const labels = o.jobLabels ?? DEFAULT_JOB_LABELS;
    this.onGpuPoints = labels.mode === 'points';
    this.forPoints = pointAttributes(labels.omit);
  }

  /** Forces a reload: a writer on this same connection (a reconciler) does not move data_version. */
  invalidate(): void {
    this.dataVersion = -1;
  }

  /** Reloads the bindings if another connection (a hook) committed since the last look. */
  private refresh(): void {
    const v = this.db.pragma('data_version', { simple: true }) as number;
    if (v === this.dataVersion) return;
    this.dataVersion = v;
    const m = new Map<string, Bound[]>();
    const jobs = new Map<string, { attrs: Attributes; gpus: string[] }>();
    for (const b of openBindings(this.db, this.o.name)) {
      const attrs = this.bounded(b, this.o.attributesOf(b));
      let l = m.get(b.gpuUuid);
      if (!l) m.set(b.gpuUuid, (l = []));
      if (!l.some((x) => x.jobId === b.jobId))
        l.push({ jobId: b.jobId, runKey: b.runKey, attrs, pointAttrs: this.forPoints(attrs), partition: this.boundPartition(b) });
      let j = jobs.get(b.jobId);
      // what the job's processes' points (an engine's, an NCCL rank's) carry
      if (!j)
        jobs.set(
          b.jobId,
          (j = {
            attrs: this.forPoints(b.jobAttrs ? this.bounded(b, this.o.attributesOf({ ...b, bindingAttrs: null })) : attrs),
            gpus: [],
          }),
        );
      if (!j.gpus.includes(b.gpuUuid)) j.gpus.push(b.gpuUuid);
    }
    for (const j of jobs.values()) j.gpus.sort();
    this.byGpu = m;
    this.byJob = jobs;
    this.engineAdds = new Map();
    // MIG devices by (parent, GPU instance), from the inventory the nvml plugin's points fill; a GPU instance split
    // into several compute instances has no one device and is left out
    const mig = new Map<string, string | null>();
    for (const r of migInstances(this.db)) {
      const k = `${r.parent}/${r.gi}`;
      mig.set(k, mig.has(k) && mig.get(k) !== r.uuid ? null : r.uuid);
    }
    this.migDevice = mig;
  }

  /**
   * A run's attributes with every string cut to label_length: a job's name,
   * comment or pod labels are its user's to set, and would otherwise ride on
   * every point of its GPUs (a 120 kB SLURM_JOB_NAME made /metrics 3.3 MB).
   */
  private bounded(b: OpenBinding, attrs: Attributes): Attributes {
    const max = this.o.labelLength ?? DEFAULT_LIMITS.labelLength;
    let out: Attributes | undefined;
    for (const k in attrs) {
      const v = attrs[k];
      if (typeof v !== 'string' || v.length <= max) continue;
      out ??= { ...attrs };
      out[k] = boundLabel(v, max);
      if (this.first(`cut\0${b.jobId}\0${b.runKey}\0${k}`)) {
        this.o.budgets?.hit('label_length', b.user ?? `job ${b.jobId}`, `job ${b.jobId}: ${k} is ${v.length} characters, cut to ${max}`);
      }
    }
    return out ?? attrs;
  }

  /** A run's partition as the store has it, cut to label_length as its attributes are. */
  private boundPartition(b: OpenBinding): string | null {
    const max = this.o.labelLength ?? DEFAULT_LIMITS.labelLength;
    return b.partition === null ? null : b.partition.length > max ? boundLabel(b.partition, max) : b.partition;
  }

  attribute(batch: Batch): Batch {
    if (
      !batch.points.some(
        (p) =>
          typeof p.attributes['gpu.uuid'] === 'string' ||
          p.metric.scope === 'nccl' ||
          (p.metric.scope === 'engine' && p.attributes['process.pid'] !== undefined),
      )
    )
      return batch;
    this.refresh();
    this.pidGpus.learn(batch.points, batch.time);
    // one name per MIG instance for both passes below: the device's UUID (no copy of the batch on a node without MIG)
    const points = this.migDevice.size ? batch.points.map((p) => this.migKeyed(p)) : batch.points;
    const tally: GpuTally = { procMem: new Map(), outside: new Map(), withProcesses: new Set() };
    const out = this.classify(points, batch.time, tally);
    const extra: Point[] = [];
    const jobs = this.shares(points, tally, extra);
    return { ...batch, points: extra.length ? [...out, ...extra] : out, jobs };
  }

  /**
   * Every point with its run's attributes: an engine's and an NCCL rank's by
   * their process, a process's by its pid, any other GPU point once per run
   * bound to its GPU. Counts into `tally` what the shares need. The points
   * themselves when none changed (an engine's page outside any job), not a copy.
   */
  private classify(points: readonly Point[], now: number, tally: GpuTally): readonly Point[] {
    // made once a point differs: the ones before it as they were, then every one
    let out: Point[] | undefined;
    const emit = (i: number, q: Point): void => {
      if (out) out.push(q);
      else if (q !== points[i]) (out = points.slice(0, i)).push(q);
    };
    // a rank's series are several points of one process: its run and GPUs looked up once a batch
    const ncclBy = new Map<string, { attrs: Attributes; job?: PointJob }>();
    // an engine's page is thousands of points of one process: its job looked up once a batch (/proc/<pid>/stat read
    // per point was 3,000 reads a tick for a user's page at its series budget)
    const engineBy = new Map<number, RunAdd | null>();
    // indexed loops over the points (an engine's page is thousands): an unoptimized for-of makes an object a point
    for (let i = 0; i < points.length; i++) {
      const p = points[i]!;
      if (p.metric.scope === 'engine') {
        emit(i, this.engineJob(p, engineBy));
        continue;
      }
      if (p.metric.scope === 'nccl') {
        emit(i, this.ncclJob(p, now, ncclBy));
        continue;
      }
      const uuid = p.attributes['gpu.uuid'];
      const jobs = typeof uuid === 'string' ? this.byGpu.get(uuid) : undefined;
      if (p.metric === GPU.procCount && typeof uuid === 'string') tally.withProcesses.add(uuid);
      if (p.metric === GPU.procMem && typeof uuid === 'string') {
        emit(i, this.processJob(p, uuid, jobs, tally));
        continue;
      }
      if (!jobs || jobs.length === 0 || !this.onGpuPoints) emit(i, p);
      else for (const j of jobs) emit(i, { ...p, attributes: { ...p.attributes, ...j.pointAttrs } });
    }
    return out ?? points;
  }

  /** A process's memory point: the run owning its pid if that run is bound to the GPU, else counted (and said once) as outside its
   * allocation. */
  private processJob(p: Point, uuid: string, jobs: readonly Bound[] | undefined, tally: GpuTally): Point {
    const pid = Number(p.attributes['process.pid']);
    const job = this.o.pids.job(pid);
    const bound = jobs?.find((j) => j.jobId === job);
    if (bound) {
      let m = tally.procMem.get(uuid);
      if (!m) tally.procMem.set(uuid, (m = new Map()));
      m.set(bound.jobId, (m.get(bound.jobId) ?? 0) + p.value);
      return { ...p, attributes: { ...p.attributes, ...bound.pointAttrs } };
    }
    tally.outside.set(uuid, (tally.outside.get(uuid) ?? 0) + 1);
    if (this.first(`${uuid}/${pid}/${job}`)) {
      this.log.warn('process on a GPU outside its allocation', {
        gpu: uuid,
        pid,
        job: job ?? 'none',
        bound: jobs?.map((j) => j.jobId).join(',') || 'none',
      });
    }
    return job ? { ...p, attributes: { ...p.attributes, ...this.o.bareAttributes(job) } } : p;
  }

  /**
   * Once per GPU of the batch (at its first utilization or memory point):
   * each bound run's gpu.job.share (its part of the processes' memory, else
   * 1/N), pushed onto `extra`, and the outside-allocation count where the
   * batch carries the GPU's process list. Returns batch.jobs.
   */
  private shares(points: readonly Point[], tally: GpuTally, extra: Point[]): Map<string, JobShare[]> {
    const seen = new Set<string>();
    const shares = new Map<string, JobShare[]>();
    for (let i = 0; i < points.length; i++) {
      const p = points[i]!;
      const uuid = p.attributes['gpu.uuid'];
      if (typeof uuid !== 'string' || seen.has(uuid) || (p.metric !== GPU.util && p.metric !== GPU.memUsed)) continue;
      seen.add(uuid);
      const identity = identityOf(p.attributes);
      const jobs = this.byGpu.get(uuid);
      if (jobs?.length) {
        const mem = tally.procMem.get(uuid);
        const total = mem ? [...mem.values()].reduce((a, b) => a + b, 0) : 0;
        const list: JobShare[] = [];
        for (const j of jobs) {
          const share = total > 0 ? (mem!.get(j.jobId) ?? 0) / total : 1 / jobs.length;
          extra.push({ metric: this.o.metrics.share, value: share, attributes: { ...identity, ...j.attrs } });
          list.push({ jobId: j.jobId, runKey: j.runKey, share, attributes: j.attrs, partition: j.partition });
        }
        shares.set(uuid, list);
      }
      if (tally.withProcesses.has(uuid))
        extra.push({ metric: this.o.metrics.outside, value: tally.outside.get(uuid) ?? 0, attributes: identity });
    }
    return shares;
  }

  /**
   * A MIG instance's point keyed by its parent GPU's UUID and GPU instance
   * (dcgm-exporter's series: it has no MIG device UUID) gets the device's own
   * UUID, as the nvml plugin keys it and the scheduler binds it, so the two
   * sources name one instance alike and its run is found.
   */
  private migKeyed(p: Point): Point {
    const a = p.attributes;
    const parent = a['gpu.mig.parent_uuid'];
    if (typeof parent !== 'string' || a['gpu.uuid'] !== parent || typeof a['gpu.mig.instance_id'] !== 'number') return p;
    const uuid = this.migDevice.get(`${parent}/${a['gpu.mig.instance_id']}`);
    return uuid ? { ...p, attributes: { ...a, 'gpu.uuid': uuid } } : p;
  }

  /** An engine's point: the run its listening process belongs to, its attributes and GPUs here. */
  private engineJob(p: Point, memo: Map<number, RunAdd | null>): Point {
    const pid = p.attributes['process.pid'];
    if (typeof pid !== 'number') return p;
    let add = memo.get(pid);
    if (add === undefined) {
      const job = this.o.pids.job(pid);
      add = job ? this.engineAdd(job) : null;
      memo.set(pid, add);
    }
    if (!add) return p;
    const a = p.attributes;
    const job = add.job;
    if (!isStable(a)) return { ...p, attributes: { ...a, ...add.attrs }, job };
    // the same series in the same job: the same object as the last tick's, and what the sinks made of it holds
    const had = this.withJob.get(a);
    if (had?.add === add.attrs) return { ...p, attributes: had.attributes, job };
    const attributes = stableAttributes({ ...a, ...add.attrs });
    this.withJob.set(a, { add: add.attrs, attributes });
    return { ...p, attributes, job };
  }

  private engineAdd(job: string): RunAdd {
    let add = this.engineAdds.get(job);
    if (!add) {
      const j = this.byJob.get(job);
      add = runAdd(job, j ? { ...j.attrs, 'gpu.uuids': j.gpus.join(',') } : this.o.bareAttributes(job));
      // jobs of processes that are gone stay until the bindings change: bounded all the same
      if (this.engineAdds.size >= 4096) this.engineAdds.clear();
      this.engineAdds.set(job, add);
    }
    return add;
  }

  /**
   * An NCCL rank's point: the run of the process that wrote it, else the job
   * the point's declared job hint names (its scope's jobHint, src/core/metrics/registry.ts: the NCCL
   * Inspector's dump folder, when the process has ended); the process's GPU from
   * NVML's process list, where the source named none.
   */
  private ncclJob(p: Point, now: number, memo: Map<string, { attrs: Attributes; job?: PointJob }>): Point {
    const a = p.attributes;
    const pid = a['process.pid'];
    const owner = a['process.owner'];
    const hintKey = jobHintOf(p.metric);
    const hint = hintKey === undefined ? undefined : a[hintKey];
    const k = `${String(pid)}\u0001${String(hint)}\u0001${a['gpu.uuid'] === undefined}\u0001${String(owner)}`;
    let add = memo.get(k);
    if (!add) {
      const job = (typeof pid === 'number' ? this.o.pids.job(pid) : undefined) ?? this.namedJob(hint, owner);
      const gpus = typeof pid === 'number' && a['gpu.uuid'] === undefined ? this.pidGpus.of(pid, now) : [];
      const j = job ? this.byJob.get(job) : undefined;
      const attrs = {
        ...(gpus.length === 1 ? { 'gpu.uuid': gpus[0]! } : gpus.length > 1 ? { 'gpu.uuids': gpus.join(',') } : {}),
        ...(j ? j.attrs : job ? this.o.bareAttributes(job) : {}),
      };
      add = job ? { attrs, job: { id: job, added: Object.keys(attrs) } } : { attrs };
      memo.set(k, add);
    }
    if (add.job) return { ...p, attributes: { ...a, ...add.attrs }, job: add.job };
    return Object.keys(add.attrs).length ? { ...p, attributes: { ...a, ...add.attrs } } : p;
  }

  /**
   * The job a file names (its folder, its writer's environment): the file's
   * owner's words, so it stands only when the store knows that job as the
   * owner's (an unknown id may be another node's job, or a future one). Root's
   * files are the admin's.
   */
  private namedJob(job: unknown, owner: unknown): string | undefined {
    if (typeof job !== 'string') return undefined;
    if (typeof owner !== 'string' || owner === 'root' || !this.o.jobOwner) return job;
    const o = this.o.jobOwner(job);
    if (o === undefined) return undefined;
    // an owner that is digits is a uid the user database could not name (NSS down): the store's uid speaks then
    const byUid = /^\d+$/.test(owner) && o.uid !== null;
    if (byUid ? String(o.uid) === owner : o.user === null || o.user === owner) return job;
    const user = o.user ?? `uid ${o.uid}`;
    const key = `named\u0001${owner}\u0001${job}`;
    if (this.first(key)) {
      this.o.budgets?.hit('not_owner', owner, `an NCCL file of ${owner} names job ${job}, ${user}'s: its figures are credited to no job`);
    }
    return undefined;
  }

  /**
   * Whether a key (a process outside its allocation, a user's file naming another's job) is new: said once.
   * Users make the keys (a new pid each), so the memory is bounded: past 4,096 it starts again.
   */
  private first(key: string): boolean {
    if (this.said.has(key)) return false;
    if (this.said.size >= 4096) this.said.clear();
    this.said.add(key);
    return true;
  }

  /** Open bindings, counted once per (run, GPU). */
  bindingCount(): number {
    this.refresh();
    let n = 0;
    for (const l of this.byGpu.values()) n += l.length;
    return n;
  }

  collectSelf(out: Emitter): void {
    out.add(this.o.metrics.bindings, this.bindingCount(), {});
    const ok = this.o.lastSynced?.();
    if (ok) out.add(this.o.metrics.syncAge, (Date.now() - ok) / 1000, {});
  }

  status(): string {
    return `${this.name}: ${this.bindingCount()} open binding(s)`;
  }
}
