/**
 * The real hook executables (slurm/prolog, slurm/epilog) run the way slurmd
 * runs them: an environment with no PATH and no HOME, as root. Edge cases
 * the live-Slurm tests cannot force. Run twice by `npm test`: on this
 * checkout, and in the bundled lane on a release tree and the Node.js it ships
 * (PRODUCT, test/helpers/paths.ts).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, linkSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { upsertInventory } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { slurmStoreStatus } from '../../slurm/status.js';
import { PRODUCT, ROOT, tempDir } from '../helpers/paths.js';
import { runCli } from '../helpers/daemon.js';
import { runHook as hook } from '../helpers/hook.js';

function setup(extraIni = ''): {
  state: string;
  env: Record<string, string>;
  rows: (sql: string, ...a: unknown[]) => Record<string, unknown>[];
} {
  const d = tempDir('l9gpu-hooks-');
  chmodSync(d, 0o755); // like /var/lib: other users may traverse it
  const state = join(d, 'state');
  writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${state}\n${extraIni}`);
  const rows = (sql: string, ...a: unknown[]) => {
    const db = new Database(join(state, 'l9gpu.db'), { readonly: true });
    try {
      return db.prepare(sql).all(...a) as Record<string, unknown>[];
    } finally {
      db.close();
    }
  };
  return {
    state,
    env: {
      L9GPU_CONFIG: join(d, 'l9gpu.ini'),
      SLURM_JOB_USER: 'alice',
      SLURM_JOB_UID: '1001',
      SLURM_JOB_PARTITION: 'gpu',
      SLURM_CLUSTER_NAME: 'alps',
    },
    rows,
  };
}

test('prolog then epilog twice: one closed binding per GPU, the second epilog changes nothing', () => {
  const { env, rows } = setup();
  const job = { ...env, SLURM_JOB_ID: '100', CUDA_VISIBLE_DEVICES: 'GPU-aaaa,GPU-bbbb' };
  assert.equal(hook('prolog', job).status, 0);
  assert.deepEqual(rows('SELECT gpu_uuid, end_time IS NULL AS open, source FROM bindings ORDER BY gpu_uuid'), [
    { gpu_uuid: 'GPU-aaaa', open: 1, source: 'prolog' },
    { gpu_uuid: 'GPU-bbbb', open: 1, source: 'prolog' },
  ]);
  assert.equal(hook('epilog', { ...job, SLURM_JOB_EXIT_CODE: '256' }).status, 0);
  const first = rows('SELECT * FROM bindings ORDER BY id');
  const j = rows('SELECT * FROM jobs')[0]!;
  assert.equal(hook('epilog', { ...job, SLURM_JOB_EXIT_CODE: '0' }).status, 0);
  assert.deepEqual(rows('SELECT * FROM bindings ORDER BY id'), first, 'idempotent');
  assert.equal(rows('SELECT * FROM jobs')[0]!.end_time, j.end_time);
  assert.equal(rows('SELECT exit_code FROM jobs')[0]!.exit_code, 1, 'raw wait status 256 = exit 1; not overwritten by the second epilog');
  assert.ok(first.every((b) => b.closed_by === 'epilog' && b.end_time !== null));
});

test('an epilog without a prolog records the job and its GPUs, closed', () => {
  const { env, rows } = setup();
  assert.equal(
    hook('epilog', {
      ...env,
      SLURM_JOB_ID: '200',
      CUDA_VISIBLE_DEVICES: 'MIG-11111111-2222-3333-4444-555555555555',
      SLURM_JOB_EXIT_CODE: '0',
    }).status,
    0,
  );
  const b = rows('SELECT * FROM bindings');
  assert.equal(b.length, 1);
  assert.equal(b[0]!.gpu_uuid, 'MIG-11111111-2222-3333-4444-555555555555');
  assert.equal(b[0]!.source, 'epilog');
  assert.notEqual(b[0]!.end_time, null);
  assert.equal(rows('SELECT user FROM jobs')[0]!.user, 'alice');
});

test('GRES indices resolve through gres.conf order and device minors to UUIDs; unknown ones wait as gres:<i>', () => {
  const { state, env, rows } = setup();
  const d = tempDir('l9gpu-gres-');
  for (let i = 0; i < 3; i++) spawnSync('mknod', [join(d, `gpu${i}`), 'c', '195', String(10 + i)]);
  writeFileSync(join(d, 'gres.conf'), `NodeName=n1 Name=gpu File=${d}/gpu[0-2]\n`);
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=x\n');
  mkdirSync(state, { recursive: true });
  const db = openStore(state);
  const inv = (uuid: string, minor: number) => ({
    uuid,
    vendor: 'nvidia',
    vendorIndex: 0,
    minor,
    pciBusId: null,
    model: null,
    migParent: null,
    migGi: null,
    migCi: null,
  });
  upsertInventory(db, [inv('GPU-minor10', 10), inv('GPU-minor12', 12)]);
  db.close();
  assert.equal(
    hook('prolog', {
      ...env,
      SLURM_JOB_ID: '300',
      SLURM_JOB_GPUS: '0,2,1',
      CUDA_VISIBLE_DEVICES: '0,2,1',
      SLURM_CONF: join(d, 'slurm.conf'),
      SLURMD_NODENAME: 'n1',
    }).status,
    0,
  );
  assert.deepEqual(
    rows('SELECT gpu_uuid FROM bindings ORDER BY gpu_uuid').map((r) => r.gpu_uuid),
    ['GPU-minor10', 'GPU-minor12', 'gres:1'],
  );
});

test(
  'no gres.conf where Slurm says (a node whose gres.conf is missing or unreadable): the ' +
    'prolog records gres:<i> bindings, the epilog closes them',
  () => {
    const { env, rows } = setup();
    const d = tempDir('l9gpu-nogres-');
    writeFileSync(join(d, 'slurm.conf'), 'ClusterName=x\n');
    const job = {
      ...env,
      SLURM_JOB_ID: '310',
      SLURM_JOB_GPUS: '0,1',
      CUDA_VISIBLE_DEVICES: '0,1',
      SLURM_CONF: join(d, 'slurm.conf'),
      SLURMD_NODENAME: 'n1',
    };
    assert.equal(hook('prolog', job).status, 0);
    assert.deepEqual(rows('SELECT gpu_uuid, end_time IS NULL AS open FROM bindings ORDER BY gpu_uuid'), [
      { gpu_uuid: 'gres:0', open: 1 },
      { gpu_uuid: 'gres:1', open: 1 },
    ]);
    assert.equal(hook('epilog', { ...job, SLURM_JOB_EXIT_CODE: '0' }).status, 0);
    assert.deepEqual(rows('SELECT gpu_uuid, closed_by FROM bindings ORDER BY gpu_uuid'), [
      { gpu_uuid: 'gres:0', closed_by: 'epilog' },
      { gpu_uuid: 'gres:1', closed_by: 'epilog' },
    ]);
    // an epilog alone (its prolog failed or ran before l9gpu was installed) records the run closed
    assert.equal(hook('epilog', { ...job, SLURM_JOB_ID: '311', SLURM_JOB_EXIT_CODE: '0' }).status, 0);
    assert.equal(rows(`SELECT COUNT(*) AS n FROM bindings WHERE job_id = '311' AND end_time IS NOT NULL`)[0]!.n, 2);
  },
);

test(
  'AutoDetect=nvml: GRES indices follow PCI bus order, not File= order or minors; an unknown ' + 'order stays gres:<i>, and doctor says so',
  async () => {
    const { state, env, rows } = setup();
    const d = tempDir('l9gpu-autodetect-');
    for (let i = 0; i < 4; i++) spawnSync('mknod', [join(d, `gpu${i}`), 'c', '195', String(i)]);
    // File= lines in minor order, as admins write them; slurmd still numbers the GPUs by PCI bus id under AutoDetect
    writeFileSync(join(d, 'gres.conf'), `AutoDetect=nvml\nNodeName=n1 Name=gpu Type=h100 File=${d}/gpu[0-3]\n`);
    writeFileSync(join(d, 'slurm.conf'), 'ClusterName=x\n');
    mkdirSync(state, { recursive: true });
    const db = openStore(state);
    const inv = (uuid: string, minor: number, pci: string | null) => ({
      uuid,
      vendor: 'nvidia',
      vendorIndex: 0,
      minor,
      pciBusId: pci,
      model: null,
      migParent: null,
      migGi: null,
      migCi: null,
    });
    // PCI order: minor 2 (18), minor 0 (3b), minor 3 (86), minor 1 (0001:1a)
    upsertInventory(db, [
      inv('GPU-m0', 0, '0000:3b:00.0'),
      inv('GPU-m1', 1, '0001:1a:00.0'),
      inv('GPU-m2', 2, '0000:18:00.0'),
      inv('GPU-m3', 3, '0000:86:00.0'),
    ]);
    db.close();
    const slurm = { SLURM_CONF: join(d, 'slurm.conf'), SLURMD_NODENAME: 'n1' };
    assert.equal(hook('prolog', { ...env, ...slurm, SLURM_JOB_ID: '310', SLURM_JOB_GPUS: '0,3', CUDA_VISIBLE_DEVICES: '0,3' }).status, 0);
    assert.deepEqual(
      rows(`SELECT gpu_uuid FROM bindings WHERE job_id = '310' ORDER BY gpu_uuid`).map((r) => r.gpu_uuid),
      ['GPU-m1', 'GPU-m2'],
    );
    // AutoDetect off for this node: File= order (minors) again
    writeFileSync(join(d, 'gres.conf'), `AutoDetect=nvml\nNodeName=n1 AutoDetect=off\nNodeName=n1 Name=gpu File=${d}/gpu[0-3]\n`);
    assert.equal(hook('prolog', { ...env, ...slurm, SLURM_JOB_ID: '311', SLURM_JOB_GPUS: '0,3', CUDA_VISIBLE_DEVICES: '0,3' }).status, 0);
    assert.deepEqual(
      rows(`SELECT gpu_uuid FROM bindings WHERE job_id = '311' ORDER BY gpu_uuid`).map((r) => r.gpu_uuid),
      ['GPU-m0', 'GPU-m3'],
    );
    // AutoDetect with no File= lines at all (the common case), and an index past the GPUs the inventory knows
    writeFileSync(join(d, 'gres.conf'), `NodeName=n1 AutoDetect=nvml Name=gpu\n`);
    assert.equal(hook('prolog', { ...env, ...slurm, SLURM_JOB_ID: '312', SLURM_JOB_GPUS: '1,7', CUDA_VISIBLE_DEVICES: '1,7' }).status, 0);
    assert.deepEqual(
      rows(`SELECT gpu_uuid FROM bindings WHERE job_id = '312' ORDER BY gpu_uuid`).map((r) => r.gpu_uuid),
      ['GPU-m0', 'gres:7'],
    );
    // doctor says how indices map and where it is unsure
    const doctor = async () => (await runCli(['doctor'], { ...slurm, L9GPU_CONFIG: env.L9GPU_CONFIG! })).stdout;
    assert.match(
      await doctor(),
      new RegExp(
        String.raw`GRES order: AutoDetect=nvml, slurmd numbers GPUs by PCI bus id \(4 GPU\(s\) in ` +
          String.raw`the inventory\); unsure, kept as GRES indices: job 312 gres:7`,
      ),
    );
    const w = openStore(state);
    upsertInventory(w, [inv('GPU-m4', 4, null)]);
    w.close();
    assert.match(await doctor(), /unsure: 1 of 5 GPU\(s\) have no PCI bus id, so the order is unknown, GRES indices stay gres:<i>/);
  },
);

test('old-style MIG ids (MIG-GPU-<uuid>/<gi>/<ci>) resolve through the inventory', () => {
  const { state, env, rows } = setup();
  mkdirSync(state, { recursive: true });
  const db = openStore(state);
  upsertInventory(db, [
    {
      uuid: 'MIG-9f0c',
      vendor: 'nvidia',
      vendorIndex: 0,
      minor: null,
      pciBusId: null,
      model: null,
      migParent: 'GPU-abc',
      migGi: 7,
      migCi: 0,
    },
  ]);
  db.close();
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '301', CUDA_VISIBLE_DEVICES: 'MIG-GPU-abc/7/0' }).status, 0);
  assert.deepEqual(
    rows('SELECT gpu_uuid FROM bindings').map((r) => r.gpu_uuid),
    ['MIG-9f0c'],
  );
});

test('requeue: the new run is a new row and closes the old one; het job ids are kept', () => {
  const { env, rows } = setup();
  const job = { ...env, SLURM_JOB_ID: '400', CUDA_VISIBLE_DEVICES: 'GPU-aaaa', SLURM_HET_JOB_ID: '399', SLURM_HET_JOB_OFFSET: '1' };
  assert.equal(hook('prolog', { ...job, SLURM_JOB_RESTART_COUNT: '0' }).status, 0);
  assert.equal(hook('epilog', { ...job, SLURM_JOB_RESTART_COUNT: '1' }).status, 0, "the killed run's epilog already sees restart count 1");
  assert.equal(hook('prolog', { ...job, SLURM_JOB_RESTART_COUNT: '1' }).status, 0);
  assert.deepEqual(rows('SELECT run_key, end_time IS NULL AS open, closed_by FROM bindings ORDER BY run_key'), [
    { run_key: 'r0', open: 0, closed_by: 'epilog' },
    { run_key: 'r1', open: 1, closed_by: null },
  ]);
  assert.deepEqual(rows('SELECT DISTINCT het_job_id, het_job_offset FROM jobs'), [{ het_job_id: '399', het_job_offset: '1' }]);
  assert.equal(hook('prolog', { ...job, SLURM_JOB_SLUID: 'sxyz1' }).status, 0);
  assert.equal(rows(`SELECT COUNT(*) AS n FROM jobs WHERE run_key = 'sluid:sxyz1'`)[0]!.n, 1, 'Slurm 25.11 SLUIDs key runs');
});

test(
  "the report of a prolog's job: the node by its Slurm name though no provider runs here, a " +
    "start ahead of this node's clock as now, energy not measured yet as unknown",
  async () => {
    const { env, rows } = setup('attribution = none\n');
    // the controller's clock an hour ahead of the node's: SLURM_JOB_START_TIME is in the node's future
    const ahead = Math.floor(Date.now() / 1000) + 3600;
    assert.equal(
      hook('prolog', {
        ...env,
        SLURM_JOB_ID: '610',
        CUDA_VISIBLE_DEVICES: 'GPU-aaaa',
        SLURMD_NODENAME: 'gpunode7',
        SLURM_JOB_START_TIME: String(ahead),
      }).status,
      0,
    );
    const start = rows("SELECT start_time FROM jobs WHERE job_id = '610'")[0]!.start_time as number;
    assert.ok(start <= Date.now(), `start ${new Date(start).toISOString()} is not in the future`);
    assert.deepEqual(rows("SELECT DISTINCT start_time FROM bindings WHERE job_id = '610'"), [{ start_time: start }]);
    // an epilog without a prolog, the same
    assert.equal(
      hook('epilog', {
        ...env,
        SLURM_JOB_ID: '611',
        CUDA_VISIBLE_DEVICES: 'GPU-bbbb',
        SLURMD_NODENAME: 'gpunode7',
        SLURM_JOB_START_TIME: String(ahead),
        SLURM_JOB_EXIT_CODE: '0',
      }).status,
      0,
    );
    const [ended] = rows("SELECT start_time, end_time FROM jobs WHERE job_id = '611'");
    assert.ok((ended!.start_time as number) <= (ended!.end_time as number), JSON.stringify(ended));

    const show = await runCli(['jobs', 'show', '610', '--json'], { L9GPU_CONFIG: env.L9GPU_CONFIG! });
    assert.equal(show.status, 0, show.stderr);
    const r = JSON.parse(show.stdout) as {
      job: { nodes: string[]; elapsed_s: number };
      gpus: { node: string }[];
      totals: { energy_kwh: number | null; energy_j: number | null };
    };
    assert.deepEqual(
      [r.job.nodes, r.gpus.map((g) => g.node)],
      [['gpunode7'], ['gpunode7']],
      "the Slurm node name the prolog recorded, not this host's name",
    );
    assert.ok(r.job.elapsed_s >= 0 && r.job.elapsed_s < 60, `run time ${r.job.elapsed_s} s`);
    assert.deepEqual([r.totals.energy_kwh, r.totals.energy_j], [null, null], 'no sample yet: energy unknown');
    const text = await runCli(['jobs', 'show', '610'], { L9GPU_CONFIG: env.L9GPU_CONFIG! });
    assert.match(text.stdout, /^ {2}node\(s\) {8}gpunode7$/m);
    assert.match(text.stdout, /energy unknown/);
    assert.doesNotMatch(text.stdout, /run time -|\b0\.000\b/);
    const list = await runCli(['jobs', '--csv'], { L9GPU_CONFIG: env.L9GPU_CONFIG! });
    assert.match(list.stdout, /^610,alice,,gpu,RUNNING,[^,]+,\d+,1,0,0,,,,,,$/m, 'energy_kwh empty, not 0');
  },
);

test("ids past Slurm's uint32 in the hook's environment: a job id is refused, shown cut; array and het ids are none", () => {
  const { env, rows } = setup();
  const long = '7'.repeat(10_000);
  const r = hook('prolog', { ...env, SLURM_JOB_ID: '12345678901', CUDA_VISIBLE_DEVICES: 'GPU-a' });
  assert.equal(r.status, 0);
  assert.match(r.stderr, /prolog job \?: SLURM_JOB_ID is "12345678901", not a job id: not run by slurmd\?/);
  assert.equal(
    hook('prolog', {
      ...env,
      SLURM_JOB_ID: '620',
      CUDA_VISIBLE_DEVICES: 'GPU-a',
      SLURM_ARRAY_JOB_ID: long,
      SLURM_ARRAY_TASK_ID: '3',
      SLURM_HET_JOB_ID: long,
      SLURM_HET_JOB_OFFSET: '0',
    }).status,
    0,
  );
  assert.deepEqual(rows('SELECT job_id, array_job_id, array_task_id, het_job_id, het_job_offset FROM jobs'), [
    { job_id: '620', array_job_id: null, array_task_id: '3', het_job_id: null, het_job_offset: '0' },
  ]);
});

test('a failing hook exits 0 and says why; strict mode exits 1; never without a log line', () => {
  const d = tempDir('l9gpu-hookfail-');
  writeFileSync(join(d, 'file'), 'x');
  writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${d}/file/state\n`);
  const r = hook('prolog', { L9GPU_CONFIG: join(d, 'l9gpu.ini'), SLURM_JOB_ID: '1', CUDA_VISIBLE_DEVICES: 'GPU-a' });
  assert.equal(r.status, 0, 'fail-open: a failing prolog would drain the node');
  assert.match(r.stderr, /l9gpu prolog job 1: ENOTDIR|l9gpu prolog job 1: .*not a directory/i);
  writeFileSync(join(d, 'strict.ini'), `[daemon]\nstate_dir = ${d}/file/state\n[slurm]\nhook_strict = true\n`);
  const s = hook('prolog', { L9GPU_CONFIG: join(d, 'strict.ini'), SLURM_JOB_ID: '1', CUDA_VISIBLE_DEVICES: 'GPU-a' });
  assert.equal(s.status, 1);
  const bad = hook('epilog', { L9GPU_CONFIG: join(d, 'l9gpu.ini') });
  assert.equal(bad.status, 0);
  assert.match(bad.stderr, /SLURM_JOB_ID is not set: not run by slurmd\?/);
  const badConf = hook('prolog', { L9GPU_CONFIG: join(d, 'missing.ini'), SLURM_JOB_ID: '1' });
  assert.equal(badConf.status, 0);
  assert.equal(badConf.stderr.trim().split('\n').length, 1, 'said once');
  assert.match(badConf.stderr, /l9gpu prolog job 1: config file \S+missing.ini: not found/);
});

test("the hooks read only their sections: other plugins' keys in the file do not matter to them", () => {
  const { env, rows } = setup('[nvml]\nlibrary = /opt/x/libnvidia-ml.so.1\n[someday]\nkey = 1\n');
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '500', CUDA_VISIBLE_DEVICES: 'GPU-z' }).status, 0);
  assert.equal(rows('SELECT COUNT(*) AS n FROM bindings')[0]!.n, 1);
});

test("the store is root's alone (users ask the daemon); the hook log records errors", () => {
  const { state, env } = setup();
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '600', CUDA_VISIBLE_DEVICES: 'GPU-y' }).status, 0);
  const st = spawnSync('stat', ['-c', '%a', state, join(state, 'l9gpu.db')], { encoding: 'utf8' })
    .stdout.trim()
    .split('\n');
  assert.deepEqual(st, ['755', '600']);
  const read =
    `import(${JSON.stringify(join(ROOT, 'dist', 'src', 'store', 'open.js'))}).then((m) => ` +
    `console.log(m.openStoreReadOnly(${JSON.stringify(state)}).prepare('select count(*) n from ` +
    `bindings').get().n))`;
  const r = spawnSync('runuser', ['-u', 'l9gputest', '--', process.execPath, '-e', read], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unable to open database file|SQLITE_CANTOPEN|EACCES/, "a user cannot read other users' jobs from the file");
  // a store made by an older l9gpu (0644) is closed at its next open
  chmodSync(join(state, 'l9gpu.db'), 0o644);
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '601', CUDA_VISIBLE_DEVICES: 'GPU-x' }).status, 0);
  assert.equal(statSync(join(state, 'l9gpu.db')).mode & 0o777, 0o600);
  hook('prolog', { ...env });
  assert.match(readFileSync(join(state, 'hooks.log'), 'utf8'), /l9gpu prolog job \?: SLURM_JOB_ID is not set/);
});

test('hooks racing a writer that commits every few ms (the daemon) all succeed: write transactions take the lock up front', async () => {
  const { state, env, rows } = setup();
  mkdirSync(state, { recursive: true });
  const writer = openStore(state);
  const inv = (i: number) => ({
    uuid: `GPU-w${i}`,
    vendor: 'nvidia',
    vendorIndex: i,
    minor: null,
    pciBusId: null,
    model: null,
    migParent: null,
    migGi: null,
    migCi: null,
  });
  let n = 0;
  const timer = setInterval(() => upsertInventory(writer, [inv(n++ % 8)]), 2);
  const run = (kind: 'prolog' | 'epilog', id: number) =>
    new Promise<number | null>((resolve) =>
      spawn(join(PRODUCT.root, 'slurm', kind), [], {
        env: {
          L9GPU_NODE: process.execPath,
          ...env,
          SLURM_JOB_ID: String(id),
          CUDA_VISIBLE_DEVICES: `GPU-${id}`,
          SLURM_JOB_EXIT_CODE: '0',
        },
        stdio: 'ignore',
      }).on('exit', resolve),
    );
  try {
    const ids = Array.from({ length: 30 }, (_, i) => 7000 + i);
    assert.deepEqual(
      await Promise.all(ids.map((id) => run('prolog', id))),
      ids.map(() => 0),
    );
    assert.deepEqual(
      await Promise.all(ids.map((id) => run('epilog', id))),
      ids.map(() => 0),
    );
  } finally {
    clearInterval(timer);
    writer.close();
  }
  assert.ok(n > 20, `the writer committed ${n} times meanwhile`);
  assert.equal(rows('SELECT COUNT(*) AS n FROM bindings WHERE end_time IS NOT NULL')[0]!.n, 30, 'every binding opened and closed');
  let log = '';
  try {
    log = readFileSync(join(state, 'hooks.log'), 'utf8');
  } catch {
    /* no errors, no log */
  }
  assert.doesNotMatch(log, /locked|busy/i);
});

test('a store locked by another writer: the hook gives up within its deadline, exits 0 and says why', () => {
  const { state, env, rows } = setup('[slurm]\nhook_timeout = 1s\n');
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '700', CUDA_VISIBLE_DEVICES: 'GPU-a' }).status, 0);
  const holder = openStore(state);
  holder.prepare('BEGIN IMMEDIATE').run(); // held for as long as this test runs: longer than any deadline
  try {
    const t0 = Date.now();
    const r = hook('prolog', { ...env, SLURM_JOB_ID: '701', CUDA_VISIBLE_DEVICES: 'GPU-b' });
    const took = Date.now() - t0;
    assert.equal(r.status, 0, 'the job runs');
    assert.match(r.stderr, /l9gpu prolog job 701: database is locked/);
    // the store write waits for the lock until the deadline, not a fixed busy timeout
    assert.ok(took >= 700, `gave up after ${took} ms: before its 1 s deadline was near`);
    assert.ok(took < 2000, `gave up after ${took} ms: past the 1 s deadline and the wrapper's 1 s hard stop`);
  } finally {
    holder.prepare('ROLLBACK').run();
    holder.close();
  }
  assert.deepEqual(
    rows('SELECT job_id FROM jobs ORDER BY job_id').map((x) => x.job_id),
    ['700'],
    'nothing half-written',
  );
});

// these two need a Node.js the wrapper finds by L9GPU_NODE, which only a checkout's does (a release tree's runs its node/):
// the checkout's wrapper is the same file as the tree's
test('a hook stuck where Node cannot time itself out is killed from outside: exit 0 (strict: 1), one line', () => {
  const d = tempDir('l9gpu-hookhang-');
  // stands in for a node process blocked in a system call (a hung NFS state dir): it never answers its own timer
  writeFileSync(join(d, 'stuck-node'), '#!/bin/sh\nexec /bin/sleep 30\n', { mode: 0o755 });
  writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${d}/state\n[slurm]\nhook_timeout = 1s\n`);
  const t0 = Date.now();
  const r = spawnSync(join(ROOT, 'slurm', 'prolog'), [], {
    env: { L9GPU_NODE: join(d, 'stuck-node'), L9GPU_CONFIG: join(d, 'l9gpu.ini'), SLURM_JOB_ID: '9' },
    encoding: 'utf8',
  });
  const took = Date.now() - t0;
  assert.equal(r.status, 0);
  assert.ok(took >= 1900 && took < 5000, `killed after ${took} ms (limit 1 s + 1 s hard stop)`);
  assert.equal(r.stderr, 'l9gpu prolog job 9: killed after 1s (+1s): the job runs, the binding is left to the reconciler\n');
  writeFileSync(join(d, 'strict.ini'), `[daemon]\nstate_dir = ${d}/state\n[slurm]\nhook_timeout = 500ms\nhook_strict = yes\n`);
  const s = spawnSync(join(ROOT, 'slurm', 'epilog'), [], {
    env: { L9GPU_NODE: join(d, 'stuck-node'), L9GPU_CONFIG: join(d, 'strict.ini'), SLURM_JOB_ID: '9' },
    encoding: 'utf8',
  });
  assert.equal(s.status, 1, 'strict: the deadline is a failure');
});

test('no Node.js on the node (a CPU-only node sharing the Slurm config): the hooks exit 0 and say so', () => {
  const d = tempDir('l9gpu-nonode-');
  writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${d}/state\n`);
  for (const kind of ['prolog', 'epilog'] as const) {
    const r = spawnSync(join(ROOT, 'slurm', kind), [], {
      env: { L9GPU_NODE: join(d, 'no-such-node'), L9GPU_CONFIG: join(d, 'l9gpu.ini'), SLURM_JOB_ID: '3' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, kind);
    assert.equal(r.stderr, `l9gpu ${kind}: cannot run: ${join(d, 'no-such-node')} missing \n`);
  }
});

test("a shard job's prolog (nothing in its environment says shard): a GPU another job holds makes both bindings shared", () => {
  const { env, rows } = setup();
  const shared = () =>
    rows(`SELECT job_id, gpu_uuid, shared FROM bindings ORDER BY job_id`).map((r) => `${r.job_id}:${r.gpu_uuid}:${r.shared}`);
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '801', CUDA_VISIBLE_DEVICES: 'GPU-s1' }).status, 0);
  assert.deepEqual(shared(), ['801:GPU-s1:0'], 'alone on its GPU: not shared (yet)');
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '802', CUDA_VISIBLE_DEVICES: 'GPU-s1' }).status, 0);
  assert.equal(hook('prolog', { ...env, SLURM_JOB_ID: '803', CUDA_VISIBLE_DEVICES: 'GPU-other' }).status, 0);
  assert.deepEqual(shared(), ['801:GPU-s1:1', '802:GPU-s1:1', '803:GPU-other:0']);
  assert.equal(hook('epilog', { ...env, SLURM_JOB_ID: '801', CUDA_VISIBLE_DEVICES: 'GPU-s1' }).status, 0);
  assert.equal(
    hook('prolog', { ...env, SLURM_JOB_ID: '804', CUDA_VISIBLE_DEVICES: 'GPU-t', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '50' }).status,
    0,
  );
  assert.deepEqual(shared().slice(-1), ['804:GPU-t:1'], 'MPS: shared from the environment');
});

test('a state dir a user could write to, or links planted in it: root writes nothing through them, exits 0, one line', () => {
  const d = tempDir('l9gpu-trust-');
  chmodSync(d, 0o755);
  const target = join(d, 'passwd-copy');
  writeFileSync(target, 'root:x:0:0:root:/root:/bin/bash\n', { mode: 0o600 });
  const run = (state: string, extraEnv: Record<string, string> = {}) => {
    writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${state}\n`);
    return hook('prolog', { L9GPU_CONFIG: join(d, 'l9gpu.ini'), SLURM_JOB_ID: '900', CUDA_VISIBLE_DEVICES: 'GPU-a', ...extraEnv });
  };
  // hooks.log planted as a link to a root-only file, in a folder the user can write
  const open = join(d, 'open');
  mkdirSync(open, { mode: 0o777 });
  chmodSync(open, 0o777);
  symlinkSync(target, join(open, 'hooks.log'));
  const r1 = run(open, { SLURM_JOB_GPUS: '0\nroot::0:0::/:/bin/sh' });
  assert.equal(r1.status, 0);
  assert.match(r1.stderr, /state dir \S+open is writable by others \(mode 777\): refusing to write there/);
  assert.equal(r1.stderr.trim().split('\n').length, 1, 'one line');
  // a root-owned 0755 folder, with the link already there (planted before the folder was fixed)
  chmodSync(open, 0o755);
  const r2 = run(open);
  assert.equal(r2.status, 0);
  assert.match(r2.stderr, /hooks.log is a symbolic link: refusing to write through it/);
  // the state dir itself a link
  symlinkSync(join(d, 'elsewhere'), join(d, 'linked'));
  mkdirSync(join(d, 'elsewhere'), { mode: 0o755 });
  const r3 = run(join(d, 'linked'));
  assert.equal(r3.status, 0);
  assert.match(r3.stderr, /state dir \S+linked is a symbolic link: refusing to write through it/);
  assert.equal(readFileSync(target, 'utf8'), 'root:x:0:0:root:/root:/bin/bash\n', 'the link target is untouched');
  assert.deepEqual(readdirSync(join(d, 'elsewhere')), [], 'nothing written through the linked folder');
  // doctor does not read through the planted hooks.log either
  const st = slurmStoreStatus(open);
  assert.equal(st.lastHookLine, null);
  // a hard link planted while the folder was open: another name of the root-only file
  const hard = join(d, 'hard');
  mkdirSync(hard, { mode: 0o755 });
  linkSync(target, join(hard, 'hooks.log'));
  const r4 = run(hard);
  assert.equal(r4.status, 0);
  assert.match(r4.stderr, /hooks.log has 2 names \(a hard link\): refusing to write through it/);
  assert.equal(readFileSync(target, 'utf8'), 'root:x:0:0:root:/root:/bin/bash\n', "the hard link's target is untouched");
  assert.equal(slurmStoreStatus(hard).lastHookLine, null, 'doctor does not print its line');
});

test('a newline in an environment value cannot forge a hooks.log line', () => {
  const { state, env } = setup();
  // an unresolvable GRES list with a newline: the error line quotes it
  const r = hook('prolog', {
    ...env,
    SLURM_JOB_ID: '901',
    SLURM_JOB_GPUS: '0-x\n2026-01-01T00:00:00.000Z l9gpu prolog job 1: forged',
    SLURM_CONF: '/nonexistent/slurm.conf',
  });
  assert.equal(r.status, 0);
  const log = readFileSync(join(state, 'hooks.log'), 'utf8');
  assert.equal(log.trim().split('\n').length, 1, log);
  assert.match(
    log,
    /^\S+ l9gpu prolog job 901: hostlist "0-x\?2026-01-01T00:00:00.000Z l9gpu prolog job 1: forged": bad range/,
    "the value is quoted on the error's own line, its newline shown as ?",
  );
});

test(
  'a hostile hook environment: shell metacharacters, 100 KB values, 10,000 GPU entries, path ' +
    'traversal, bytes that are not UTF-8: exit 0 in time, short log lines, nothing run, nothing ' +
    'written but what is valid',
  () => {
    const { state, env, rows } = setup();
    const canary = join(state, '..', 'pwned');
    const big = 'x'.repeat(100_000); // near the kernel's 128 KiB limit for one environment string
    const cases: [string, Record<string, string>, RegExp][] = [
      [
        'metacharacters in the job id',
        { SLURM_JOB_ID: `1;touch ${canary};$(touch ${canary})\`touch ${canary}\``, CUDA_VISIBLE_DEVICES: 'GPU-a' },
        /SLURM_JOB_ID is "1;touch .*, not a job id/,
      ],
      ['a 100 KB job id', { SLURM_JOB_ID: big }, /SLURM_JOB_ID is "x{40}\.\.\. \(100000 characters\)", not a job id/],
      [
        'a 100 KB GPU list',
        { SLURM_JOB_ID: '950', SLURM_JOB_GPUS: big },
        /prolog job 950: hostlist "x{80}\.\.\. \(100000 characters\)": bad range/,
      ],
      [
        '10,000 GPU entries',
        { SLURM_JOB_ID: '951', SLURM_JOB_GPUS: Array.from({ length: 10_000 }, (_, i) => i).join(',') },
        /SLURM_JOB_GPUS names 10000 GPUs, more than a node has \(1024\): not recorded/,
      ],
      [
        '10,000 UUIDs',
        { SLURM_JOB_ID: '952', CUDA_VISIBLE_DEVICES: Array.from({ length: 10_000 }, (_, i) => `GPU-${i}`).join(',') },
        /CUDA_VISIBLE_DEVICES names 10000 GPUs, more than a node has \(1024\): not recorded/,
      ],
    ];
    for (const [what, e, line] of cases) {
      const t = Date.now();
      const r = hook('prolog', { ...env, ...e });
      assert.equal(r.status, 0, `${what}: ${r.stderr}`);
      assert.ok(Date.now() - t < 5000, `${what}: within the deadline`);
      assert.match(r.stderr, line, what);
      assert.ok(r.stderr.length < 2100, `${what}: one short line (${r.stderr.length} bytes)`);
    }
    assert.throws(() => statSync(canary), /ENOENT/, 'nothing the job id said was run');
    // path traversal in the GPU list is no UUID: the job is recorded without it
    const tr = hook('prolog', { ...env, SLURM_JOB_ID: '953', CUDA_VISIBLE_DEVICES: 'GPU-../../../etc/passwd,MIG-x/../../y' });
    assert.equal(tr.status, 0, tr.stderr);
    assert.deepEqual(rows("SELECT gpu_uuid FROM bindings WHERE job_id = '953'"), []);
    assert.deepEqual(rows("SELECT job_id FROM jobs WHERE job_id IN ('950','951','952')"), [], 'refused allocations are not written');
    // bytes that are not UTF-8 in a user name (slurmd passes them as they are): stored with U+FFFD, the hook exits 0
    const raw = spawnSync(
      '/bin/sh',
      ['-c', `SLURM_JOB_USER=$(printf 'al\\377\\376ice') exec "$0"`, join(PRODUCT.root, 'slurm', 'prolog')],
      {
        env: { L9GPU_NODE: process.execPath, ...env, SLURM_JOB_ID: '954', CUDA_VISIBLE_DEVICES: 'GPU-aaaa' },
        encoding: 'utf8',
      },
    );
    assert.equal(raw.status, 0, raw.stderr);
    assert.deepEqual(rows("SELECT user FROM jobs WHERE job_id = '954'"), [{ user: 'al\ufffd\ufffdice' }]);
    assert.ok(
      readFileSync(join(state, 'hooks.log'), 'utf8')
        .split('\n')
        .every((l) => l.length <= 2100),
      'every hooks.log line short',
    );
  },
);
