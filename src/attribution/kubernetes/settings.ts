/** The [kubernetes] section resolved against the pod's environment: socket, node name, where pod metadata comes from. */
import { hostname } from 'node:os';
import type { Config } from '../../core/config/load.js';
import { readSection } from '../../core/config/read.js';
import { KUBERNETES_SECTION } from './config.js';
import type { PodSource } from './pod-meta.js';

export interface KubeSettings {
  readonly socket: string;
  readonly nodeName: string;
  readonly resources: readonly string[];
  readonly draDrivers: readonly string[];
  /** null: pods_source = none, or no address for it (`problem` says why). */
  readonly pods: PodSource | null;
  readonly problem: string | undefined;
  readonly refreshMs: number;
  readonly metadataMs: number;
  readonly timeoutMs: number;
}

const hostPort = (host: string, port: string) => `https://${host.includes(':') ? `[${host}]` : host}:${port}`;

export function kubeSettings(cfg: Config, env: NodeJS.ProcessEnv): KubeSettings {
  const k = readSection(cfg, KUBERNETES_SECTION);
  const nodeName = k.node_name ?? hostname().split('.')[0]!;
  const timeoutMs = k.request_timeout * 1000;
  const source = k.pods_source;
  let pods: PodSource | null = null;
  let problem: string | undefined;
  const base = { tokenFile: k.token_file, timeoutMs, labels: k.labels };
  if (source === 'apiserver') {
    const api =
      k.api_url ?? (env.KUBERNETES_SERVICE_HOST ? hostPort(env.KUBERNETES_SERVICE_HOST, env.KUBERNETES_SERVICE_PORT ?? '443') : undefined);
    if (!api)
      problem =
        'pods_source = apiserver, but neither [kubernetes] api_url nor $KUBERNETES_SERVICE_HOST is ' +
        'set (outside a pod, set api_url or pods_source = none)';
    else {
      const url = new URL(`${api.replace(/\/$/, '')}/api/v1/pods`);
      url.searchParams.set('fieldSelector', `spec.nodeName=${nodeName}`);
      pods = { ...base, url, caFile: k.ca_file, caKey: 'ca_file', insecure: false };
    }
  } else if (source === 'kubelet') {
    const kubelet = k.kubelet_url ?? (env.NODE_IP ? hostPort(env.NODE_IP, '10250') : undefined);
    if (!kubelet) problem = 'pods_source = kubelet, but neither [kubernetes] kubelet_url nor $NODE_IP is set';
    else
      pods = {
        ...base,
        url: new URL(`${kubelet.replace(/\/$/, '')}/pods`),
        caFile: k.kubelet_ca_file ?? k.ca_file,
        caKey: k.kubelet_ca_file ? 'kubelet_ca_file' : 'ca_file',
        insecure: k.insecure_skip_tls_verify,
      };
  }
  return {
    socket: k.socket,
    nodeName,
    resources: k.resources,
    draDrivers: k.dra_drivers,
    pods,
    problem,
    refreshMs: k.refresh_interval * 1000,
    metadataMs: k.metadata_interval * 1000,
    timeoutMs,
  };
}
