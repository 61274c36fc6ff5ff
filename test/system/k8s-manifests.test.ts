/**
 * The plain Kubernetes manifests (src/attribution/kubernetes/deploy), checked
 * offline: every object against its kind's OpenAPI schema (kubernetes-models),
 * every field name against the kind's types (the TypeScript compiler's excess
 * property check: kubectl's strict field validation refuses unknown fields,
 * which the schema validator lets through), the hardening, the RBAC, and the
 * ConfigMap's INI through the daemon's own loader with the environment and
 * arguments the DaemonSet gives it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ini from 'ini';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { ALL_SECTIONS, loadAgentConfig, resolveAgentAttribution } from '../../daemon/schema.js';
import { DAEMON_FLAGS, flagOverrides, type DaemonFlags } from '../../src/cli/daemon-flags.js';
import { parseArgsOptions, type FlagSpec } from '../../src/cli/flag-spec.js';
import { KUBERNETES_SECTION } from '../../src/attribution/kubernetes/config.js';
import { IMAGE_ENTRYPOINT, IMAGE_NAME } from '../../src/release/image.js';
import { readSection } from '../../src/core/config/read.js';
import { DAEMON_SECTION } from '../../src/core/config/sections.js';
import { OTLP_SECTION, PROMETHEUS_SECTION } from '../../src/sinks/sections.js';

/** The repository root: the first folder above this file holding l9gpu's package.json (works from dist/test and dist-*\/test). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'l9gpu') return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no l9gpu package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

const ROOT = repoRoot();
const DEPLOY = join(ROOT, 'src', 'attribution', 'kubernetes', 'deploy');
const OPTIONAL = join(DEPLOY, 'optional');

type Obj = Record<string, any>; // parsed YAML, checked field by field below
interface Manifest {
  readonly file: string;
  readonly index: number;
  /** Applied by `kubectl apply -f deploy/` (the top folder; not optional/). */
  readonly applied: boolean;
  readonly obj: Obj;
}

/** Each kind the folder may hold: its offline validator and its TypeScript type. */
const KINDS: Record<string, { validate(o: Obj): void; module: string; type: string }> = {
  'v1/Namespace': { validate: (o) => new Namespace(o as never).validate(), module: 'kubernetes-models/v1/Namespace', type: 'INamespace' },
  'v1/ServiceAccount': {
    validate: (o) => new ServiceAccount(o as never).validate(),
    module: 'kubernetes-models/v1/ServiceAccount',
    type: 'IServiceAccount',
  },
  'v1/ConfigMap': { validate: (o) => new ConfigMap(o as never).validate(), module: 'kubernetes-models/v1/ConfigMap', type: 'IConfigMap' },
  'v1/Secret': { validate: (o) => new Secret(o as never).validate(), module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
  'apps/v1/DaemonSet': {
    validate: (o) => new DaemonSet(o as never).validate(),
    module: 'kubernetes-models/apps/v1/DaemonSet',
    type: 'IDaemonSet',
  },
  'rbac.authorization.k8s.io/v1/ClusterRole': {
    validate: (o) => new ClusterRole(o as never).validate(),
    module: 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole',
    type: 'IClusterRole',
  },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': {
    validate: (o) => new ClusterRoleBinding(o as never).validate(),
    module: 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding',
    type: 'IClusterRoleBinding',
  },
};
const kindOf = (o: Obj): string => `${String(o.apiVersion)}/${String(o.kind)}`;
const CLUSTER_SCOPED = new Set([
  'v1/Namespace',
  'rbac.authorization.k8s.io/v1/ClusterRole',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
]);

function validate(o: Obj): void {
  const k = KINDS[kindOf(o)];
  if (!k) throw new Error(`no offline validator for ${kindOf(o)}`);
  k.validate(o);
}

function loadManifests(): Manifest[] {
  const out: Manifest[] = [];
  for (const [dir, applied] of [
    [DEPLOY, true],
    [OPTIONAL, false],
  ] as const) {
    for (const name of readdirSync(dir).sort()) {
      if (!/\.ya?ml$/.test(name)) continue;
      const file = join(dir, name);
      const docs = parseAllDocuments(readFileSync(file, 'utf8'));
      assert.ok(Array.isArray(docs), `${file}: not a YAML stream`);
      docs.forEach((d, index) => {
        assert.deepEqual(
          d.errors.map((e) => e.message),
          [],
          `${file} document ${index}: YAML errors`,
        );
        assert.deepEqual(
          d.warnings.map((e) => e.message),
          [],
          `${file} document ${index}: YAML warnings`,
        );
        const obj = d.toJS() as unknown;
        if (obj === null) return; // an empty document (a trailing ---)
        assert.ok(typeof obj === 'object' && !Array.isArray(obj), `${file} document ${index}: not a mapping`);
        out.push({ file: file.slice(DEPLOY.length + 1), index, applied, obj: obj as Obj });
      });
    }
  }
  return out;
}

const ALL = loadManifests();
const APPLIED = ALL.filter((m) => m.applied);
const only = (kind: string, set: readonly Manifest[] = APPLIED): Obj[] => set.filter((m) => kindOf(m.obj) === kind).map((m) => m.obj);
function one(kind: string, set: readonly Manifest[] = APPLIED): Obj {
  const found = only(kind, set);
  assert.equal(found.length, 1, `exactly one ${kind}, found ${found.length}`);
  return found[0]!;
}

/**
 * Unknown or misplaced field names, per object: TypeScript's excess property
 * check of each object, written as a literal of its kind's type from
 * kubernetes-models (a virtual file; nothing is written). Type errors show too.
 */
function fieldErrors(objs: readonly Obj[]): string[][] {
  const virtual = join(ROOT, 'test', '__k8s_manifest_fields__.mts');
  const imports = new Map<string, string>();
  const body: string[] = [];
  const starts: number[] = [];
  objs.forEach((o, i) => {
    const k = KINDS[kindOf(o)];
    if (!k) throw new Error(`no type for ${kindOf(o)}`);
    imports.set(k.type, k.module);
    body.push(`export const m${i}: ${k.type} = ${JSON.stringify(o, null, 1)};`);
  });
  let text = [...imports].map(([t, m]) => `import type { ${t} } from '${m}';`).join('\n') + '\n';
  for (const b of body) {
    starts.push(text.length);
    text += b + '\n';
  }
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (f, lang, ...rest) =>
    f === virtual ? ts.createSourceFile(f, text, lang) : getSourceFile.call(host, f, lang, ...rest);
  host.fileExists = (f) => f === virtual || fileExists.call(host, f);
  host.readFile = (f) => (f === virtual ? text : readFile.call(host, f));
  const program = ts.createProgram([virtual], options, host);
  const sf = program.getSourceFile(virtual)!;
  const errors: string[][] = objs.map(() => []);
  for (const d of [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]) {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const at = d.start ?? 0;
    let i = -1;
    while (i + 1 < starts.length && starts[i + 1]! <= at) i++;
    if (i < 0) throw new Error(`manifest field check: ${msg}`); // an import failed: the check itself is broken
    errors[i]!.push(`${text.slice(at, at + (d.length ?? 0))}: ${msg}`);
  }
  return errors;
}

test('the folder holds YAML manifests and a README only; optional/ holds what `kubectl apply -f deploy/` must not apply', () => {
  for (const name of readdirSync(DEPLOY)) {
    const st = statSync(join(DEPLOY, name));
    if (st.isDirectory()) assert.equal(name, 'optional', `unexpected folder ${name}`);
    else
      assert.ok(
        name === 'README.md' || /^\d\d-[a-z0-9-]+\.yaml$/.test(name),
        `unexpected file ${name} (kubectl applies .yaml, .yml and .json; number the manifests for order)`,
      );
  }
  assert.ok(APPLIED.length >= 6, `only ${APPLIED.length} objects applied`);
  assert.ok(ALL.length > APPLIED.length, 'optional/ holds manifests');
  // the order kubectl takes them in (file names) puts the namespace first
  assert.equal(kindOf(APPLIED[0]!.obj), 'v1/Namespace');
  // nothing optional is applied by the plain `kubectl apply -f`
  assert.deepEqual(only('v1/Secret'), [], 'the example Secret is not applied with the folder (it would overwrite a real one)');
  for (const r of only('rbac.authorization.k8s.io/v1/ClusterRole')) {
    assert.ok(!JSON.stringify(r.rules).includes('nodes/proxy'), 'nodes/proxy is not granted by the plain apply');
  }
});

test('every object validates offline against its kind', () => {
  for (const m of ALL) {
    assert.ok(KINDS[kindOf(m.obj)], `${m.file}#${m.index}: ${kindOf(m.obj)} has no offline validator: add it to KINDS`);
    assert.doesNotThrow(() => validate(m.obj), `${m.file}#${m.index} ${kindOf(m.obj)}`);
    assert.equal(typeof m.obj.metadata?.name, 'string', `${m.file}#${m.index}: metadata.name`);
    if (CLUSTER_SCOPED.has(kindOf(m.obj))) assert.equal(m.obj.metadata.namespace, undefined, `${m.file}#${m.index}: cluster-scoped`);
    else assert.equal(m.obj.metadata.namespace, 'l9gpu', `${m.file}#${m.index}: namespace`);
  }
});

test('the validator rejects broken objects, and a kind it does not know', () => {
  const ds = structuredClone(one('apps/v1/DaemonSet'));
  ds.spec.template.spec.containers[0].ports[0].containerPort = 'abc';
  assert.throws(() => validate(ds), /containerPort must be integer/);
  const noName = structuredClone(one('apps/v1/DaemonSet'));
  delete noName.spec.template.spec.containers[0].name;
  assert.throws(() => validate(noName), /must have required property name/);
  const role = structuredClone(one('rbac.authorization.k8s.io/v1/ClusterRole'));
  role.rules[0].verbs = 'list';
  assert.throws(() => validate(role), /verbs must be array/);
  assert.throws(() => validate({ apiVersion: 'extensions/v1beta1', kind: 'DaemonSet', metadata: { name: 'x' } }), /no offline validator/);
});

test(
  'every field name is one its kind has (as kubectl --validate=strict checks), and the check ' + 'catches a typo or a misplaced field',
  () => {
    const objs = ALL.map((m) => m.obj);
    const ds = structuredClone(one('apps/v1/DaemonSet'));
    ds.spec.template.spec.containers[0].securityContext.readOnlyRootFilesytem = true; // a typo
    ds.spec.template.spec.volumes[0].hostPath.readOnly = true; // readOnly belongs on the volumeMount
    const errors = fieldErrors([...objs, ds]);
    objs.forEach((o, i) => assert.deepEqual(errors[i], [], `${ALL[i]!.file}#${ALL[i]!.index} ${kindOf(o)}`));
    const broken = errors[objs.length]!.join('\n');
    assert.match(broken, /'"readOnlyRootFilesytem"' does not exist in type 'ISecurityContext'/);
    assert.match(broken, /'"readOnly"' does not exist in type 'IHostPathVolumeSource'/);
    assert.equal(errors[objs.length]!.length, 2, broken);
  },
);

const DS = one('apps/v1/DaemonSet');
const POD = DS.spec.template.spec as Obj;
const CONTAINERS: Obj[] = [...(POD.initContainers ?? []), ...POD.containers, ...(POD.ephemeralContainers ?? [])];
const MAIN = POD.containers[0] as Obj;

test('the DaemonSet is hardened: no privilege, no capabilities, read-only root, RuntimeDefault seccomp, no host namespaces', () => {
  assert.equal(POD.containers.length, 1);
  for (const c of CONTAINERS) {
    const sc = c.securityContext as Obj;
    assert.ok(sc, `${c.name}: securityContext`);
    assert.equal(sc.privileged, false, `${c.name}: privileged`);
    assert.equal(sc.allowPrivilegeEscalation, false, `${c.name}: allowPrivilegeEscalation`);
    assert.equal(sc.readOnlyRootFilesystem, true, `${c.name}: readOnlyRootFilesystem`);
    assert.deepEqual(sc.capabilities?.drop, ['ALL'], `${c.name}: capabilities.drop`);
    assert.ok(
      sc.capabilities.add === undefined || (Array.isArray(sc.capabilities.add) && sc.capabilities.add.length === 0),
      `${c.name}: capabilities.add`,
    );
    const seccomp = sc.seccompProfile ?? POD.securityContext?.seccompProfile;
    assert.deepEqual(seccomp, { type: 'RuntimeDefault' }, `${c.name}: seccompProfile`);
    assert.equal(sc.procMount, undefined, `${c.name}: procMount`);
    // root on purpose (the pod-resources folder is root-only), said explicitly
    assert.equal(sc.runAsUser ?? POD.securityContext?.runAsUser, 0, `${c.name}: runAsUser`);
    assert.equal(sc.runAsNonRoot ?? POD.securityContext?.runAsNonRoot, false, `${c.name}: runAsNonRoot`);
  }
  assert.deepEqual(POD.securityContext.seccompProfile, { type: 'RuntimeDefault' });
  for (const k of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    assert.ok(POD[k] === undefined || POD[k] === false, `${k}: ${String(POD[k])}`);
  }
  assert.equal(POD.shareProcessNamespace, undefined);
  assert.equal(POD.automountServiceAccountToken, true, 'the agent needs its token to list pods');
  assert.equal(POD.serviceAccountName, 'l9gpu');
});

test('the volumes are exactly the pod-resources folder (read-only), the state folder, the config and /tmp', () => {
  const volumes = new Map((POD.volumes as Obj[]).map((v) => [v.name as string, v]));
  assert.equal(volumes.size, POD.volumes.length, 'volume names are unique');
  assert.deepEqual([...volumes.keys()].sort(), ['config', 'pod-resources', 'state', 'tmp']);
  for (const v of volumes.values()) assert.equal(Object.keys(v).length, 2, `volume ${v.name}: one source`);
  assert.deepEqual(volumes.get('pod-resources')!.hostPath, { path: '/var/lib/kubelet/pod-resources', type: 'Directory' });
  assert.deepEqual(volumes.get('state')!.hostPath, { path: '/var/lib/l9gpu', type: 'DirectoryOrCreate' });
  assert.equal(volumes.get('config')!.configMap?.name, 'l9gpu-config');
  assert.ok(volumes.get('tmp')!.emptyDir, 'tmp is an emptyDir');

  for (const c of CONTAINERS) {
    assert.equal(c.volumeDevices, undefined, `${c.name}: volumeDevices`);
    if (c !== MAIN) assert.deepEqual(c.volumeMounts ?? [], [], `${c.name}: mounts nothing`);
  }
  const mounts = new Map((MAIN.volumeMounts as Obj[]).map((m) => [m.name as string, m]));
  assert.equal(mounts.size, MAIN.volumeMounts.length, 'one mount per volume');
  assert.deepEqual(Object.fromEntries([...mounts].map(([n, m]) => [n, { ...m, name: undefined }])), {
    'pod-resources': { name: undefined, mountPath: '/var/lib/kubelet/pod-resources', readOnly: true },
    state: { name: undefined, mountPath: '/var/lib/l9gpu' },
    config: { name: undefined, mountPath: '/etc/l9gpu', readOnly: true },
    tmp: { name: undefined, mountPath: '/tmp' },
  });

  // every hostPath of every object in the folder is one of the two
  const hostPaths: string[] = [];
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object')
      for (const [k, v] of Object.entries(x)) {
        if (k === 'hostPath') hostPaths.push((v as Obj).path);
        else walk(v);
      }
  };
  ALL.forEach((m) => walk(m.obj));
  assert.deepEqual(hostPaths.sort(), ['/var/lib/kubelet/pod-resources', '/var/lib/l9gpu']);

  // the schema's default socket lies in the mounted folder
  const socket = KUBERNETES_SECTION.keys.find((k) => k.key === 'socket')!.default;
  assert.equal(dirname(String(socket)), mounts.get('pod-resources')!.mountPath);
});

test('RBAC: list pods only; the optional kubelet role is nodes/proxy get only', () => {
  const sa = one('v1/ServiceAccount');
  assert.deepEqual([sa.metadata.name, sa.metadata.namespace], ['l9gpu', 'l9gpu']);
  const roles = only('rbac.authorization.k8s.io/v1/ClusterRole', ALL);
  assert.deepEqual(roles.map((r) => r.metadata.name).sort(), ['l9gpu', 'l9gpu-kubelet']);
  const byName = new Map(roles.map((r) => [r.metadata.name as string, r]));
  assert.deepEqual(byName.get('l9gpu')!.rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
  assert.deepEqual(byName.get('l9gpu-kubelet')!.rules, [{ apiGroups: [''], resources: ['nodes/proxy'], verbs: ['get'] }]);
  for (const r of roles) assert.equal(r.aggregationRule, undefined);
  assert.deepEqual(
    only('rbac.authorization.k8s.io/v1/ClusterRole').map((r) => r.metadata.name),
    ['l9gpu'],
    'the plain apply grants the apiserver role only',
  );
  // no other kind of grant anywhere
  assert.deepEqual(
    ALL.filter((m) => /Role/.test(String(m.obj.kind)) && !/^ClusterRole(Binding)?$/.test(String(m.obj.kind))),
    [],
  );

  const bindings = only('rbac.authorization.k8s.io/v1/ClusterRoleBinding', ALL);
  assert.deepEqual(bindings.map((b) => b.roleRef.name).sort(), ['l9gpu', 'l9gpu-kubelet']);
  for (const b of bindings) {
    assert.deepEqual(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: b.roleRef.name });
    assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: 'l9gpu', namespace: 'l9gpu' }]);
  }
  const kubeletFile = ALL.find((m) => m.obj.metadata?.name === 'l9gpu-kubelet')!.file;
  assert.match(readFileSync(join(DEPLOY, kubeletFile), 'utf8'), /WARNING: nodes\/proxy is a broad right/);
});

const envOf = (name: string): Obj | undefined => (MAIN.env as Obj[]).find((e) => e.name === name);

test('the DaemonSet: command, node identity, config and state paths, GPU access, the optional OTLP Secret', () => {
  // the image `npm run package` builds (src/release/image.ts): no shell, no node on PATH to rely on
  assert.deepEqual(MAIN.command, [IMAGE_ENTRYPOINT]);
  assert.deepEqual(MAIN.args, ['daemon', '--attribution', 'kubernetes']);
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  assert.equal(MAIN.image, `${IMAGE_NAME}:${version}`, 'the DaemonSet names the image this version builds');
  const names = (MAIN.env as Obj[]).map((e) => e.name as string);
  assert.equal(new Set(names).size, names.length, 'env names are unique');
  assert.deepEqual(envOf('NODE_NAME'), { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } });
  assert.deepEqual(envOf('NODE_IP'), { name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } });
  assert.equal(envOf('L9GPU_CONFIG')?.value, '/etc/l9gpu/l9gpu.ini');
  assert.equal(envOf('L9GPU_STATE_DIR')?.value, '/var/lib/l9gpu');
  assert.equal(envOf('NVIDIA_VISIBLE_DEVICES')?.value, 'all');
  assert.equal(envOf('NVIDIA_DRIVER_CAPABILITIES')?.value, 'utility');
  assert.equal(MAIN.resources?.limits?.['nvidia.com/gpu'], undefined, 'no GPU requested: the toolkit gives access without holding one');

  // the config file is the ConfigMap's key, in the folder it is mounted at
  const cm = one('v1/ConfigMap');
  const mount = (MAIN.volumeMounts as Obj[]).find((m) => m.name === 'config')!;
  assert.equal(dirname(envOf('L9GPU_CONFIG')!.value), mount.mountPath);
  assert.ok(basename(envOf('L9GPU_CONFIG')!.value) in cm.data, 'the ConfigMap holds the file L9GPU_CONFIG names');
  assert.equal(envOf('L9GPU_STATE_DIR')!.value, (MAIN.volumeMounts as Obj[]).find((m) => m.name === 'state')!.mountPath);

  const secret = one('v1/Secret', ALL);
  assert.equal(secret.metadata.name, 'l9gpu-otlp');
  const fromSecret = (MAIN.env as Obj[]).filter((e) => e.valueFrom?.secretKeyRef);
  assert.deepEqual(fromSecret.map((e) => e.name).sort(), ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_HEADERS']);
  for (const e of fromSecret) assert.deepEqual(e.valueFrom.secretKeyRef, { name: 'l9gpu-otlp', key: e.name, optional: true });
  assert.deepEqual(Object.keys(secret.stringData).sort(), ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_HEADERS']);
  assert.match(readFileSync(join(DEPLOY, ALL.find((m) => m.obj === secret)!.file), 'utf8'), /EXAMPLE/);
  assert.equal(MAIN.envFrom, undefined);
});

test('the DaemonSet: scheduling, resources, port, probes, updates', () => {
  assert.deepEqual(
    DS.spec.selector.matchLabels,
    Object.fromEntries(Object.keys(DS.spec.selector.matchLabels).map((k) => [k, DS.spec.template.metadata.labels[k]])),
    'the selector matches the template',
  );
  assert.ok(Object.keys(POD.nodeSelector ?? {}).length > 0, 'GPU nodes only');
  assert.ok((POD.tolerations as Obj[]).some((t) => t.key === 'nvidia.com/gpu' && t.operator === 'Exists' && t.effect === 'NoSchedule'));
  assert.deepEqual(MAIN.resources, { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '200m', memory: '256Mi' } });
  assert.deepEqual(DS.spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } });
  assert.equal(POD.terminationGracePeriodSeconds, 30);
  assert.deepEqual(MAIN.ports, [{ name: 'metrics', containerPort: 9464, protocol: 'TCP' }]);
  for (const p of [MAIN.readinessProbe, MAIN.livenessProbe] as Obj[]) {
    assert.deepEqual(p.httpGet, { path: '/metrics', port: 'metrics' });
  }
});

/** The environment the DaemonSet gives the daemon: literal values, the downward API faked, the Secret from the example. */
function daemonEnv(configFile: string): NodeJS.ProcessEnv {
  const secret = one('v1/Secret', ALL);
  const env: NodeJS.ProcessEnv = {};
  for (const e of MAIN.env as Obj[]) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'spec.nodeName') env[e.name] = 'gpu-node-17';
    else if (e.valueFrom?.fieldRef?.fieldPath === 'status.hostIP') env[e.name] = '10.0.3.17';
    else if (e.valueFrom?.secretKeyRef) env[e.name] = secret.stringData[e.valueFrom.secretKeyRef.key];
    else throw new Error(`env ${e.name}: no way to fake ${JSON.stringify(e.valueFrom)}`);
  }
  env.L9GPU_CONFIG = configFile; // /etc/l9gpu/l9gpu.ini in the pod
  return env;
}

/** The daemon's arguments as daemon-main parses them, as config overrides. */
function argOverrides(): ReturnType<typeof flagOverrides> {
  assert.equal(MAIN.args[0], 'daemon');
  const { values, positionals } = parseArgs({ args: MAIN.args.slice(1), allowPositionals: true, options: parseArgsOptions(DAEMON_FLAGS) });
  assert.deepEqual(positionals, []);
  for (const f of DAEMON_FLAGS as readonly FlagSpec[]) {
    const v = (values as Record<string, unknown>)[f.name];
    if (f.options && typeof v === 'string') assert.ok(f.options.includes(v), `--${f.name} ${v}: one of ${f.options.join(', ')}`);
  }
  return flagOverrides(values as DaemonFlags);
}

test(
  "the ConfigMap's INI names only sections and keys of the schema, and the daemon's loader " + "takes it with the DaemonSet's env and args",
  (t) => {
    const text = one('v1/ConfigMap').data['l9gpu.ini'] as string;
    // every section and key against the real schema (all unknown names at once)
    const parsed = ini.parse(text) as Record<string, Record<string, unknown>>;
    const unknown: string[] = [];
    for (const [section, body] of Object.entries(parsed)) {
      const spec = ALL_SECTIONS.find((s) => s.name === section);
      if (!spec) unknown.push(`[${section}]`);
      else for (const key of Object.keys(body)) if (!spec.keys.some((k) => k.key === key)) unknown.push(`[${section}] ${key}`);
    }
    assert.ok('kubernetes' in parsed && 'daemon' in parsed, 'the INI sets [daemon] and [kubernetes]');
    assert.deepEqual(
      unknown,
      [],
      `not in the schema (daemon/schema.ts ALL_SECTIONS; [kubernetes] is there once the ` +
        `kubernetes attribution provider is registered in ATTRIBUTIONS)`,
    );

    const dir = mkdtempSync(join(tmpdir(), 'l9gpu-k8sm-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'l9gpu.ini');
    writeFileSync(file, text);

    // the loader can fail: a key the schema lacks stops it
    writeFileSync(join(dir, 'bad.ini'), text.replace('[daemon]\n', '[daemon]\nno_such_key = 1\n'));
    assert.throws(() => loadAgentConfig({ env: { L9GPU_CONFIG: join(dir, 'bad.ini') } }), /no_such_key: unknown key/);

    const env = daemonEnv(file);
    const cfg = loadAgentConfig({ env, overrides: argOverrides() });
    assert.equal(cfg.file, file);
    const [daemon, prometheus, kubernetes] = [
      readSection(cfg, DAEMON_SECTION),
      readSection(cfg, PROMETHEUS_SECTION),
      readSection(cfg, KUBERNETES_SECTION),
    ];
    assert.equal(daemon.attribution, 'kubernetes');
    assert.equal(cfg.sourceOf('daemon', 'attribution').source, 'flag');
    assert.deepEqual(daemon.sinks, ['otlp', 'prometheus']);
    assert.ok(daemon.plugins.includes('nvml') || daemon.plugins.includes('auto'));
    assert.equal(daemon.state_dir, '/var/lib/l9gpu');
    assert.equal(readSection(cfg, OTLP_SECTION).endpoint, `${env.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/metrics`);
    assert.equal(prometheus.port, MAIN.ports[0].containerPort, 'the prometheus sink listens on the container port');
    assert.equal(prometheus.path, MAIN.readinessProbe.httpGet.path, "the probes ask the prometheus sink's page");
    assert.equal(prometheus.host, '0.0.0.0', "reachable from the kubelet's probes and scrapers");
    assert.equal(kubernetes.node_name, 'gpu-node-17');
    assert.equal(kubernetes.pods_source, 'apiserver', 'the RBAC applied by default is the apiserver one');
    assert.ok(kubernetes.labels.includes('app.kubernetes.io/name'));
    const socket = kubernetes.socket;
    assert.equal(dirname(socket), (MAIN.volumeMounts as Obj[]).find((m) => m.name === 'pod-resources')!.mountPath);
    assert.equal(resolveAgentAttribution(cfg, env).resolved, 'kubernetes');
  },
);
