/**
 * Kubernetes mode end to end: the daemon on the fake NVML (the production
 * koffi path), a kubelet stand-in serving Kubernetes' own pod-resources proto
 * over a unix socket with recorded answers, and the API server's / kubelet's
 * pods endpoints over HTTPS with a bearer token. Each GPU's points must name
 * the pod, namespace and container holding it, through every device id form
 * (UUID, time-sliced replicas, both MIG forms, DRA), across a kubelet restart.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KnownGpus, matchDevice } from '../../src/attribution/kubernetes/device-match.js';
import { ownerAttributes, parsePodList } from '../../src/attribution/kubernetes/pod-meta.js';
import { RateLimit } from '../../src/attribution/kubernetes/podresources-client.js';
import { DaemonProcess, parseLines, runCli, type JsonPoint } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { PodResourcesServer, PodsServer, testdata } from '../helpers/kubelet.js';
import { tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';

const uuid = (i: number) => `GPU-0${i}a1b2c3-0000-4000-8000-00000000000${i}`;
const gpus8 = () => Array.from({ length: 8 }, (_, i) => h100(i, { uuid: uuid(i), processes: [], util_gpu: 10 * (i + 1) }));
const NODE = 'gpu-node-07';

interface PodList {
  items: { metadata: { name: string; namespace: string }; status: { phase: string } }[];
}

/** The kubelet and API server stand-ins answering for the recorded 8-GPU node (started), and its fake NVML. */
async function serveEightGpus(kubelet: PodResourcesServer, api: PodsServer): Promise<FakeNvml> {
  kubelet.list = testdata('list-8gpu.json');
  kubelet.allocatable = testdata('allocatable-8gpu.json');
  api.pods = testdata('pods-8gpu.json');
  await kubelet.start();
  return new FakeNvml({ devices: gpus8() });
}

describe('kubernetes attribution: daemon, kubelet stand-in, API server stand-in', () => {
  const dir = tempDir('l9gpu-k8s-');
  const kubelet = new PodResourcesServer(join(dir, 'kubelet.sock'));
  const api = new PodsServer();
  const config = (name: string, extra = '', tokenFile = api.tokenFile) => {
    const file = join(dir, `${name}.ini`);
    writeFileSync(
      file,
      `[daemon]\nattribution = kubernetes\nplugins = nvml\nsinks = stdout\nstate_dir = ${join(dir, `state-${name}`)}\n` +
        `[kubernetes]\nsocket = ${kubelet.socket}\nnode_name = ${NODE}\napi_url = ${api.url}\ntoken_file ` +
        `= ${tokenFile}\nca_file = ${api.caFile}\n` +
        `labels = app.kubernetes.io/name\nrefresh_interval = 200ms\n${extra}`,
    );
    return file;
  };
  before(async () => {
    await api.start();
  });
  after(async () => {
    await kubelet.stop();
    await api.stop();
  });

  /** The newest point per GPU UUID of a metric, from the stdout since `from`. */
  const latest = (d: DaemonProcess, name: string, from = 0): JsonPoint[] => d.pointsSince(from).filter((p) => p.name === name);

  test(
    "[attribution] job_labels = info: the GPUs' points carry no pod; each GPU's gpu.job.share " +
      'carries its pod whole (labels left off points included)',
    async () => {
      const fake = await serveEightGpus(kubelet, api);
      const d = new DaemonProcess(
        ['--config', config('info', '[attribution]\njob_labels = info\nomit_from_points = k8s.pod.label.*\n'), '--interval', '200ms'],
        fake.env(),
      );
      try {
        const shares = await waitFor('a share for every GPU', () => {
          const byGpu = new Map(latest(d, 'gpu.job.share').map((p) => [p.attributes['gpu.uuid'], p]));
          return byGpu.size === 8 ? byGpu : undefined;
        });
        assert.deepEqual(
          {
            pod: shares.get(uuid(3))!.attributes['k8s.pod.name'],
            ns: shares.get(uuid(3))!.attributes['k8s.namespace.name'],
            label: shares.get(uuid(3))!.attributes['k8s.pod.label.app.kubernetes.io/name'],
          },
          { pod: 'vllm-serve-0', ns: 'inference', label: 'vllm-serve' },
        );
        const util = latest(d, 'gpu.utilization');
        assert.ok(util.length >= 8);
        assert.deepEqual(
          util.filter((p) => Object.keys(p.attributes).some((k) => k.startsWith('k8s.'))),
          [],
        );
      } finally {
        assert.equal(await d.stop(), 0, d.stderr);
        // the next test serves the node afresh
        await kubelet.stop();
      }
    },
  );

  test(
    "8 GPUs: pod, namespace, container, uid, owners and labels on each GPU's points; a kubelet " +
      'restart keeps them, a pod gone ends its run with a summary; time-slicing shares a GPU',
    async () => {
      const fake = await serveEightGpus(kubelet, api);
      const cfg = config('eight');
      const d = new DaemonProcess(['--config', cfg, '--interval', '200ms'], fake.env());
      try {
        const util = await waitFor('every GPU attributed', () => {
          const byGpu = new Map(latest(d, 'gpu.utilization').map((p) => [p.attributes['gpu.uuid'], p]));
          return [...Array(8).keys()].every((i) => byGpu.get(uuid(i))?.attributes['k8s.pod.name']) ? byGpu : undefined;
        });
        const expect: [number, string, string, string, Record<string, string>][] = [
          [
            0,
            'ml-train',
            'llama-ft-7d9f8c6b5-x2kqp',
            'trainer',
            {
              'k8s.deployment.name': 'llama-ft',
              'k8s.replicaset.name': 'llama-ft-7d9f8c6b5',
              'k8s.pod.uid': '29456999-012f-4133-8204-c32cb9b8beda',
            },
          ],
          [1, 'ml-train', 'llama-ft-7d9f8c6b5-x2kqp', 'trainer', { 'k8s.deployment.name': 'llama-ft' }],
          [2, 'ml-train', 'llama-ft-7d9f8c6b5-m4wzt', 'trainer', { 'k8s.pod.uid': 'a5cafe22-b66e-4779-8452-b060c9f99e5e' }],
          [
            3,
            'inference',
            'vllm-serve-0',
            'vllm',
            { 'k8s.statefulset.name': 'vllm-serve', 'k8s.pod.label.app.kubernetes.io/name': 'vllm-serve' },
          ],
          [
            4,
            'ml-eval',
            'nightly-eval-29557560-wq7zk',
            'eval',
            { 'k8s.job.name': 'nightly-eval-29557560', 'k8s.cronjob.name': 'nightly-eval' },
          ],
          [5, 'default', 'debug-shell', 'shell', { 'k8s.pod.uid': 'd2d40d43-c692-43a3-8845-117df07818fc' }],
          [6, 'inference', 'embed-svc-5b4c7d8f9-h7rtn', 'encoder', { 'k8s.deployment.name': 'embed-svc' }],
          [7, 'inference', 'embed-svc-5b4c7d8f9-h7rtn', 'reranker', { 'k8s.deployment.name': 'embed-svc' }],
        ];
        for (const [i, ns, pod, container, more] of expect) {
          const a = util.get(uuid(i))!.attributes;
          assert.deepEqual(
            {
              ns: a['k8s.namespace.name'],
              pod: a['k8s.pod.name'],
              container: a['k8s.container.name'],
              node: a['k8s.node.name'],
              ...Object.fromEntries(Object.keys(more).map((k) => [k, a[k]])),
            },
            { ns, pod, container, node: NODE, ...more },
            `GPU ${i}`,
          );
          assert.equal(util.get(uuid(i))!.value, (10 * (i + 1)) / 100);
        }
        assert.equal(util.get(uuid(5))!.attributes['k8s.deployment.name'], undefined, 'a bare pod has no owner');
        // no other GPU point carries another pod's name: one series per GPU, one pod each
        assert.equal(
          latest(d, 'gpu.utilization').filter(
            (p) => p.attributes['gpu.uuid'] === uuid(0) && p.attributes['k8s.pod.name'] !== 'llama-ft-7d9f8c6b5-x2kqp',
          ).length,
          0,
        );
        const shares = latest(d, 'gpu.job.share').filter((p) => p.attributes['gpu.uuid'] === uuid(3));
        assert.ok(shares.length > 0 && shares.every((p) => p.value === 1));
        assert.ok(api.requests.length > 0 && api.requests.every((r) => r.authorization === `Bearer ${api.token}`));
        assert.equal(new URL(api.requests[0]!.path, 'https://x').searchParams.get('fieldSelector'), `spec.nodeName=${NODE}`);
        assert.ok(kubelet.calls.List >= 1 && kubelet.calls.GetAllocatableResources >= 1);

        // the kubelet restarts: its socket vanishes; the last known pods stay on the points
        await kubelet.stop();
        await d.waitStderr(/pod-resources API does not answer: the last known pod bindings are kept/);
        const down = d.stdout.length;
        await waitFor('points while the kubelet is down', () =>
          latest(d, 'gpu.utilization', down).find(
            (p) => p.attributes['gpu.uuid'] === uuid(5) && p.attributes['k8s.pod.name'] === 'debug-shell',
          ),
        );
        await waitFor('sync age grows', () => latest(d, 'l9gpu.kubernetes.sync.age', down).find((p) => p.value >= 0.5));
        // meanwhile debug-shell finished; the new kubelet no longer lists it
        const list = testdata<{ pod_resources: { name: string }[] }>('list-8gpu.json');
        list.pod_resources = list.pod_resources.filter((p) => p.name !== 'debug-shell');
        kubelet.list = list;
        const pods = testdata<PodList>('pods-8gpu.json');
        pods.items.find((p) => p.metadata.name === 'debug-shell')!.status.phase = 'Succeeded';
        api.pods = pods;
        const back = d.stdout.length;
        await kubelet.start();
        await d.waitStderr(/pod-resources API answers again/);
        const summary = await waitFor("debug-shell's job-end summary", () =>
          latest(d, 'gpu.job.energy', back).find((p) => p.attributes['k8s.pod.name'] === 'debug-shell'),
        );
        assert.equal(summary.attributes['gpu.uuid'], uuid(5));
        assert.equal(summary.attributes['k8s.namespace.name'], 'default');
        const ended = d.stdout.length;
        await waitFor('GPU 5 free', () => latest(d, 'gpu.utilization', ended).find((p) => p.attributes['gpu.uuid'] === uuid(5)));
        assert.equal(
          latest(d, 'gpu.utilization', ended).filter((p) => p.attributes['gpu.uuid'] === uuid(5) && p.attributes['k8s.pod.name']).length,
          0,
        );

        // the store: a report per pod, the ended one with the phase the API server gave
        const listed = await runCli(['pods', '--json', '--config', cfg]);
        assert.equal(listed.status, 0, listed.stderr);
        const rows = JSON.parse(listed.stdout) as {
          id: string;
          state: string;
          name: string;
          account: string;
          gpus: number;
          scheduler: string;
        }[];
        const row = (id: string) => rows.find((r) => r.id === id);
        const shell = row('default/debug-shell');
        assert.deepEqual(
          shell && { state: shell.state, name: shell.name, account: shell.account, gpus: shell.gpus, scheduler: shell.scheduler },
          { state: 'Succeeded', name: 'pod/debug-shell', account: 'default', gpus: 1, scheduler: 'kubernetes' },
        );
        assert.equal(row('ml-train/llama-ft-7d9f8c6b5-x2kqp')?.state, 'RUNNING');
        assert.equal(row('ml-train/llama-ft-7d9f8c6b5-x2kqp')?.name, 'deployment/llama-ft');
        assert.equal(row('ml-train/llama-ft-7d9f8c6b5-x2kqp')?.gpus, 2);
        assert.equal(rows.length, 6, 'the six pods holding GPUs, not the two without');
        const byWorkload = await runCli(['pods', '--by', 'name', '--json', '--config', cfg]);
        assert.equal(byWorkload.status, 0, byWorkload.stderr);
        const groups = JSON.parse(byWorkload.stdout) as { name: string; jobs: number }[];
        assert.equal(groups.find((g) => g.name === 'deployment/llama-ft')?.jobs, 2, 'the two pods of one Deployment are one workload');
        assert.equal(groups.find((g) => g.name === 'cronjob/nightly-eval')?.jobs, 1);
        const text = await runCli(['pods', '--config', cfg]);
        assert.match(text.stdout.split('\n')[0]!, /^POD\s+NAMESPACE\s+WORKLOAD\s+STATE/);
        const show = await runCli(['pods', 'show', 'default/debug-shell', '--json', '--config', cfg]);
        assert.equal(show.status, 0, show.stderr);
        const rep = JSON.parse(show.stdout) as { job: { scheduler: string; attrs: Record<string, string> }; gpus: { uuid: string }[] };
        assert.equal(rep.job.scheduler, 'kubernetes');
        assert.equal(rep.job.attrs['k8s.pod.uid'], 'd2d40d43-c692-43a3-8845-117df07818fc');
        assert.deepEqual(
          rep.gpus.map((g) => g.uuid),
          [uuid(5)],
        );

        // time-slicing: three notebooks on GPU 0, two CI runners on GPU 1, one pod with two replicas of GPU 2
        kubelet.list = testdata('list-timeslice.json');
        api.pods = testdata('pods-other.json');
        const sliced = d.stdout.length;
        const gpu0 = await waitFor('GPU 0 shared by three pods', () => {
          const s = latest(d, 'gpu.job.share', sliced).filter((p) => p.attributes['gpu.uuid'] === uuid(0));
          const last = s.slice(-3);
          return last.length === 3 && new Set(last.map((p) => p.attributes['k8s.pod.name'])).size === 3 ? last : undefined;
        });
        assert.deepEqual(gpu0.map((p) => p.attributes['k8s.pod.name']).sort(), ['notebook-alice', 'notebook-bob', 'notebook-carol']);
        assert.ok(gpu0.every((p) => Math.abs(p.value - 1 / 3) < 1e-12));
        const gpu2 = latest(d, 'gpu.job.share', sliced)
          .filter((p) => p.attributes['gpu.uuid'] === uuid(2))
          .at(-1)!;
        assert.equal(gpu2.attributes['k8s.pod.name'], 'batch-infer-2r8kq');
        assert.equal(gpu2.value, 1, 'two replicas of one GPU in one pod: one binding');
        const utilGpu0 = latest(d, 'gpu.utilization', sliced)
          .filter((p) => p.attributes['gpu.uuid'] === uuid(0))
          .slice(-3);
        assert.ok(
          utilGpu0.every((p) => p.value === 0.1),
          "each pod's copy carries the GPU's unsplit value",
        );
        // the pods of the first list ended: the llama trainer's summary covers its two GPUs
        await waitFor(
          'summaries of the replaced pods',
          () => latest(d, 'gpu.job.energy', sliced).filter((p) => p.attributes['k8s.pod.name'] === 'llama-ft-7d9f8c6b5-x2kqp').length === 2,
        );

        // an empty node: every run ends, the points carry no pod
        kubelet.list = testdata('list-empty.json');
        const empty = d.stdout.length;
        await waitFor('no open binding', () => latest(d, 'l9gpu.kubernetes.bindings', empty).find((p) => p.value === 0));
        const after = d.stdout.length;
        await waitFor('a tick after', () => latest(d, 'gpu.utilization', after).length >= 8);
        assert.equal(
          latest(d, 'gpu.utilization', after).filter((p) => Object.keys(p.attributes).some((k) => k.startsWith('k8s.'))).length,
          0,
        );
      } finally {
        await d.stop();
        await kubelet.stop();
      }
    },
  );

  test('MIG: both id forms (MIG-<uuid> and MIG-GPU-<uuid>/<gi>/<ci>) find their instance in the first batch of a --once run', async () => {
    kubelet.list = testdata('list-mig.json');
    kubelet.allocatable = testdata('allocatable-mig.json');
    api.pods = testdata('pods-other.json');
    await kubelet.start();
    const mig = (slot: number, id: string, gi: number, ci: number) => ({
      slot,
      uuid: id,
      name: 'NVIDIA H100 80GB HBM3 MIG 1g.10gb',
      gi,
      ci,
      mem_total: 10_000_000_000,
      mem_used: 1_000_000_000 * (slot + 1),
      mem_free: 1,
    });
    const modern = (gi: number) => `MIG-00b1c2d3-${gi.toString(16).padStart(4, '0')}-4000-8000-000000000000`;
    // GPU 1's instances have UUIDs the legacy ids do not say: only parent, GPU instance and compute instance match them
    const legacy = (gi: number) => `MIG-11111111-${gi.toString(16).padStart(4, '0')}-4000-8000-000000000001`;
    const fake = new FakeNvml({
      devices: [
        h100(0, {
          uuid: uuid(0),
          processes: [],
          mig_mode: 1,
          mig_max: 7,
          mig: [
            mig(0, modern(2), 2, 0),
            mig(1, modern(9), 9, 0),
            mig(2, modern(10), 10, 0),
            mig(3, modern(11), 11, 0),
            mig(4, modern(12), 12, 0),
          ],
        }),
        h100(1, {
          uuid: uuid(1),
          processes: [],
          mig_mode: 1,
          mig_max: 7,
          mig: [mig(0, legacy(2), 2, 0), mig(1, legacy(9), 9, 0), mig(2, legacy(10), 10, 0)],
        }),
        h100(2, { uuid: uuid(2), processes: [] }),
      ],
    });
    try {
      const r = await runCli(['daemon', '--once', '--config', config('mig')], fake.env());
      assert.equal(r.status, 0, r.stderr);
      const mem = parseLines(r.stdout).filter((p) => p.name === 'gpu.memory.used');
      const podOf = (u: string) =>
        mem
          .filter((p) => p.attributes['gpu.uuid'] === u)
          .map((p) => `${p.attributes['k8s.namespace.name']}/${p.attributes['k8s.pod.name']}/${p.attributes['k8s.container.name']}`);
      assert.deepEqual(podOf(modern(2)), ['research/mig-train-3g/trainer']);
      assert.deepEqual(podOf(modern(9)), ['research/mig-notebook-a/jupyter']);
      assert.deepEqual(podOf(modern(11)), ['research/mig-pair-0/worker']);
      assert.deepEqual(podOf(modern(12)), ['research/mig-pair-0/worker']);
      assert.deepEqual(podOf(legacy(2)), ['inference/mig-infer-large/server']);
      assert.deepEqual(podOf(legacy(9)), ['inference/mig-infer-small/server']);
      const free = mem.filter((p) => p.attributes['gpu.uuid'] === legacy(10));
      assert.equal(free.length, 1);
      assert.deepEqual(
        Object.keys(free[0]!.attributes).filter((k) => k.startsWith('k8s.')),
        [],
        'a free instance carries no pod',
      );
      assert.deepEqual(podOf(uuid(2)), ['research/full-gpu-job/main']);
    } finally {
      await kubelet.stop();
    }
  });

  test(
    'DRA: gpu.nvidia.com devices named gpu-<minor> are the GPUs at /dev/nvidia<minor>; a DRA ' +
      'MIG name stays unmatched, and doctor says why',
    async () => {
      kubelet.list = testdata('list-dra.json');
      kubelet.allocatable = testdata('allocatable-8gpu.json');
      api.pods = testdata('pods-other.json');
      await kubelet.start();
      // minors in another order than the indices: the match must follow the minor
      const devices = gpus8().map((g, i) => ({ ...g, minor: 7 - i }));
      const fake = new FakeNvml({ devices });
      try {
        const cfg = config('dra');
        const r = await runCli(['daemon', '--once', '--config', cfg], fake.env());
        assert.equal(r.status, 0, r.stderr);
        const util = parseLines(r.stdout).filter((p) => p.name === 'gpu.utilization');
        const pod = (minor: number) => util.find((p) => p.attributes['gpu.uuid'] === uuid(7 - minor))?.attributes['k8s.pod.name'];
        assert.equal(pod(2), 'dra-train-0');
        assert.equal(pod(5), 'dra-train-0');
        assert.equal(pod(3), 'dra-legacy-0');
        assert.equal(
          util.find((p) => p.attributes['gpu.uuid'] === uuid(0))?.attributes['k8s.pod.name'],
          'debug-shell',
          'a device-plugin GPU beside DRA claims',
        );
        const doc = await runCli(['doctor', '--config', cfg], fake.env());
        assert.match(
          doc.stdout,
          /unmatched: pod research\/dra-mig-0 container main: gpu\.nvidia\.com gpu-7-mig-1g10gb-19-6: DRA MIG device/,
        );
        assert.match(doc.stdout, /pod metadata from https:\/\/127\.0\.0\.1:\d+\/api\/v1\/pods: \d+ pod\(s\) on this node/);
      } finally {
        await kubelet.stop();
      }
    },
  );

  test(
    "pods from the kubelet's /pods: the token is sent, a refused token is said plainly, a " + 'missing socket is said with what to mount',
    async () => {
      kubelet.list = testdata('list-8gpu.json');
      api.pods = testdata('kubelet-pods-8gpu.json');
      await kubelet.start();
      const fake = new FakeNvml({ devices: gpus8() });
      try {
        const ok = config('kubelet', `pods_source = kubelet\nkubelet_url = ${api.url}\nkubelet_ca_file = ${api.caFile}\n`);
        const r = await runCli(['daemon', '--once', '--config', ok], fake.env());
        assert.equal(r.status, 0, r.stderr);
        const a = parseLines(r.stdout).find((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === uuid(3))!.attributes;
        assert.equal(a['k8s.statefulset.name'], 'vllm-serve');
        assert.ok(api.requests.some((q) => q.path === '/pods'));
        // GetAllocatableResources: a device the kubelet offers that no GPU here answers to is said before a pod gets it
        kubelet.allocatable = {
          devices: [
            { resource_name: 'nvidia.com/gpu', device_ids: [uuid(0)] },
            { resource_name: 'amd.com/gpu', device_ids: ['0000:c1:00.0'] },
          ],
          cpu_ids: [],
          memory: [],
        };
        const again = await runCli(['daemon', '--once', '--config', ok], fake.env());
        assert.equal(again.status, 0, again.stderr);
        assert.match(
          again.stderr,
          new RegExp(
            String.raw`the kubelet offers GPU devices that match no GPU of this ` +
              String.raw`node.*amd\.com\/gpu=0000:c1:00\.0: no GPU of this node is at PCI 0000:c1:00\.0`,
          ),
        );
        assert.doesNotMatch(again.stderr, /nvidia\.com\/gpu=GPU-00/);
        const badToken = join(dir, 'bad-token');
        writeFileSync(badToken, 'nope');
        const bad = config('kubelet-bad', `pods_source = kubelet\nkubelet_url = ${api.url}\nkubelet_ca_file = ${api.caFile}\n`, badToken);
        const doc = await runCli(['doctor', '--config', bad], fake.env());
        assert.match(doc.stdout, /pod metadata: https:\/\/127\.0\.0\.1:\d+\/pods: HTTP 401 \(the token was refused\)/);
        // an unverified kubelet certificate is refused unless the configuration says otherwise
        const stranger = new PodsServer().caFile; // a CA that did not sign the kubelet's certificate
        const noCa = config('kubelet-noca', `pods_source = kubelet\nkubelet_url = ${api.url}\nkubelet_ca_file = ${stranger}\n`);
        const unverified = await runCli(['doctor', '--config', noCa], fake.env());
        assert.match(
          unverified.stdout,
          /pod metadata: https:\/\/127\.0\.0\.1:\d+\/pods: .*(certificate|self.signed|issuer)/i,
          unverified.stderr,
        );
        await kubelet.stop();
        const gone = await runCli(['doctor', '--config', ok], fake.env());
        assert.match(
          gone.stdout,
          new RegExp(
            String.raw`kubelet\.sock does not exist \(is the kubelet running, and is ` +
              String.raw`\/var\/lib\/kubelet\/pod-resources mounted into this container\?\)`,
          ),
        );
      } finally {
        await kubelet.stop();
      }
    },
  );
});

describe("kubernetes attribution at a start: the previous run's pods and the kubelet's first answer", () => {
  const dir = tempDir('l9gpu-k8s-start-');
  const kubelet = new PodResourcesServer(join(dir, 'kubelet.sock'));
  const api = new PodsServer();
  const cfg = join(dir, 'start.ini');
  before(async () => {
    await api.start();
    writeFileSync(
      cfg,
      `[daemon]\nattribution = kubernetes\nplugins = nvml\nsinks = stdout\nstate_dir = ${join(dir, 'state')}\n[kubernetes]\nsocket ` +
        `= ${kubelet.socket}\nnode_name = ${NODE}\napi_url = ${api.url}\ntoken_file = ${api.tokenFile}\nca_file ` +
        `= ${api.caFile}\nrefresh_interval = 2s\n`,
    );
  });
  after(async () => {
    await kubelet.stop();
    await api.stop();
  });
  const podOf = (points: JsonPoint[], i: number) =>
    points.filter((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === uuid(i)).at(-1)?.attributes['k8s.pod.name'];

  test(
    'no kubelet answer at the start: no pod of the previous run on the points; the first ' +
      'answer, over the 16 MiB receive bound, is read and ends the pods gone',
    async () => {
      const fake = await serveEightGpus(kubelet, api);
      try {
        const before = await runCli(['daemon', '--once', '--config', cfg], fake.env());
        assert.equal(before.status, 0, before.stderr);
        assert.equal(podOf(parseLines(before.stdout), 5), 'debug-shell', 'the store holds the pods of this run');
        // the node reboots; the daemon is up before the kubelet
        await kubelet.stop();
        const early = await runCli(['daemon', '--once', '--config', cfg], fake.env());
        assert.equal(early.status, 0, early.stderr);
        const util = parseLines(early.stdout).filter((p) => p.name === 'gpu.utilization');
        assert.equal(util.length, 8);
        assert.deepEqual(
          util
            .filter((p) => Object.keys(p.attributes).some((k) => k.startsWith('k8s.')))
            .map((p) => `${p.attributes['gpu.uuid']}: ${p.attributes['k8s.pod.name']}`),
          [],
          "the previous run's pods, unconfirmed",
        );
        assert.match(
          early.stderr,
          new RegExp(
            String.raw`pod-resources API does not answer: GPU points carry no pod until it does \(the ` +
              String.raw`store's pods are the previous run's, unconfirmed\)`,
          ),
        );
        // the kubelet is back: debug-shell did not survive the reboot, and the List answer is over 16 MiB (synthetic: no
        // real node has a million devices of one resource; what is tested is the receive bound, 17 MB answered)
        const list = testdata<{ pod_resources: { name: string }[] }>('list-8gpu.json');
        list.pod_resources = list.pod_resources.filter((p) => p.name !== 'debug-shell');
        const ids = Array.from({ length: 900_000 }, (_, i) => `fpga-${String(i).padStart(12, '0')}`);
        list.pod_resources.push({
          name: 'fpga-farm-0',
          namespace: 'hw',
          containers: [
            {
              name: 'main',
              devices: [{ resource_name: 'example.com/fpga', device_ids: ids }],
              cpu_ids: [],
              memory: [],
              dynamic_resources: [],
            },
          ],
        } as { name: string });
        kubelet.list = list;
        await kubelet.start();
        const d = new DaemonProcess(['--config', cfg, '--interval', '200ms'], fake.env());
        try {
          await d.waitStderr(
            new RegExp(
              String.raw`the kubelet's pod-resources List answer is over the receive bound: read again ` +
                String.raw`with a larger one bytes=1\d{7} from_mib=16 to_mib=2\d`,
            ),
            30_000,
          );
          const points = await waitFor(
            "the new answer's pods on the points",
            () => {
              const p = d.points();
              return podOf(p, 0) === 'llama-ft-7d9f8c6b5-x2kqp' && podOf(p, 5) === undefined ? p : undefined;
            },
            30_000,
          );
          assert.equal(podOf(points, 3), 'vllm-serve-0');
          assert.doesNotMatch(d.stderr, /does not answer/);
          // no point of this daemon carried the pod that ended while the node was down (its job-end summary aside)
          assert.equal(points.filter((p) => p.attributes['k8s.pod.name'] === 'debug-shell' && !p.name.startsWith('gpu.job.')).length, 0);
        } finally {
          await d.stop();
        }
      } finally {
        await kubelet.stop();
      }
    },
  );
});

describe('device ids, owners and pod lists, case by case', () => {
  const gpus = new KnownGpus();
  gpus.learn([
    {
      uuid: uuid(0),
      vendor: 'nvidia',
      vendorIndex: 0,
      minor: 4,
      pciBusId: '00000000:18:00.0',
      model: 'H100',
      migParent: null,
      migGi: null,
      migCi: null,
    },
    {
      uuid: 'MIG-aaaaaaaa-0000-4000-8000-000000000000',
      vendor: 'nvidia',
      vendorIndex: 0,
      minor: null,
      pciBusId: '00000000:18:00.0',
      model: 'H100 MIG',
      migParent: uuid(0),
      migGi: 3,
      migCi: 0,
    },
    {
      uuid: 'amd-gpu-1',
      vendor: 'amd',
      vendorIndex: 1,
      minor: null,
      pciBusId: '0000:c1:00.0',
      model: 'MI300X',
      migParent: null,
      migGi: null,
      migCi: null,
    },
  ]);
  const m = (resource: string, id: string, dra = false) => matchDevice(resource, id, gpus, dra);

  test('every id form the device plugins and DRA drivers use, and the near misses that must stay unmatched', () => {
    assert.deepEqual(m('nvidia.com/gpu', uuid(0)), { uuid: uuid(0), shared: false, how: 'UUID' });
    assert.deepEqual(m('nvidia.com/gpu', `${uuid(0)}::3`), { uuid: uuid(0), shared: true, how: 'UUID' });
    assert.equal(m('nvidia.com/gpu', uuid(6)).uuid, uuid(6), 'a UUID not sampled yet is still that GPU');
    // the legacy form: MIG- and the parent's UUID (GPU-...), its GPU instance and compute instance
    assert.equal(m('nvidia.com/mig-1g.10gb', `MIG-${uuid(0)}/3/0`).uuid, 'MIG-aaaaaaaa-0000-4000-8000-000000000000');
    assert.match(
      (m('nvidia.com/mig-1g.10gb', `MIG-${uuid(0)}/4/0`) as { why: string }).why,
      /no GPU of this node is MIG device 4\/0 of GPU-00a1b2c3/,
    );
    assert.match((m('nvidia.com/mig-1g.10gb', `MIG-${uuid(0)}/3/1`) as { why: string }).why, /MIG device 3\/1/);
    assert.equal(m('amd.com/gpu', '0000:c1:00.0').uuid, 'amd-gpu-1');
    assert.equal(m('amd.com/gpu', '0000:C1:00.0').uuid, 'amd-gpu-1', 'PCI addresses compare case-insensitively');
    assert.equal(m('amd.com/gpu', '0000:c2:00.0').uuid, undefined);
    assert.equal(m('nvidia.com/gpu', '0000:18:00.0').uuid, uuid(0), 'a MIG device at the same address is not the GPU');
    assert.equal(m('gpu.nvidia.com', 'gpu-4', true).uuid, uuid(0), 'DRA gpu-<minor>');
    assert.equal(m('gpu.nvidia.com', 'gpu-0', true).uuid, undefined, 'index 0 is not minor 0');
    assert.equal(m('nvidia.com/gpu', 'gpu-4').uuid, undefined, 'only DRA names devices gpu-<n>');
    assert.match((m('gpu.nvidia.com', 'gpu-4-mig-1g10gb-19-6', true) as { why: string }).why, /ResourceSlice/);
    assert.match((m('nvidia.com/gpu', '3') as { why: string }).why, /is an index/);
    assert.match((m('amd.com/cpx_nps4', 'amdgpu_xcp_30') as { why: string }).why, /compute partition/);
    assert.match((m('habana.ai/gaudi', 'AO10000003') as { why: string }).why, /serial number/);
  });

  test(
    "owners: a Deployment through its ReplicaSet's pod-template-hash, a CronJob through its " + "Job's scheduled minute, the rest by kind",
    () => {
      const rs = [{ kind: 'ReplicaSet', name: 'web-7d9f8c6b5', controller: true }];
      assert.deepEqual(ownerAttributes(rs, { 'pod-template-hash': '7d9f8c6b5' }).attrs, {
        'k8s.replicaset.name': 'web-7d9f8c6b5',
        'k8s.deployment.name': 'web',
        'k8s.owner.kind': 'ReplicaSet',
        'k8s.owner.name': 'web-7d9f8c6b5',
      });
      assert.equal(
        ownerAttributes(rs, { 'pod-template-hash': 'other' }).attrs['k8s.deployment.name'],
        undefined,
        'a ReplicaSet not named after the hash has no Deployment',
      );
      assert.equal(ownerAttributes([{ kind: 'Job', name: 'nightly-29557560' }], {}).attrs['k8s.cronjob.name'], 'nightly');
      assert.equal(ownerAttributes([{ kind: 'Job', name: 'train-42' }], {}).attrs['k8s.cronjob.name'], undefined);
      assert.equal(
        ownerAttributes(
          [
            { kind: 'Node', name: 'x', controller: false },
            { kind: 'StatefulSet', name: 'db', controller: true },
          ],
          {},
        ).workload,
        'statefulset/db',
      );
      assert.deepEqual(ownerAttributes('junk', {}), { attrs: {}, workload: undefined });
    },
  );

  test('a pod list is untrusted input: items without metadata are left out by position, a non-list is refused by name', () => {
    const { pods, skipped } = parsePodList(
      JSON.stringify({
        kind: 'PodList',
        items: [
          { metadata: { name: 'a', namespace: 'n', uid: 'u1', labels: { team: 'x', bad: 3 } }, status: { startTime: 'garbage' } },
          { metadata: { name: 'b' } },
          null,
        ],
      }),
      ['team', 'bad'],
    );
    assert.deepEqual([...pods.keys()], ['n/a']);
    assert.deepEqual(pods.get('n/a')!.attrs, { 'k8s.pod.uid': 'u1', 'k8s.pod.label.team': 'x' });
    assert.equal(pods.get('n/a')!.startTime, undefined);
    assert.deepEqual(skipped, ['items[1]: no metadata.namespace, .name or .uid', 'items[2]: no metadata.namespace, .name or .uid']);
    assert.throws(() => parsePodList('{"kind":"Status","message":"Forbidden"}', []), /not a PodList \(kind "Status", no items array\)/);
    assert.throws(() => parsePodList('<html>', []), /not JSON/);
  });

  test('the pod-resources rate limit: a burst of 10, then 100 calls a second', () => {
    const t = 1_000_000;
    const r = new RateLimit(100, 10, t);
    const waits = Array.from({ length: 12 }, () => r.take(t));
    assert.deepEqual(waits.slice(0, 10), Array(10).fill(0));
    assert.ok(waits[10]! > 0 && waits[10]! <= 10);
    assert.equal(r.take(t + 20), 0, 'a token back after 10 ms');
  });
});
