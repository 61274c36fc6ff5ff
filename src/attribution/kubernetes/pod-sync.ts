/**
 * Keeps the store's Kubernetes runs in step with the kubelet: every refresh
 * asks the pod-resources API which containers hold which devices, matches the
 * device ids to GPU UUIDs, and opens, updates and closes runs (one per pod:
 * job id "<namespace>/<pod>", run key the pod's uid) and their bindings, as
 * the Slurm hooks and reconciler do for jobs. The ledger then keeps per-pod
 * rollups and sends a pod's job-end summary when it goes away, exactly as
 * for a Slurm job. While the kubelet does not answer (a restart, the socket
 * gone), the last known bindings stay: a pod that ended meanwhile is closed
 * at the first answer after. At a start, though, the store's runs are the
 * previous daemon's: they apply only once the kubelet has answered (and ended
 * those of pods gone), as the Slurm provider reconciles first.
 */
import type { Logger } from '../../core/log.js';
import type { Attributes, Point } from '../../core/metrics/model.js';
import { inventoryOf } from '../../ledger/inventory.js';
import {
  closeBindingsExcept,
  inventory,
  openRunsOf,
  recordEnd,
  recordStart,
  type GpuBinding,
  type InventoryGpu,
} from '../../store/jobs.js';
import type { Db } from '../../store/open.js';
import { isGpuResource, KnownGpus, matchDevice } from './device-match.js';
import { fetchPodList, parsePodList, type PodMeta, type PodSource } from './pod-meta.js';
import type { ContainerDevices, PodResources, PodResourcesClient } from './podresources-client.js';

export const SCHEDULER = 'kubernetes';

export interface PodSyncOptions {
  readonly db: Db;
  readonly client: Pick<PodResourcesClient, 'list' | 'allocatable' | 'socket'>;
  /** null: pods_source = none. */
  readonly pods: PodSource | null;
  readonly resources: readonly string[];
  readonly draDrivers: readonly string[];
  readonly nodeName: string;
  readonly metadataIntervalMs: number;
  readonly log: Logger;
  /** Called after the store's runs changed (the transform reloads). */
  readonly onChange?: () => void;
}

/** A pod holding GPUs, as the last List said. */
export interface HeldPod {
  key: string;
  namespace: string;
  name: string;
  /** GPU UUID -> the containers holding it and whether it is a shared (time-sliced) replica. */
  gpus: Map<string, { containers: Set<string>; shared: boolean }>;
}

export interface Unmatched {
  readonly pod: string;
  readonly container: string;
  readonly resource: string;
  readonly id: string;
  readonly why: string;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);

/** The GPUs each listed pod holds (pods without GPUs left out), and every GPU device id that matched no GPU. */
export function matchPods(
  list: readonly PodResources[],
  gpus: KnownGpus,
  resources: readonly string[],
  draDrivers: readonly string[],
): { held: HeldPod[]; unmatched: Unmatched[] } {
  const held: HeldPod[] = [];
  const unmatched: Unmatched[] = [];
  for (const pod of list) {
    const key = `${pod.namespace}/${pod.name}`;
    const mine = new Map<string, { containers: Set<string>; shared: boolean }>();
    const add = (container: string, resource: string, id: string, dra = false) => {
      const m = matchDevice(resource, id, gpus, dra);
      if (m.uuid === undefined) return void unmatched.push({ pod: key, container, resource, id, why: m.why });
      let g = mine.get(m.uuid);
      if (!g) mine.set(m.uuid, (g = { containers: new Set(), shared: false }));
      g.containers.add(container);
      g.shared ||= m.shared;
    };
    for (const c of pod.containers) {
      for (const d of c.devices)
        if (isGpuResource(d.resource_name, resources)) for (const id of d.device_ids) add(c.name, d.resource_name, id);
      // the kubelet lists the claims of this node's pods only: their devices are this node's, whatever the pool
      for (const dr of c.dynamic_resources)
        for (const r of dr.claim_resources)
          if (draDrivers.includes(r.driver_name) && r.device_name) add(c.name, r.driver_name, r.device_name, true);
    }
    if (mine.size) held.push({ key, namespace: pod.namespace, name: pod.name, gpus: mine });
  }
  return { held, unmatched };
}

export class PodSync {
  readonly gpus = new KnownGpus();
  private list: PodResources[] | undefined;
  private meta = new Map<string, PodMeta>();
  private metaAt = 0;
  private metaRetryAt = 0;
  private metaFailures = 0;
  private allocatableAt = 0;
  private held: HeldPod[] = [];
  private unmatched: Unmatched[] = [];
  private written = '';
  lastOk: number | undefined;
  /**
   * The store's runs agree with a kubelet answer of this daemon's life. Until then they are the
   * previous run's (pods ended while the daemon was down, all of them after a reboot): not applied.
   */
  reconciled = false;
  private lastError = '';
  private metaError = '';
  private running: Promise<void> | undefined;

  constructor(private readonly o: PodSyncOptions) {
    this.gpus.learn(inventory(o.db));
  }

  /** One refresh at a time; a second caller waits for the one under way. */
  refresh(now = Date.now()): Promise<void> {
    this.running ??= this.refreshOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async refreshOnce(now: number): Promise<void> {
    try {
      this.list = await this.o.client.list();
      if (this.lastError) this.o.log.info("the kubelet's pod-resources API answers again", { after: this.lastError });
      this.lastError = '';
      this.lastOk = Date.now();
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.lastError)
        this.o.log.warn(
          this.reconciled
            ? "the kubelet's pod-resources API does not answer: the last known pod bindings are kept"
            : "the kubelet's pod-resources API does not answer: GPU points carry no pod until it does " +
                "(the store's pods are the previous run's, unconfirmed)",
          { error: msg },
        );
      this.lastError = msg;
      return;
    }
    if (now - this.allocatableAt >= this.o.metadataIntervalMs) {
      this.allocatableAt = now;
      // before any pod lands on them: GPU devices the kubelet hands out that no GPU of this node answers to (an old
      // kubelet without the call attributes just the same)
      this.warnUnknownDevices(await this.o.client.allocatable().catch(() => []));
    }
    this.held = this.match();
    await this.refreshMeta(now);
    this.apply(now);
  }

  private warnUnknownDevices(devices: readonly ContainerDevices[]): void {
    const ids = devices
      .filter((d) => isGpuResource(d.resource_name, this.o.resources))
      .flatMap((d) => d.device_ids.map((id) => ({ resource: d.resource_name, id, m: matchDevice(d.resource_name, id, this.gpus) })));
    const bad = ids.filter((x) => x.m.uuid === undefined);
    if (bad.length && this.gpus.size)
      this.o.log.once(
        `k8s-alloc-${bad.map((x) => x.id).join()}`,
        'warn',
        'the kubelet offers GPU devices that match no GPU of this node: pods given them will not be attributed',
        {
          devices: bad
            .slice(0, 5)
            .map((x) => `${x.resource}=${x.id}: ${(x.m as { why: string }).why}`)
            .join('; '),
          of: ids.length,
        },
      );
  }

  /** Pod metadata when it is due, or when a pod holding GPUs is not known yet or has ended. */
  private async refreshMeta(now: number): Promise<void> {
    if (!this.o.pods || now < this.metaRetryAt) return;
    const openKeys = openRunsOf(this.o.db, SCHEDULER).map((r) => r.jobId);
    const heldKeys = new Set(this.held.map((p) => p.key));
    const due =
      now - this.metaAt >= this.o.metadataIntervalMs ||
      this.held.some((p) => !this.meta.has(p.key)) ||
      openKeys.some((k) => !heldKeys.has(k));
    if (!due) return;
    try {
      const { pods, skipped } = parsePodList(await fetchPodList(this.o.pods), this.o.pods.labels);
      if (skipped.length)
        this.o.log.once(`k8s-skipped-${skipped.join()}`, 'warn', 'pod list items without metadata were left out', {
          items: skipped.slice(0, 5).join('; '),
        });
      this.meta = pods;
      this.metaAt = now;
      this.metaFailures = 0;
      if (this.metaError) this.o.log.info('pod metadata can be read again', { after: this.metaError });
      this.metaError = '';
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.metaError)
        this.o.log.warn('cannot read pod metadata: pods are named without uid, owners and labels until it can', { error: msg });
      this.metaError = msg;
      // 1 s, 2 s, 4 s ... 5 min: an API server that refuses is not asked every refresh
      this.metaRetryAt = now + Math.min(300_000, 1000 * 2 ** Math.min(this.metaFailures++, 9));
    }
  }

  private match(): HeldPod[] {
    const { held, unmatched } = matchPods(this.list ?? [], this.gpus, this.o.resources, this.o.draDrivers);
    this.unmatched = unmatched;
    return held;
  }

  /**
   * Learns GPUs from a batch's points: an id that names a GPU by PCI address,
   * index or MIG parent matches once that GPU has reported, so the first
   * batch after a start is attributed without waiting for the next refresh.
   */
  learn(points: readonly Point[]): void {
    const found: InventoryGpu[] = [];
    for (const p of points) {
      const g = inventoryOf(p);
      if (g) found.push(g);
    }
    if (found.length && this.gpus.learn(found) && this.unmatched.length && this.list) {
      this.held = this.match();
      this.apply(Date.now());
    }
  }

  /** Writes what changed since the last write: runs opened, bindings added or closed, runs ended. */
  private apply(now: number): void {
    const desired = this.held.map((p) => {
      const meta = this.meta.get(p.key);
      const attrs: Attributes = {
        'k8s.namespace.name': p.namespace,
        'k8s.pod.name': p.name,
        'k8s.node.name': this.o.nodeName,
        ...meta?.attrs,
      };
      const gpus: GpuBinding[] = [...p.gpus].map(([uuid, g]) => ({
        uuid,
        shared: g.shared,
        attrs: { 'k8s.container.name': [...g.containers].sort().join(',') },
      }));
      return { p, meta, attrs, gpus };
    });
    const print = JSON.stringify(desired.map((d) => [d.p.key, d.attrs, d.gpus, d.meta?.phase]));
    if (print === this.written) return;
    const db = this.o.db;
    const runs = openRunsOf(db, SCHEDULER);
    const open = new Map(runs.map((r) => [r.jobId, r.runKey]));
    const started = new Map(runs.map((r) => [r.jobId, r.start]));
    const end = (jobId: string, runKey: string, state: string) =>
      recordEnd(db, { jobId, runKey, scheduler: SCHEDULER }, { endTime: now, state }, [], 'poll', now);
    for (const d of desired) {
      const { p, meta } = d;
      let run = open.get(p.key);
      open.delete(p.key);
      if (meta && TERMINAL.has(meta.phase ?? '')) {
        // the kubelet may still list a finished pod's devices: its GPUs are free, the run is over
        if (run) end(p.key, run, meta.phase!);
        continue;
      }
      // a pod deleted and made again under the same name (a StatefulSet's) between two refreshes: a new run
      if (run && meta && !run.startsWith('seen-') && run !== meta.uid) {
        end(p.key, run, 'Deleted');
        run = undefined;
      }
      const runKey = run ?? meta?.uid ?? `seen-${now}`;
      recordStart(
        db,
        {
          jobId: p.key,
          runKey,
          account: p.namespace,
          name: meta?.workload ?? `pod/${p.name}`,
          scheduler: SCHEDULER,
          attrs: d.attrs,
          startTime: (run ? started.get(p.key) : undefined) ?? meta?.startTime ?? now,
        },
        d.gpus,
        'poll',
        now,
      );
      closeBindingsExcept(db, p.key, runKey, new Set(d.gpus.map((g) => g.uuid)), now);
    }
    // runs of pods no longer holding GPUs here: deleted, or finished (the metadata says which)
    for (const [jobId, runKey] of open) {
      const phase = this.meta.get(jobId)?.phase;
      end(jobId, runKey, phase && TERMINAL.has(phase) ? phase : 'Deleted');
    }
    this.written = print;
    // the store now says what a kubelet answer of this daemon's life says (apply runs only after a List answered)
    this.reconciled = true;
    this.o.onChange?.();
  }

  /** Device ids of the pods holding GPUs that match no GPU (for the l9gpu.kubernetes.unmatched count). */
  get unmatchedCount(): number {
    return this.unmatched.length;
  }
}
