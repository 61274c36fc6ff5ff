/**
 * Kubernetes attribution's cost on the real code path: the provider made by
 * its manifest (as the daemon makes it) over a real store, fed by a kubelet
 * stand-in serving the real proto on a unix socket; 8 GPUs and 100 pods on
 * the node (8 holding a GPU each, 92 without GPUs, as on a busy node). The
 * Slurm provider over the same store shape with 8 jobs is the baseline of the
 * same run.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadAgentConfig } from '../daemon/schema.js';
import { kubernetesAttribution } from '../src/attribution/kubernetes/manifest.js';
import { PodSync } from '../src/attribution/kubernetes/pod-sync.js';
import { PodResourcesClient } from '../src/attribution/kubernetes/podresources-client.js';
import type { AttributionProvider } from '../src/core/attribution.js';
import { createLogger } from '../src/core/log.js';
import { PointBuffer, type Attributes, type Batch } from '../src/core/metrics/model.js';
import { recordStart } from '../src/store/jobs.js';
import { openStore } from '../src/store/open.js';
import { SlurmAttribution } from '../slurm/attribution.js';
import { PodResourcesServer } from '../test/helpers/kubelet.js';
import { seriesPlan } from './pipeline.js';

export interface KubeBenchResult {
  gpus: number;
  pods: number;
  pointsPerBatch: number;
  /** attribute() per tick (learn + transform), ms. */
  k8sTickMs: number;
  slurmTickMs: number;
  /** One refresh: List over the socket, match, compare (nothing changed), ms (median, wall, stand-in server in-process). */
  refreshMs: number;
  /** One refresh that writes: every pod's run and binding recorded again after a change, ms. */
  refreshWriteMs: number;
}

const GPUS = 8;
const PODS = 100;
const uuid = (i: number) => `GPU-0${i}a1b2c3-0000-4000-8000-00000000000${i}`;

function podList(variant = 0): unknown {
  return {
    pod_resources: Array.from({ length: PODS }, (_, i) => ({
      name: `pod-${i}-${variant}`,
      namespace: `ns-${i % 7}`,
      containers: [
        {
          name: 'main',
          devices: i < GPUS ? [{ resource_name: 'nvidia.com/gpu', device_ids: [uuid(i)] }] : [],
          cpu_ids: i % 3 === 0 ? [2 + i, 3 + i] : [],
          memory: [],
          dynamic_resources: [],
        },
        { name: 'sidecar', devices: [], cpu_ids: [], memory: [], dynamic_resources: [] },
      ],
    })),
  };
}

function batchOf(): Batch {
  const plan = seriesPlan();
  const buf = new PointBuffer();
  for (let g = 0; g < GPUS; g++) {
    const id: Attributes = {
      'gpu.index': g,
      'gpu.uuid': uuid(g),
      'gpu.model': 'NVIDIA H100 80GB HBM3',
      'gpu.vendor': 'nvidia',
      'gpu.pci.bus_id': `0000:${(0x18 + g).toString(16)}:00.0`,
    };
    for (const s of plan) buf.add(s.def, Math.random(), { ...id, ...s.extra });
  }
  return { source: 'nvml', time: Date.now(), intervalMs: 10_000, points: buf.points };
}

function perTick(p: AttributionProvider, batch: Batch, seconds: number): number {
  for (let i = 0; i < 200; i++) p.attribute(batch);
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) {
    p.attribute({ ...batch, time: Date.now() });
    n++;
  }
  return (performance.now() - t0) / n;
}

export async function benchKubernetes(seconds = 2): Promise<KubeBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-k8s-'));
  const kubelet = new PodResourcesServer(join(dir, 'kubelet.sock'));
  kubelet.list = podList();
  await kubelet.start();
  const ini = join(dir, 'l9gpu.ini');
  writeFileSync(
    ini,
    `[daemon]\nattribution = kubernetes\nstate_dir = ${join(dir, 'state')}\n[kubernetes]\nsocket ` +
      `= ${kubelet.socket}\npods_source = none\nnode_name = bench\nrefresh_interval = 600s\n`,
  );
  const config = loadAgentConfig({ configPath: ini, env: {} });
  const log = createLogger('error');
  const store = openStore(join(dir, 'state'));
  const batch = batchOf();
  try {
    const k8s = await kubernetesAttribution.create({ config, log, env: {}, store });
    const attributed = k8s.attribute(batch);
    if (attributed.points.filter((p) => p.attributes['k8s.pod.name']).length !== batch.points.length)
      throw new Error('bench: not every GPU point was attributed to its pod');
    const k8sTickMs = perTick(k8s, batch, seconds);
    k8s.close?.();

    // the baseline: Slurm's transform over a store with 8 jobs, one GPU each
    const slurmStore = openStore(join(dir, 'state-slurm'));
    for (let g = 0; g < GPUS; g++)
      recordStart(
        slurmStore,
        { jobId: String(1000 + g), runKey: '0', user: 'alice', account: 'physics', partition: 'gpu', name: 'train' },
        [{ uuid: uuid(g), shared: false }],
        'prolog',
      );
    const slurmTickMs = perTick(new SlurmAttribution(slurmStore, log), batch, seconds);
    slurmStore.close();

    // the refresh, on its own: List over the socket, match, compare
    const client = new PodResourcesClient(kubelet.socket, 5000);
    const sync = new PodSync({
      db: store,
      client,
      pods: null,
      resources: ['nvidia.com/gpu'],
      draDrivers: [],
      nodeName: 'bench',
      metadataIntervalMs: 3_600_000,
      log,
    });
    await sync.refresh();
    // spaced 20 ms apart: back to back, the kubelet's limit (100/s after a burst of 10) would be measured instead
    const median = async (reps: number, before: (i: number) => void): Promise<number> => {
      const times: number[] = [];
      for (let i = 0; i < reps; i++) {
        await new Promise((r) => setTimeout(r, 20));
        before(i);
        const t0 = performance.now();
        await sync.refresh();
        times.push(performance.now() - t0);
      }
      return times.sort((a, b) => a - b)[reps >> 1]!;
    };
    const refreshMs = await median(50, () => {});
    const refreshWriteMs = await median(20, (i) => (kubelet.list = podList(i + 1)));
    client.close();
    return { gpus: GPUS, pods: PODS, pointsPerBatch: batch.points.length, k8sTickMs, slurmTickMs, refreshMs, refreshWriteMs };
  } finally {
    store.close();
    await kubelet.stop();
  }
}
