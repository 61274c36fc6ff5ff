/**
 * Pod metadata for the pods holding GPUs on this node: uid, labels, owners,
 * phase, start. From the API server (pods of this node by field selector) or
 * the kubelet's /pods, with the service account's bearer token, over HTTPS
 * only. The answer is untrusted input: bounded in size and checked field by
 * field; a pod it cannot read is left out with the reason, not the whole list.
 */
import type { Attributes } from '../../core/metrics/model.js';
import { createHttpClient, type HttpClient } from '../../core/net/http-client.js';
import { SecretHeaders } from '../../core/net/secret-files.js';

export interface PodMeta {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly phase: string | undefined;
  /** ms since the epoch. */
  readonly startTime: number | undefined;
  /** k8s.pod.uid, owner names, promoted labels. */
  readonly attrs: Attributes;
  /** The workload it belongs to, as "<kind>/<name>" (the report's name column), else the pod's own name. */
  readonly workload: string;
}

export interface PodSource {
  readonly url: URL;
  readonly tokenFile: string | null;
  readonly caFile: string | null;
  /** The key that names caFile, for errors (ca_file, kubelet_ca_file). */
  readonly caKey: string;
  readonly insecure: boolean;
  readonly timeoutMs: number;
  /** Pod labels to promote to k8s.pod.label.<name>. */
  readonly labels: readonly string[];
}

const MAX_BODY = 64 * 1024 * 1024;

interface OwnerRef {
  kind?: unknown;
  name?: unknown;
  controller?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The owner attributes of the OpenTelemetry conventions, from the pod's
 * controller alone (no read of ReplicaSets or Jobs, so no RBAC for them): a
 * Deployment is its ReplicaSet's name less "-<pod-template-hash>", a CronJob
 * its Job's name less the "-<scheduled minute>" the CronJob controller adds.
 */
export function ownerAttributes(owners: unknown, labels: Record<string, string>): { attrs: Attributes; workload: string | undefined } {
  const list = Array.isArray(owners) ? (owners as OwnerRef[]) : [];
  const o = list.find((r) => r?.controller === true) ?? list[0];
  const kind = str(o?.kind);
  const name = str(o?.name);
  if (!kind || !name) return { attrs: {}, workload: undefined };
  const a: Attributes = {};
  let workload = `${kind.toLowerCase()}/${name}`;
  switch (kind) {
    case 'ReplicaSet': {
      a['k8s.replicaset.name'] = name;
      const hash = labels['pod-template-hash'];
      if (hash && name.endsWith(`-${hash}`)) {
        a['k8s.deployment.name'] = name.slice(0, -hash.length - 1);
        workload = `deployment/${a['k8s.deployment.name']}`;
      }
      break;
    }
    case 'StatefulSet':
      a['k8s.statefulset.name'] = name;
      break;
    case 'DaemonSet':
      a['k8s.daemonset.name'] = name;
      break;
    case 'Job': {
      a['k8s.job.name'] = name;
      const cron = /^(.+)-(\d{8,10})$/.exec(name);
      if (cron) {
        a['k8s.cronjob.name'] = cron[1]!;
        workload = `cronjob/${cron[1]}`;
      }
      break;
    }
    default:
      break;
  }
  a['k8s.owner.kind'] = kind;
  a['k8s.owner.name'] = name;
  return { attrs: a, workload };
}

/** A PodList's pods, keyed "namespace/name"; `skipped` says which items could not be read and why. */
export function parsePodList(body: string, promote: readonly string[]): { pods: Map<string, PodMeta>; skipped: string[] } {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new Error(`the pod list is not JSON: ${(e as Error).message}`);
  }
  const items = (doc as { items?: unknown })?.items;
  if (!Array.isArray(items))
    throw new Error(`the answer is not a PodList (kind ${JSON.stringify((doc as { kind?: unknown })?.kind ?? null)}, no items array)`);
  const pods = new Map<string, PodMeta>();
  const skipped: string[] = [];
  items.forEach((it: unknown, i) => {
    const md = (it as { metadata?: Record<string, unknown> })?.metadata;
    const namespace = str(md?.namespace);
    const name = str(md?.name);
    const uid = str(md?.uid);
    if (!namespace || !name || !uid) {
      skipped.push(`items[${i}]: no metadata.namespace, .name or .uid`);
      return;
    }
    const rawLabels = md?.labels && typeof md.labels === 'object' ? (md.labels as Record<string, unknown>) : {};
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(rawLabels)) if (typeof v === 'string') labels[k] = v;
    const status = (it as { status?: Record<string, unknown> }).status;
    const started = str(status?.startTime);
    const t = started ? Date.parse(started) : NaN;
    const owner = ownerAttributes(md?.ownerReferences, labels);
    const attrs: Attributes = { 'k8s.pod.uid': uid, ...owner.attrs };
    for (const l of promote) if (labels[l] !== undefined) attrs[`k8s.pod.label.${l}`] = labels[l]!;
    pods.set(`${namespace}/${name}`, {
      namespace,
      name,
      uid,
      phase: str(status?.phase),
      startTime: Number.isFinite(t) ? t : undefined,
      attrs,
      workload: owner.workload ?? `pod/${name}`,
    });
  });
  return { pods, skipped };
}

/** One client per source (its connection kept open between fetches), made at the first fetch. */
const clients = new WeakMap<PodSource, HttpClient>();

function clientOf(src: PodSource): HttpClient {
  let c = clients.get(src);
  if (c) return c;
  // projected service account tokens rotate: the file is read again when it changes
  const token = src.tokenFile
    ? new SecretHeaders({ section: 'kubernetes', tokenFile: { key: 'token_file', path: src.tokenFile } })
    : undefined;
  c = createHttpClient({
    url: src.url.href,
    timeoutMs: src.timeoutMs,
    maxResponseBytes: MAX_BODY,
    ...(token ? { credentials: token.credentials } : {}),
    ...(src.caFile && !src.insecure
      ? {
          tls: {
            section: 'kubernetes',
            keys: { ca: src.caKey, cert: 'client_certificate', key: 'client_key' },
            ca: src.caFile,
            cert: null,
            key: null,
          },
        }
      : {}),
    insecureSkipVerify: src.insecure,
  });
  clients.set(src, c);
  return c;
}

/** GETs the pod list; rejects with an error naming the URL and what went wrong. */
export async function fetchPodList(src: PodSource): Promise<string> {
  const where = `${src.url.origin}${src.url.pathname}`;
  let client: HttpClient;
  try {
    client = clientOf(src);
  } catch (e) {
    throw new Error(`cannot read the service account's files: ${(e as Error).message}`);
  }
  let res;
  try {
    res = await client.request({ headers: { accept: 'application/json' } });
  } catch (e) {
    const m = (e as Error).message;
    throw new Error(m.includes(src.url.origin) || m.includes(src.url.host) ? m : `${where}: ${m}`);
  }
  if (res.cut === 'too-large') throw new Error(`${where}: the answer is larger than ${MAX_BODY / 1024 / 1024} MiB`);
  if (res.cut) throw new Error(`${where}: ${res.cutReason ?? res.cut}`);
  const body = res.body.toString('utf8');
  if (res.status === 200) return body;
  const hint =
    res.status === 401
      ? ' (the token was refused)'
      : res.status === 403
        ? ' (RBAC: the service account may not list these pods; see the ClusterRole in deploy/)'
        : '';
  throw new Error(`${where}: HTTP ${res.status}${hint}: ${client.mask(body.slice(0, 200)).replace(/\s+/g, ' ')}`);
}
