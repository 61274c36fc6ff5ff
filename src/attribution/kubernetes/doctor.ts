/** What doctor and `l9gpu gpus` say of Kubernetes attribution: the store's open pods, and live answers of the kubelet and the metadata
 * source. */
import type { DoctorSection } from '../../core/attribution.js';
import type { Config } from '../../core/config/load.js';
import { readSection } from '../../core/config/read.js';
import { DAEMON_SECTION } from '../../core/config/sections.js';
import { inventory, openBindings, type InventoryGpu, type OpenBinding } from '../../store/jobs.js';
import { openStoreReadOnly, storePath } from '../../store/open.js';
import { existsSync } from 'node:fs';
import { isGpuResource, KnownGpus } from './device-match.js';
import { fetchPodList, parsePodList } from './pod-meta.js';
import { matchPods, SCHEDULER } from './pod-sync.js';
import { PodResourcesClient } from './podresources-client.js';
import { kubeSettings } from './settings.js';

function readStore<T>(cfg: Config, fn: (db: ReturnType<typeof openStoreReadOnly>) => T, empty: T): T {
  const dir = readSection(cfg, DAEMON_SECTION).state_dir;
  if (!existsSync(storePath(dir))) return empty;
  const db = openStoreReadOnly(dir);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

export const openPodBindings = (cfg: Config): OpenBinding[] => readStore(cfg, (db) => openBindings(db, SCHEDULER), []);

export async function doctorKubernetes(cfg: Config, env: NodeJS.ProcessEnv): Promise<DoctorSection> {
  const k = kubeSettings(cfg, env);
  const lines: string[] = [];
  let problems = 0;
  const json: Record<string, unknown> = { node: k.nodeName, socket: k.socket };
  let gpus: InventoryGpu[] = [];
  let open: OpenBinding[] = [];
  try {
    gpus = readStore(cfg, inventory, []);
    open = openPodBindings(cfg);
  } catch (e) {
    lines.push(`store: ${(e as Error).message}`);
    problems++;
  }
  const client = new PodResourcesClient(k.socket, k.timeoutMs);
  try {
    const [list, alloc] = await Promise.all([client.list(), client.allocatable().catch((e: Error) => e)]);
    const known = new KnownGpus();
    known.learn(gpus);
    const { held, unmatched } = matchPods(list, known, k.resources, k.draDrivers);
    lines.push(
      `node ${k.nodeName}; pod-resources ${k.socket}: ${list.length} pod(s), ${held.length} ` +
        `holding GPUs (${held.map((p) => p.key).join(', ') || 'none'})`,
    );
    if (alloc instanceof Error) lines.push(`allocatable devices: ${alloc.message}`);
    else {
      const ids = alloc
        .filter((d) => isGpuResource(d.resource_name, k.resources))
        .flatMap((d) => d.device_ids.map((id) => `${d.resource_name}=${id}`));
      lines.push(
        `allocatable GPU devices: ${ids.length}${
          ids.length
            ? ` ` +
              `(${[...new Set(alloc.filter((d) => isGpuResource(d.resource_name, k.resources)).map((d) => d.resource_name))].join(', ')})`
            : ' (no device plugin has registered GPUs with the kubelet)'
        }`,
      );
      json.allocatable = ids;
    }
    for (const u of unmatched) lines.push(`  unmatched: pod ${u.pod} container ${u.container}: ${u.resource} ${u.id}: ${u.why}`);
    if (unmatched.length && gpus.length === 0)
      lines.push('  (the GPU inventory is empty: ids by PCI address or MIG parent match once the daemon has sampled the GPUs)');
    problems += unmatched.length ? 1 : 0;
    json.pods = held.map((p) => ({ pod: p.key, gpus: [...p.gpus.keys()] }));
    json.unmatched = unmatched;
  } catch (e) {
    lines.push(
      `pod-resources: ${(e as Error).message}  <- the daemon keeps the last known bindings while ` +
        `the kubelet is away, and applies none from before its start until the kubelet answers`,
    );
    json.error = (e as Error).message;
    problems++;
  } finally {
    client.close();
  }
  if (!k.pods) {
    lines.push(`pod metadata: ${k.problem ?? 'pods_source = none: pods are named by namespace, pod and container only'}`);
    if (k.problem) problems++;
  } else {
    try {
      const { pods, skipped } = parsePodList(await fetchPodList(k.pods), k.pods.labels);
      lines.push(
        `pod metadata from ${k.pods.url.origin}${k.pods.url.pathname}: ${pods.size} pod(s) on this ` +
          `node${skipped.length ? `; ${skipped.length} unreadable item(s)` : ''}`,
      );
    } catch (e) {
      lines.push(`pod metadata: ${(e as Error).message}`);
      problems++;
    }
  }
  lines.push(
    `${open.length} open pod binding(s) in the store${open.length ? `: ${[...new Set(open.map((b) => b.jobId))].join(', ')}` : ''}; ` +
      `${gpus.length} GPU(s) in the inventory`,
  );
  json.open_bindings = open.length;
  return { lines, json, problems };
}
