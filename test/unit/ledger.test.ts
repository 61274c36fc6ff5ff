/**
 * The job ledger on its own, fed attributed batches the way any provider
 * would (here a pod-like provider, not Slurm): rollups and series in a real
 * SQLite store, the GPU inventory, and one job-end summary when the job
 * leaves the GPU. It reads nothing but the batch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Batch, JobShare, Point } from '../../src/core/metrics/model.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { JobLedger } from '../../src/ledger/ledger.js';
import { openStore } from '../../src/store/open.js';
import { recordStart } from '../../src/store/jobs.js';
import { metric } from '../../src/core/metrics/registry.js';
import { inferenceOf } from '../../src/jobs/report.js';
import { addBuckets } from '../../src/figures/buckets.js';
import { tempDir } from '../helpers/paths.js';

/**
 * A batch of a process's series as the Slurm attribution leaves it: each point of a job carries the job's
 * slurm.* attributes and the provider-neutral run key the ledger reads (Point.job: the job id, and the keys added).
 */
function observeAttributed(ledger: JobLedger, b: Batch): Point[] {
  const stamp = (p: Point): Point => {
    const id = p.attributes['slurm.job.id'];
    if (typeof id !== 'string') return p;
    return { ...p, job: { id, added: Object.keys(p.attributes).filter((k) => k.startsWith('slurm.')) } };
  };
  return ledger.observe({ ...b, points: b.points.map(stamp) });
}

const id = gpuAttributes({ index: 0, uuid: 'GPU-aaaa', model: 'NVIDIA H100 80GB HBM3', vendor: 'nvidia', pciBusId: '0000:18:00.0' });
const pod: Attributes = { 'k8s.pod.name': 'trainer-0', 'k8s.namespace.name': 'ml' };

function batch(t: number, util: number, energyJ: number, jobs: readonly JobShare[]): Batch {
  const points: Point[] = [
    { metric: GPU.util, value: util, attributes: { ...id, ...(jobs.length ? pod : {}) } },
    { metric: GPU.memUsed, value: 1e9, attributes: { ...id, ...(jobs.length ? pod : {}) } },
    { metric: GPU.memTotal, value: 8e10, attributes: id },
    { metric: GPU.energy, value: energyJ, attributes: id },
  ];
  return { source: 'nvml', time: t, intervalMs: 1000, points, ...(jobs.length ? { jobs: new Map([['GPU-aaaa', jobs]]) } : {}) };
}

test('the ledger keeps rollups, series and inventory from an attributed batch alone, and ends the job once', () => {
  const db = openStore(tempDir());
  const ledger = new JobLedger(
    db,
    createLogger('error', () => {}),
    { seriesMs: 86_400_000, jobsMs: 86_400_000 },
  );
  const held: JobShare[] = [{ jobId: 'uid-1234', runKey: 'r0', share: 1, attributes: pod }];
  const t0 = 1_800_000_000_000;
  assert.deepEqual(ledger.observe(batch(t0, 0.5, 1000, held)), []);
  assert.deepEqual(ledger.observe(batch(t0 + 1000, 0.7, 1300, held)), []);
  assert.deepEqual(ledger.observe(batch(t0 + 2000, 0.9, 1700, held)), []);
  const row = db
    .prepare('SELECT samples, covered_s, util_mean, energy_j FROM job_gpu WHERE job_id = ? AND run_key = ? AND gpu_uuid = ?')
    .get('uid-1234', 'r0', 'GPU-aaaa') as Record<string, number>;
  assert.deepEqual(row, { samples: 3, covered_s: 2, util_mean: 0.7, energy_j: 700 });
  assert.equal((db.prepare('SELECT COUNT(*) AS n FROM gpus WHERE uuid = ?').get('GPU-aaaa') as { n: number }).n, 1, 'inventory');
  assert.equal(
    (db.prepare('SELECT SUM(n) AS n FROM job_gpu_series WHERE job_id = ?').get('uid-1234') as { n: number }).n,
    3,
    'per-minute series',
  );

  const end = ledger.observe(batch(t0 + 3000, 0, 1800, []));
  assert.deepEqual(
    end.map((p) => [p.metric.name, p.value, p.attributes['k8s.pod.name'], p.attributes['gpu.uuid']]),
    [
      ['gpu.job.energy', 700, 'trainer-0', 'GPU-aaaa'],
      ['gpu.job.duration', 2, 'trainer-0', 'GPU-aaaa'],
      ['gpu.job.utilization', 0.7, 'trainer-0', 'GPU-aaaa'],
      ['gpu.job.memory.peak', 1e9, 'trainer-0', 'GPU-aaaa'],
    ],
  );
  assert.deepEqual(ledger.observe(batch(t0 + 4000, 0, 1900, [])), [], 'the summary is sent once');
  db.close();
});

test('a batch without the GPU says nothing about its jobs; a shared GPU splits energy by share', () => {
  const db = openStore(tempDir());
  const ledger = new JobLedger(
    db,
    createLogger('error', () => {}),
    { seriesMs: 86_400_000, jobsMs: 86_400_000 },
  );
  const a: JobShare = { jobId: 'a', runKey: 'r0', share: 0.25, attributes: { 'slurm.job.id': 'a' } };
  const b: JobShare = { jobId: 'b', runKey: 'r0', share: 0.75, attributes: { 'slurm.job.id': 'b' } };
  const t0 = 1_800_000_000_000;
  ledger.observe(batch(t0, 1, 0, [a, b]));
  ledger.observe(batch(t0 + 1000, 1, 400, [a, b]));
  assert.deepEqual(
    ledger.observe({ source: 'host', time: t0 + 1500, intervalMs: 1000, points: [] }),
    [],
    'another source, no GPU: no job ends',
  );
  const energy = (job: string) => (db.prepare('SELECT energy_j FROM job_gpu WHERE job_id = ?').get(job) as { energy_j: number }).energy_j;
  assert.equal(energy('a'), 100);
  assert.equal(energy('b'), 300);
  const end = ledger.observe(batch(t0 + 2000, 1, 800, [b]));
  assert.deepEqual(
    end.filter((p) => p.metric.name === 'gpu.job.energy').map((p) => [p.attributes['slurm.job.id'], p.value]),
    [['a', 100]],
  );
  db.close();
});

test(
  'inference figures: counter and bucket increases between scrapes, a restart counted from ' +
    'its new count, several series and engines of one job added up',
  () => {
    const db = openStore(tempDir('l9gpu-ledger-engine-'));
    try {
      recordStart(db, { jobId: '77', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' }, [], 'prolog');
      const ledger = new JobLedger(
        db,
        createLogger('error', () => {}),
        { seriesMs: 1e12, jobsMs: 1e12 },
      );
      const at = (port: number, extra: Attributes = {}): Attributes => ({
        'server.address': '127.0.0.1',
        'server.port': port,
        'gen_ai.request.model': 'm',
        'slurm.job.id': '77',
        ...extra,
      });
      const TTFT = metric('vllm.time_to_first_token');
      const hist = (counts: number[]): Point => ({
        metric: TTFT,
        value: counts.reduce((a, b) => a + b, 0),
        attributes: at(8000),
        hist: { bounds: [0.1, 1], counts, sum: 0, count: counts.reduce((a, b) => a + b, 0) },
      });
      const tick = (time: number, finished: [number, number], gen: number, ttft: number[]) =>
        observeAttributed(ledger, {
          source: 'vllm',
          time,
          intervalMs: 1000,
          points: [
            { metric: metric('vllm.requests.finished'), value: finished[0], attributes: at(8000, { 'vllm.finished_reason': 'stop' }) },
            { metric: metric('vllm.requests.finished'), value: finished[1], attributes: at(8000, { 'vllm.finished_reason': 'length' }) },
            { metric: metric('vllm.tokens.generation'), value: gen, attributes: at(8000) },
            hist(ttft),
            // a job's second engine, on another port: its own row
            { metric: metric('vllm.tokens.generation'), value: 1000, attributes: at(8001) },
            // a point without a job is nobody's
            { metric: metric('vllm.tokens.generation'), value: 5, attributes: { 'server.address': '127.0.0.1', 'server.port': 9000 } },
          ],
        } as Batch);
      tick(1000, [2, 1], 100, [1, 2, 0]); // first scrape: whole (the engine's process is the job's)
      tick(2000, [5, 1], 160, [1, 4, 1]); // +3 requests, +60 tokens, +2 in (0.1, 1], +1 above 1
      tick(3000, [1, 0], 10, [0, 1, 0]); // restarted: its new counts
      const inf = inferenceOf(db, '77', 'r0', 1000)!;
      assert.deepEqual(inf.engines, [
        { engine: 'vllm', endpoint: '127.0.0.1:8000', model: 'm' },
        { engine: 'vllm', endpoint: '127.0.0.1:8001', model: 'm' },
      ]);
      assert.equal(inf.requests, 3 + 3 + 1);
      assert.equal(inf.generation_tokens, 100 + 60 + 10 + 1000);
      // TTFT buckets over the job: (0, 0.1] 1, (0.1, 1] 2 + 2 + 1 = 5, above 1: 1; p50 rank 3.5: 0.1 + 0.9 x 2.5/5
      assert.equal(inf.ttft_p50_s, 0.55);
      assert.equal(inf.serving_s, 2);
      assert.equal(inf.tokens_per_j, 1.17);
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM job_engine').get() as { n: number }).n, 2, 'no row for the point without a job');
      // the daemon restarted (a new ledger on the same store), and attribution now adds more of the job: the same
      // series, counted from where the store left it, not whole again
      const again = new JobLedger(
        db,
        createLogger('error', () => {}),
        { seriesMs: 1e12, jobsMs: 1e12 },
      );
      observeAttributed(again, {
        source: 'vllm',
        time: 4000,
        intervalMs: 1000,
        points: [
          { metric: metric('vllm.tokens.generation'), value: 25, attributes: { ...at(8000), 'slurm.user': 'alice', 'gpu.uuids': 'GPU-a' } },
          { metric: metric('vllm.tokens.generation'), value: 1000, attributes: at(8001) },
        ],
      } as Batch);
      assert.equal(inferenceOf(db, '77', 'r0', 1000)!.generation_tokens, 100 + 60 + 10 + 1000 + 15);
    } finally {
      db.close();
    }
  },
);

test(
  'latency buckets of other bounds (two engines, or one upgraded mid-job) merge by the union ' + 'of their bounds, no observation lost',
  () => {
    assert.deepEqual(addBuckets({ bounds: [1, 2], counts: [1, 1, 0] }, { bounds: [1.5], counts: [2, 1] }), {
      bounds: [1, 1.5, 2],
      counts: [1, 2, 1, 1],
    });
    assert.deepEqual(addBuckets({ bounds: [1], counts: [1, 2] }, { bounds: [1], counts: [3, 4] }), { bounds: [1], counts: [4, 6] });
  },
);

test(
  'communication figures: operations, bytes and seconds added per communicator, collective, ' +
    "size and rank; a rank known by the Inspector's job id alone; a restart counted from its " +
    'new count',
  () => {
    const db = openStore(tempDir('l9gpu-ledger-nccl-'));
    try {
      recordStart(db, { jobId: '88', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' }, [], 'prolog');
      const ledger = new JobLedger(
        db,
        createLogger('error', () => {}),
        { seriesMs: 1e12, jobsMs: 1e12 },
      );
      // the attributes plugins/nccl/aggregate.ts gives a rank's series
      const at = (rank: number, job: Attributes): Attributes => ({
        'nccl.collective': 'AllReduce',
        'nccl.ranks': 2,
        'nccl.nodes': 1,
        'nccl.comm.id': '0x5a1b',
        'nccl.comm.name': 'dp',
        'nccl.rank': rank,
        'nccl.message.size': '64MiB',
        ...job,
      });
      const MIB64 = 64 * 2 ** 20;
      const rank = (r: number, job: Attributes, ops: number, seconds: number): Point[] => [
        { metric: metric('nccl.operations'), value: ops, attributes: at(r, job) },
        { metric: metric('nccl.bytes'), value: ops * MIB64, attributes: at(r, job) },
        {
          metric: metric('nccl.exec.time'),
          value: ops,
          attributes: at(r, job),
          hist: { bounds: [0.01, 0.1], counts: [0, ops, 0], sum: seconds, count: ops },
        },
      ];
      const tick = (time: number, r0: [number, number], r1: [number, number]) =>
        observeAttributed(ledger, {
          source: 'nccl',
          time,
          intervalMs: 1000,
          points: [
            ...rank(0, { 'slurm.job.id': '88' }, ...r0),
            // attribution found no process of the job for rank 1: the job id the Inspector's file names stands for it
            ...rank(1, { 'nccl.job.id': '88' }, ...r1),
            // a rank of no job is nobody's
            ...rank(5, {}, 7, 0.5),
            // a gauge: not counted
            { metric: metric('nccl.bandwidth.bus'), value: 1e9, attributes: at(0, { 'slurm.job.id': '88' }) },
          ],
        } as Batch);
      tick(1000, [10, 0.5], [10, 1.5]); // first records: whole (the rank's process is the job's)
      tick(2000, [25, 1.25], [3, 0.25]); // rank 0: +15 operations, +0.75 s; rank 1 restarted: its new counts
      const rows = db
        .prepare(
          'SELECT comm, comm_name, collective, size, rank, n_ranks, n_nodes, first_time, last_time, ' +
            'ops, bytes, seconds FROM job_nccl WHERE job_id = ? AND run_key = ? ORDER BY rank',
        )
        .all('88', 'r0');
      const row = {
        comm: '0x5a1b',
        comm_name: 'dp',
        collective: 'AllReduce',
        size: '64MiB',
        n_ranks: 2,
        n_nodes: 1,
        first_time: 1000,
        last_time: 2000,
      };
      assert.deepEqual(rows, [
        { ...row, rank: 0, ops: 25, bytes: 25 * MIB64, seconds: 1.25 },
        { ...row, rank: 1, ops: 13, bytes: 13 * MIB64, seconds: 1.75 },
      ]);
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM job_nccl').get() as { n: number }).n, 2, 'no row for the rank without a job');
    } finally {
      db.close();
    }
  },
);

test(
  'engine and NCCL figures while another writer holds the store: each kind says so once, and ' +
    'both are written again when the lock is gone, with what was counted meanwhile',
  () => {
    const dir = tempDir('l9gpu-ledger-locked-');
    const db = openStore(dir, { busyTimeoutMs: 0 });
    const other = openStore(dir, { busyTimeoutMs: 0 });
    try {
      recordStart(db, { jobId: '77', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' }, [], 'prolog');
      const lines: string[] = [];
      const ledger = new JobLedger(
        db,
        createLogger('info', (l) => lines.push(l)),
        { seriesMs: 1e12, jobsMs: 1e12 },
      );
      const job = { 'slurm.job.id': '77' };
      const tick = (time: number, n: number) =>
        observeAttributed(ledger, {
          source: 'x',
          time,
          intervalMs: 1000,
          points: [
            {
              metric: metric('vllm.tokens.generation'),
              value: n,
              attributes: { 'server.address': '127.0.0.1', 'server.port': 8000, ...job },
            },
            {
              metric: metric('nccl.operations'),
              value: n,
              attributes: {
                'nccl.collective': 'AllReduce',
                'nccl.ranks': 1,
                'nccl.nodes': 1,
                'nccl.comm.id': '0x1',
                'nccl.rank': 0,
                'nccl.message.size': '1MiB',
                ...job,
              },
            },
          ],
        } as Batch);
      const last = () => [
        (db.prepare('SELECT last_time FROM job_engine').get() as { last_time: number }).last_time,
        (db.prepare('SELECT last_time FROM job_nccl').get() as { last_time: number }).last_time,
      ];
      tick(1000, 1);
      assert.deepEqual(last(), [1000, 1000]);
      other.exec('BEGIN IMMEDIATE');
      tick(2000, 2);
      tick(3000, 3);
      other.exec('COMMIT');
      assert.equal(lines.length, 2, lines.join(''));
      assert.match(
        lines[0]!,
        new RegExp(
          String.raw`error \[l9gpu\] cannot update the jobs' inference figures: the engine counts ` +
            String.raw`since the last write go in at the next one error=.*database is locked`,
        ),
      );
      assert.match(
        lines[1]!,
        new RegExp(
          String.raw`error \[l9gpu\] cannot update the jobs' communication figures: the NCCL counts ` +
            String.raw`since the last write go in at the next one error=.*database is locked`,
        ),
      );
      assert.deepEqual(last(), [1000, 1000], 'nothing written under the lock');
      tick(4000, 4);
      assert.deepEqual(last(), [4000, 4000]);
      // the two ticks under the lock are not lost: the counters went 1 -> 4, and 4 is what the figures hold
      assert.deepEqual(
        [
          (db.prepare('SELECT generation_tokens FROM job_engine').get() as { generation_tokens: number }).generation_tokens,
          (db.prepare('SELECT ops FROM job_nccl').get() as { ops: number }).ops,
        ],
        [4, 4],
      );
      assert.equal(lines.length, 4, lines.join(''));
      assert.match(lines[2]!, /info \[l9gpu\] job ledger \(inference figures\): writing again after=.*database is locked/);
      assert.match(lines[3]!, /info \[l9gpu\] job ledger \(communication figures\): writing again after=.*database is locked/);
      tick(5000, 5);
      assert.equal(lines.length, 4, 'said once');
    } finally {
      other.close();
      db.close();
    }
  },
);

test('per node (info mode): one summary set once the run has left every GPU of the node, its GPUs folded as the report folds them', () => {
  const db = openStore(tempDir());
  const prices = { perGpuHour: 3600, perModel: [] as [string, number][], perKwh: null, currency: 'USD' };
  const ledger = new JobLedger(
    db,
    createLogger('error', () => {}),
    { seriesMs: 86_400_000, jobsMs: 86_400_000 },
    { prices: () => prices, node: () => 'n1' },
    'node',
  );
  const ids = ['GPU-aaaa', 'GPU-bbbb'].map((uuid, index) =>
    gpuAttributes({ index, uuid, model: 'NVIDIA H100 80GB HBM3', vendor: 'nvidia', pciBusId: `0000:1${index}:00.0` }),
  );
  const run: JobShare = { jobId: '42', runKey: 'r0', share: 1, attributes: { 'slurm.job.id': '42', 'slurm.user': 'alice' } };
  const other: JobShare = { jobId: '43', runKey: 'r0', share: 1, attributes: { 'slurm.job.id': '43' } };
  // GPU a: utilization 0.2 for 2 s, memory 1 GB; GPU b: 0.8 for 4 s, memory 3 GB; energy 100 J/s and 50 J/s
  const tick = (i: number, holders: [JobShare[], JobShare[]]): Point[] => {
    const points = ids.flatMap((a, g) => [
      { metric: GPU.util, value: g === 0 ? 0.2 : 0.8, attributes: a },
      { metric: GPU.memUsed, value: (g === 0 ? 1 : 3) * 1e9, attributes: a },
      { metric: GPU.energy, value: i * (g === 0 ? 100 : 50), attributes: a },
    ]);
    const jobs = new Map(ids.map((a, g) => [a['gpu.uuid'] as string, holders[g]!]));
    // the cost rates (gpu.cost.rate) go out every tick with a price: the summaries are the gpu.job.* points
    return ledger
      .observe({ source: 'nvml', time: 1_800_000_000_000 + i * 1000, intervalMs: 1000, points, jobs })
      .filter((p) => p.metric.name.startsWith('gpu.job.'));
  };
  for (let i = 0; i <= 2; i++) assert.deepEqual(tick(i, [[run], [run]]), []);
  // the run leaves GPU a, another run takes it: nothing yet, the run holds GPU b still
  for (let i = 3; i <= 4; i++) assert.deepEqual(tick(i, [[other], [run]]), []);
  const end = tick(5, [[other], []]);
  assert.deepEqual(
    end.map((p) => [p.metric.name, p.value, p.attributes['gpu.count'], p.attributes['gpu.uuid'], p.attributes['slurm.user']]),
    [
      ['gpu.job.energy', 2 * 100 + 4 * 50, 2, undefined, 'alice'],
      ['gpu.job.duration', 6, 2, undefined, 'alice'],
      ['gpu.job.utilization', (0.2 * 2 + 0.8 * 4) / 6, 2, undefined, 'alice'],
      ['gpu.job.memory.peak', 3e9, 2, undefined, 'alice'],
      ['gpu.job.cost', end[4]!.value, 2, undefined, 'alice'],
    ],
  );
  // each GPU priced as its own summary is, on GPU-hours kept to 6 decimals: 3600 x (0.000556 + 0.001111)
  assert.ok(Math.abs((end[4]!.value as number) - 6.0012) < 1e-9, String(end[4]!.value));
  assert.equal(end[4]!.attributes['cost.currency'], 'USD');
  assert.deepEqual(tick(6, [[other], []]), [], 'once');
  // the store keeps the run's figures per GPU
  assert.equal((db.prepare("SELECT COUNT(*) AS n FROM job_gpu WHERE job_id = '42'").get() as { n: number }).n, 2);
  db.close();
});
