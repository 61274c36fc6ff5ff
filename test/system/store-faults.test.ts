/**
 * A store the daemon and the hooks cannot use as it is: garbage, truncated,
 * made by a newer l9gpu, or on a read-only filesystem. The daemon keeps
 * sampling and exporting (without job attributes while it must), a damaged
 * store is moved aside and a new one started, a newer one is kept as it is,
 * and the hooks exit 0 (issue 12, defect 2).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { recordStart } from '../../src/store/jobs.js';
import { openStore, STORE_FILE } from '../../src/store/open.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { slurmControllerDown } from '../helpers/slurm-down.js';
import { waitFor } from '../helpers/wait.js';

const GPU = h100(0);

function node(): { dir: string; state: string; config: string; fake: FakeNvml } {
  const dir = tempDir('l9gpu-store-faults-');
  chmodSync(dir, 0o755);
  const slurm = slurmControllerDown(dir, 'gpunode1');
  const config = join(dir, 'l9gpu.ini');
  writeFileSync(config, `[daemon]\n${slurm.daemon}interval = 200ms\n${slurm.slurm}`);
  mkdirSync(slurm.state, { recursive: true, mode: 0o755 });
  return { dir, state: slurm.state, config, fake: new FakeNvml({ devices: [GPU] }) };
}

function daemon(n: ReturnType<typeof node>): DaemonProcess {
  return new DaemonProcess(['--config', n.config, '--plugin', 'nvml', '--sink', 'stdout'], n.fake.env());
}

/** The daemon's own bound (docs/performance.md: 64 MB peak on the nvml + Slurm path), with room for this loaded test machine. */
const PEAK_MB = 96;
function boundedMemory(d: DaemonProcess, what: string): void {
  const mb = d.peakRssMb();
  if (process.env.L9GPU_FUZZ_REPORT) process.stdout.write(`fault: ${what}: peak RSS ${mb.toFixed(1)} MB\n`);
  assert.ok(mb <= PEAK_MB, `${what}: peak RSS ${mb.toFixed(1)} MB`);
}

const gpuPoints = (d: DaemonProcess) => d.points().filter((p) => p.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === GPU.uuid);

/** A real store with one open binding on the GPU, as a prolog leaves it. */
function storeWithJob(state: string, jobId: string): void {
  const db = openStore(state);
  recordStart(
    db,
    { jobId, runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' },
    [{ uuid: GPU.uuid, shared: false }],
    'prolog',
    Date.now(),
  );
  db.close();
}

for (const [what, spoil] of [
  [
    'overwritten with garbage',
    (path: string) => writeFileSync(path, Buffer.from(Array.from({ length: 65536 }, (_, i) => (i * 7919 + 13) & 0xff))),
  ],
  // a real store cut in half: its header is intact, so opening it works and only a page check finds it
  ['truncated', (path: string) => truncateSync(path, Math.floor(statSync(path).size / 2))],
] as const) {
  test(`a store ${what}: the daemon moves it aside, starts a new one and attributes the next job; nothing stops sampling`, async () => {
    const n = node();
    storeWithJob(n.state, '41');
    for (let i = 0; i < 200; i++) storeWithJob(n.state, String(1000 + i)); // pages beyond the first, for the truncation
    const path = join(n.state, STORE_FILE);
    const w = new Database(path);
    w.pragma('wal_checkpoint(TRUNCATE)');
    w.close();
    spoil(path);
    const spoilt = readFileSync(path);
    const d = daemon(n);
    try {
      const m = await d.waitStderr(/store (\S+) was damaged \((.+?)\): moved to (\S+), a new store started/);
      assert.equal(m[1], path);
      assert.deepEqual(readFileSync(m[3]!), spoilt, 'the damaged file is kept, byte for byte, for a post-mortem');
      await waitFor('GPU points', () => gpuPoints(d).length >= 2);
      // the new store takes the next prolog, and the daemon attributes it
      storeWithJob(n.state, '42');
      await waitFor('job 42 on the GPU', () => gpuPoints(d).some((p) => p.attributes['slurm.job.id'] === '42'), 20_000);
      boundedMemory(d, `store ${what}`);
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
    assert.equal(readdirSync(n.state).filter((f) => f.startsWith(`${STORE_FILE}.corrupt-`) && !/-(wal|shm)$/.test(f)).length, 1);
  });
}

test('a store made by a newer l9gpu (a downgrade): read, never written; its jobs still attribute, said at the start', async () => {
  const n = node();
  storeWithJob(n.state, '41');
  const path = join(n.state, STORE_FILE);
  const db = new Database(path);
  db.pragma('user_version = 999');
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const before = readFileSync(path);
  const d = daemon(n);
  try {
    await d.waitStderr(
      new RegExp(
        String.raw`store \S+ has schema version 999, newer than this l9gpu \(\d+\): a downgrade\. ` +
          String.raw`It is opened read-only and never written: GPU metrics keep the jobs the store ` +
          String.raw`already binds .* Upgrade l9gpu`,
      ),
    );
    // the binding the newer daemon wrote still attributes the GPU: no silent loss of attribution
    await waitFor('job 41 on the GPU', () => gpuPoints(d).some((p) => p.attributes['slurm.job.id'] === '41'), 20_000);
    await waitFor("the users' jobs socket", () => readdirSync(n.state).includes('jobs.sock') || undefined);
    boundedMemory(d, 'store of a newer schema');
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
  assert.equal(d.stderr.match(/a downgrade\. It is opened read-only/g)?.length, 1, 'said once a start');
  assert.doesNotMatch(d.stderr, /job attribution off/);
  assert.deepEqual(readFileSync(path), before, 'the newer store is not written, byte for byte');
  assert.deepEqual(
    readdirSync(n.state).filter((f) => f.includes('corrupt')),
    [],
  );
});

test('a state dir on a read-only filesystem: the daemon samples and exports, says why attribution is off, exits 0', async (t) => {
  const n = node();
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m,mode=755', 'tmpfs', n.state], { encoding: 'utf8' });
  assert.equal(r.status, 0, `mount a read-only tmpfs (the tests run as root): ${r.stderr}`);
  t.after(() => spawnSync('umount', [n.state]));
  const d = daemon(n);
  try {
    await d.waitStderr(/job attribution off: store \S+: .*read-only.*; GPU metrics go out without job attributes/i);
    await waitFor('GPU points', () => gpuPoints(d).length >= 5);
    boundedMemory(d, 'read-only state dir');
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
  // and --once: one collection exported, exit 0
  const once = spawnSync(
    process.execPath,
    [join(ROOT, 'bin', 'run.js'), 'daemon', '--once', '--config', n.config, '--plugin', 'nvml', '--sink', 'stdout'],
    { env: { ...process.env, ...n.fake.env() }, encoding: 'utf8' },
  );
  assert.equal(once.status, 0, once.stderr);
  assert.match(once.stdout, /"gpu.utilization"/);
});

function hook(kind: 'prolog' | 'epilog', n: ReturnType<typeof node>, jobId: string): { status: number | null; stderr: string } {
  const r = spawnSync(join(ROOT, 'slurm', kind), [], {
    env: {
      L9GPU_NODE: process.execPath,
      L9GPU_CONFIG: n.config,
      SLURM_JOB_ID: jobId,
      SLURM_JOB_USER: 'alice',
      SLURM_JOB_UID: '1001',
      SLURM_JOB_PARTITION: 'gpu',
      CUDA_VISIBLE_DEVICES: GPU.uuid,
    },
    encoding: 'utf8',
  });
  return { status: r.status, stderr: r.stderr };
}

test(
  'the hooks on a garbage store: moved aside, the binding written to a new store, exit 0; on ' +
    'a newer store: exit 0, one line, the store untouched',
  () => {
    const n = node();
    const path = join(n.state, STORE_FILE);
    writeFileSync(path, 'SQLite format 3\0 but nothing after it that a database would have'.repeat(100));
    const p = hook('prolog', n, '77');
    assert.equal(p.status, 0, p.stderr);
    assert.match(
      readFileSync(join(n.state, 'hooks.log'), 'utf8'),
      /prolog job 77: store \S+ was damaged \(.+\): moved to \S+\.corrupt-\S+, a new store started/,
    );
    const db = new Database(path, { readonly: true });
    assert.deepEqual(db.prepare('SELECT job_id, gpu_uuid FROM bindings').all(), [{ job_id: '77', gpu_uuid: GPU.uuid }]);
    db.close();

    const w = new Database(path);
    w.pragma('user_version = 999');
    w.close();
    const before = readFileSync(path);
    const e = hook('epilog', n, '77');
    assert.equal(e.status, 0, e.stderr);
    assert.match(e.stderr, /epilog job 77: store schema version 999 is newer than this l9gpu/);
    assert.deepEqual(readFileSync(path), before, 'the newer store is not written');
  },
);

test(
  'a full disk under the store: the daemon samples, exports and attributes every tick, says ' +
    'the write failure once, and writes again when there is room',
  async (t) => {
    const n = node();
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=755', 'tmpfs', n.state], { encoding: 'utf8' });
    assert.equal(r.status, 0, `mount a small tmpfs (the tests run as root): ${r.stderr}`);
    t.after(() => spawnSync('umount', [n.state]));
    storeWithJob(n.state, '41');
    const d = daemon(n);
    try {
      await waitFor('job 41 on the GPU', () => gpuPoints(d).some((p) => p.attributes['slurm.job.id'] === '41'));
      // fill the filesystem: the store's next writes (rollups, series) find no room
      spawnSync('dd', ['if=/dev/zero', `of=${join(n.state, 'filler')}`, 'bs=4k', 'count=1000']);
      await d.waitStderr(/database or disk is full/, 20_000);
      const mark = gpuPoints(d).length;
      await waitFor(
        'ten more ticks, attributed',
        () =>
          gpuPoints(d)
            .slice(mark)
            .filter((p) => p.attributes['slurm.job.id'] === '41').length >= 10,
        20_000,
      );
      assert.equal(d.stderr.match(/database or disk is full/g)?.length, 1, `said once: ${d.stderr}`);
      // room again: the writes resume (the rollup of job 41 grows)
      spawnSync('rm', ['-f', join(n.state, 'filler')]);
      await d.waitStderr(/job ledger: writing again/, 20_000);
      boundedMemory(d, 'full disk');
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);

test(
  'SIGKILL of the daemon while it writes, five times: every restart finds the store whole ' +
    '(WAL), the binding kept, nothing moved aside',
  async () => {
    const n = node();
    writeFileSync(n.config, readFileSync(n.config, 'utf8').replace('interval = 200ms', 'interval = 50ms'));
    storeWithJob(n.state, '41');
    for (let i = 0; i < 5; i++) {
      const d = daemon(n);
      await waitFor('job 41 on the GPU', () => gpuPoints(d).some((p) => p.attributes['slurm.job.id'] === '41'));
      // the rollups are written every tick (50 ms): a kill lands in or near a transaction
      await waitFor('a few more ticks', () => gpuPoints(d).length >= 5 + i);
      assert.equal(await d.stop('SIGKILL'), null);
      assert.doesNotMatch(d.stderr, /was damaged|attribution off/);
    }
    const db = new Database(join(n.state, STORE_FILE), { readonly: true });
    try {
      assert.equal(db.pragma('quick_check', { simple: true }), 'ok');
      assert.deepEqual(db.prepare('SELECT job_id, end_time FROM bindings').all(), [{ job_id: '41', end_time: null }]);
      assert.ok(
        (db.prepare('SELECT COUNT(*) AS n FROM job_gpu').get() as { n: number }).n >= 1,
        'the rollups written before the kills are there',
      );
    } finally {
      db.close();
    }
    assert.deepEqual(
      readdirSync(n.state).filter((f) => f.includes('corrupt')),
      [],
    );
  },
);

test(
  'a store locked by another writer for a while: the daemon samples and exports every tick ' +
    '(its event loop never waits out the lock), and writes again after',
  async () => {
    const n = node();
    storeWithJob(n.state, '41');
    const d = daemon(n);
    try {
      await waitFor('job 41 on the GPU', () => gpuPoints(d).some((p) => p.attributes['slurm.job.id'] === '41'));
      // an admin's sqlite3 shell with a write transaction open, in another process
      const holder = spawn(
        process.execPath,
        [
          '-e',
          `const D = require(${JSON.stringify(join(ROOT, 'node_modules', 'better-sqlite3'))}); const ` +
            `db = new D(${JSON.stringify(join(n.state, STORE_FILE))}); db.exec('BEGIN IMMEDIATE'); ` +
            `process.stdout.write('locked\\n'); setTimeout(() => { db.exec('COMMIT'); process.exit(0); ` +
            `}, 6000);`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise<void>((r) => holder.stdout!.once('data', () => r()));
      const t0 = Date.now();
      const mark = gpuPoints(d).length;
      await new Promise((r) => holder.once('exit', r));
      const held = (Date.now() - t0) / 1000;
      const ticks = new Set(
        gpuPoints(d)
          .slice(mark)
          .map((p) => p.time),
      ).size;
      // 200 ms ticks: ~30 in 6 s; a loop that waited out a 2 s busy timeout per write would make ~3
      assert.ok(ticks >= held * 5 * 0.6, `${ticks} ticks of GPU points in the ${held.toFixed(1)} s the store was locked`);
      await d.waitStderr(/job ledger: writing again/, 20_000);
      boundedMemory(d, 'store locked by another writer');
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
    }
  },
);
