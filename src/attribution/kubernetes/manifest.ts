/**
 * The Kubernetes attribution provider as the composition root sees it:
 * detection (the kubelet's pod-resources socket on this node), creation (the
 * store-bindings transform fed by the pod sync's timer), doctor's section,
 * and the pods on each GPU for `l9gpu gpus`.
 *
 * Every command imports the root, so this file stays light: gRPC, the sync
 * and the store load only when Kubernetes attribution is used.
 */
import { existsSync } from 'node:fs';
import type { AttributionManifest, AttributionProvider } from '../../core/attribution.js';
import { readSection } from '../../core/config/read.js';
import type { Attributes } from '../../core/metrics/model.js';
import type { OpenBinding } from '../../store/jobs.js';
import { KUBERNETES_SECTION } from './config.js';
import { K8S_METRIC } from './metrics.js';
import { kubeSettings } from './settings.js';

export const podAttributes = (b: Pick<OpenBinding, 'jobAttrs' | 'bindingAttrs'>): Attributes => ({ ...b.jobAttrs, ...b.bindingAttrs });

/** A run known by its id only: "namespace/pod". */
const bare = (jobId: string): Attributes => {
  const i = jobId.indexOf('/');
  return i > 0 ? { 'k8s.namespace.name': jobId.slice(0, i), 'k8s.pod.name': jobId.slice(i + 1) } : {};
};

export const kubernetesAttribution: AttributionManifest = {
  name: 'kubernetes',
  description:
    'Kubernetes pods: the kubelet pod-resources API (which container holds which GPU) and pod metadata from the API server or kubelet',
  sections: [KUBERNETES_SECTION],
  metrics: Object.values(K8S_METRIC).map((d) => d.name),

  detect(cfg) {
    const { socket } = readSection(cfg, KUBERNETES_SECTION);
    return existsSync(socket)
      ? { ok: true, detail: `kubelet pod-resources socket at ${socket}` }
      : { ok: false, detail: `no kubelet pod-resources socket at ${socket}` };
  },

  async create({ config: cfg, log, env, store, labelLength, budgets, jobLabels, readOnly }): Promise<AttributionProvider> {
    const [{ PodResourcesClient }, { PodSync, SCHEDULER }, { BoundAttribution }, { PodPids }, { openRunAttribute }] = await Promise.all([
      import('./podresources-client.js'),
      import('./pod-sync.js'),
      import('../../pipeline/bound-attribution.js'),
      import('./pod-pids.js'),
      import('../../store/jobs.js'),
    ]);
    const klog = log.child('kubernetes');
    const k = kubeSettings(cfg, env);
    if (k.problem) klog.warn(`${k.problem}: pods are named without uid, owners and labels`);
    const client = new PodResourcesClient(k.socket, k.timeoutMs, klog);
    const pids = new PodPids();
    const podUids = openRunAttribute(store, 'k8s.pod.uid');
    const transform = new BoundAttribution(store, klog, {
      labelLength,
      budgets,
      jobLabels,
      name: SCHEDULER,
      attributesOf: podAttributes,
      bareAttributes: bare,
      pids,
      metrics: { share: K8S_METRIC.share, outside: K8S_METRIC.outside, bindings: K8S_METRIC.bindings, syncAge: K8S_METRIC.syncAge },
      lastSynced: () => sync.lastOk,
    });
    const onChange = () => {
      pids.update(podUids(SCHEDULER).flatMap((r) => (r.value ? [{ jobId: r.jobId, uid: r.value }] : [])));
      transform.invalidate();
    };
    const sync = new PodSync({
      db: store,
      client,
      pods: k.pods,
      resources: k.resources,
      draDrivers: k.draDrivers,
      nodeName: k.nodeName,
      metadataIntervalMs: k.metadataMs,
      log: klog,
      onChange,
    });
    onChange();
    // beside the daemon that owns the store: its runs as they are, no sync writing into them
    if (readOnly)
      return { name: SCHEDULER, attribute: (b) => transform.attribute(b), status: () => transform.status(), close: () => client.close() };
    // pods that ended while the daemon was down are closed before the first batch is attributed; a kubelet that
    // does not answer is waited for boundedly
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([sync.refresh(), new Promise<void>((r) => (bound = setTimeout(r, Math.min(5000, k.timeoutMs))))]);
    clearTimeout(bound);
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    // jittered like the Slurm reconciler: many nodes started at once do not ask their API server in step
    const next = (): void => {
      if (!closed) timer = setTimeout(() => void sync.refresh().finally(next), k.refreshMs * (0.9 + 0.2 * Math.random()));
    };
    next();
    return {
      name: SCHEDULER,
      attribute: (b) => {
        sync.learn(b.points);
        // before the kubelet's first answer the store's pods are the previous run's (after a reboot, all gone): none
        return sync.reconciled ? transform.attribute(b) : b;
      },
      status: () => `${transform.status()}; ${sync.unmatchedCount} unmatched device id(s)`,
      collectSelf: (out) => {
        transform.collectSelf(out);
        out.add(K8S_METRIC.unmatched, sync.unmatchedCount, {});
      },
      close: () => {
        closed = true;
        clearTimeout(timer);
        client.close();
      },
    };
  },

  async doctor(cfg, env) {
    const { doctorKubernetes } = await import('./doctor.js');
    return doctorKubernetes(cfg, env);
  },

  async jobsByGpu(cfg) {
    const { openPodBindings } = await import('./doctor.js');
    const m = new Map<string, Attributes[]>();
    for (const b of openPodBindings(cfg)) {
      let l = m.get(b.gpuUuid);
      if (!l) m.set(b.gpuUuid, (l = []));
      l.push(podAttributes(b));
    }
    return m;
  },

  nodeName: (cfg, env) => kubeSettings(cfg, env).nodeName,
};
