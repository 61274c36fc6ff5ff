/**
 * The Slurm attribution transform on a real store, for the points that are
 * not a GPU sampled by its vendor library: a dcgm-exporter MIG series (keyed
 * by its parent GPU and GPU instance) and an inference engine's point (keyed
 * by the process that serves it). The end-to-end cases with real Slurm are in
 * test/helpers/slurm-suite.ts.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { PidJobCache } from '../../src/core/pid-job-cache.js';
import type { Batch, Point } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import { InventoryWriter } from '../../src/ledger/inventory.js';
import { recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { SlurmAttribution } from '../../slurm/attribution.js';
import { jobOfPid, ownJobOfPid } from '../../slurm/proc-job.js';
import { BudgetLedger } from '../../src/core/limits.js';
import { ROOT, tempDir } from '../helpers/paths.js';

const log = createLogger('error', () => {});
const PARENT = 'GPU-7a2e4c6b-1f3d-4e5a-8b9c-0d1e2f3a4b5c';
const MIG = 'MIG-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b';
const identity = (uuid: string, gi?: number) => ({
  'gpu.index': 1,
  'gpu.uuid': uuid,
  'gpu.model': 'NVIDIA H100 80GB HBM3',
  'gpu.vendor': 'nvidia',
  'gpu.pci.bus_id': '0000:2a:00.0',
  ...(gi === undefined ? {} : { 'gpu.mig.instance_id': gi, 'gpu.mig.compute_instance_id': 0, 'gpu.mig.parent_uuid': PARENT }),
});

test(
  'a dcgm-exporter MIG series (parent UUID + GPU_I_ID) is named by its MIG device, as nvml ' +
    'names it and Slurm binds it, and carries the job',
  () => {
    const db = openStore(tempDir('l9gpu-attr-mig-'));
    try {
      // the nvml plugin's points fill the inventory: the MIG device with its parent and GPU instance
      new InventoryWriter(db, log).observe([{ metric: metric('gpu.memory.total'), value: 10_737_418_240, attributes: identity(MIG, 3) }]);
      recordStart(db, { jobId: '42', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' }, [{ uuid: MIG, shared: false }], 'prolog');
      const dcgm: Point = {
        metric: metric('dcgm.prof.sm.active'),
        value: 0.7,
        attributes: { ...identity(PARENT), 'gpu.mig.instance_id': 3, 'gpu.mig.parent_uuid': PARENT },
      };
      const other: Point = {
        metric: metric('dcgm.prof.sm.active'),
        value: 0.1,
        attributes: { ...identity(PARENT), 'gpu.mig.instance_id': 9, 'gpu.mig.parent_uuid': PARENT },
      };
      const out = new SlurmAttribution(db, log).attribute({
        source: 'dcgm',
        time: Date.now(),
        intervalMs: 1000,
        points: [dcgm, other],
      } as Batch);
      assert.equal(out.points[0]!.attributes['gpu.uuid'], MIG);
      assert.equal(out.points[0]!.attributes['slurm.job.id'], '42');
      // an instance the inventory does not know keeps its source's key, and no job
      assert.equal(out.points[1]!.attributes['gpu.uuid'], PARENT);
      assert.equal(out.points[1]!.attributes['slurm.job.id'], undefined);
    } finally {
      db.close();
    }
  },
);

test(
  'an engine point carries the job of the process that serves it (SLURM_JOB_ID in its ' +
    "environment, without cgroups) and the job's GPUs",
  async () => {
    const db = openStore(tempDir('l9gpu-attr-engine-'));
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      env: { ...process.env, SLURM_JOB_ID: '77' },
      stdio: 'ignore',
    });
    try {
      // the job's uid is the child's (this test's): a process saying it is in another user's job would not be believed
      recordStart(
        db,
        { jobId: '77', runKey: 'r0', user: 'bob', uid: process.getuid!(), partition: 'inference', name: 'serve' },
        [
          { uuid: 'GPU-b', shared: false },
          { uuid: 'GPU-a', shared: false },
        ],
        'prolog',
      );
      const at = (pid: number) => ({ 'server.address': '127.0.0.1', 'server.port': 8000, 'gen_ai.request.model': 'm', 'process.pid': pid });
      const pts: Point[] = [
        { metric: metric('vllm.requests.running'), value: 2, attributes: at(child.pid!) },
        { metric: metric('vllm.requests.running'), value: 1, attributes: at(process.pid) }, // a process of no job
      ];
      const out = new SlurmAttribution(db, log).attribute({ source: 'vllm', time: Date.now(), intervalMs: 1000, points: pts } as Batch);
      assert.deepEqual(
        { ...out.points[0]!.attributes },
        {
          ...at(child.pid!),
          'slurm.job.id': '77',
          'slurm.user': 'bob',
          'slurm.partition': 'inference',
          'slurm.job.name': 'serve',
          'gpu.uuids': 'GPU-a,GPU-b',
        },
      );
      assert.equal(out.points[1]!.attributes['slurm.job.id'], undefined);
    } finally {
      child.kill();
      db.close();
    }
  },
);

test(
  "an NCCL rank's point: the job of the process that wrote it, its GPU from NVML's process " +
    'list (gpu.uuids for a process on two); after the process ended, the job its folder names',
  async () => {
    const db = openStore(tempDir('l9gpu-attr-nccl-'));
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      env: { ...process.env, SLURM_JOB_ID: '88' },
      stdio: 'ignore',
    });
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      env: { ...process.env, SLURM_JOB_ID: '88' },
      stdio: 'ignore',
    });
    try {
      recordStart(
        db,
        { jobId: '88', runKey: 'r0', user: 'carol', uid: process.getuid!(), partition: 'train', name: 'ddp' },
        [
          { uuid: 'GPU-a', shared: false },
          { uuid: 'GPU-b', shared: false },
        ],
        'prolog',
      );
      const a = new SlurmAttribution(db, log);
      const now = Date.now();
      // the nvml plugin's batch: the child on GPU-a, the other process on both
      const proc = (pid: number, uuid: string): Point => ({
        metric: metric('gpu.process.memory.used'),
        value: 1e9,
        attributes: { ...identity(uuid), 'process.pid': pid },
      });
      a.attribute({
        source: 'nvml',
        time: now,
        intervalMs: 1000,
        points: [proc(child.pid!, 'GPU-a'), proc(other.pid!, 'GPU-a'), proc(other.pid!, 'GPU-b')],
      } as Batch);
      const rank = (pid: number | undefined, job?: string, owner?: string): Point => ({
        metric: metric('nccl.operations'),
        value: 40,
        attributes: {
          'nccl.collective': 'AllReduce',
          'nccl.ranks': 2,
          'nccl.nodes': 1,
          'nccl.comm.id': '0x1',
          'nccl.rank': 0,
          ...(pid ? { 'process.pid': pid } : {}),
          ...(job ? { 'nccl.job.id': job } : {}),
          ...(owner ? { 'process.owner': owner } : {}),
        },
      });
      const out = a.attribute({
        source: 'nccl',
        time: now + 1000,
        intervalMs: 1000,
        points: [
          rank(child.pid),
          rank(other.pid),
          rank(2 ** 22 + 1, '88'),
          rank(undefined),
          rank(2 ** 22 + 2, '88', 'carol'),
          rank(2 ** 22 + 3, '88', 'mallory'),
          rank(2 ** 22 + 4, '12345', 'mallory'),
          rank(2 ** 22 + 5, '88', String(process.getuid!())),
          rank(2 ** 22 + 6, '88', String(process.getuid!() + 1)),
        ],
      } as Batch).points;
      // a file of the job's user naming it: the job; a file of another user naming it: no job
      assert.equal(out[4]!.attributes['slurm.job.id'], '88');
      assert.equal(out[5]!.attributes['slurm.job.id'], undefined, "mallory's file names carol's job: not credited to it");
      assert.equal(out[6]!.attributes['slurm.job.id'], undefined, "nor a job this node does not know (another node's, a future id)");
      // the user database could not name the file's owner (NSS down): its uid is matched with the job's
      assert.equal(out[7]!.attributes['slurm.job.id'], '88', "an owner named by its uid, the job's uid");
      assert.equal(out[8]!.attributes['slurm.job.id'], undefined, 'an owner named by another uid');
      assert.equal(out[0]!.attributes['gpu.uuid'], 'GPU-a');
      assert.equal(out[0]!.attributes['slurm.job.id'], '88');
      assert.equal(out[0]!.attributes['slurm.user'], 'carol');
      assert.equal(out[1]!.attributes['gpu.uuids'], 'GPU-a,GPU-b');
      assert.equal(out[1]!.attributes['gpu.uuid'], undefined);
      // a pid no process has: the folder's job, with its attributes, and no GPU
      assert.equal(out[2]!.attributes['slurm.job.id'], '88');
      assert.equal(out[2]!.attributes['slurm.job.name'], 'ddp');
      assert.equal(out[2]!.attributes['gpu.uuid'], undefined);
      // nothing to go by: as it came
      assert.deepEqual(out[3]!.attributes, rank(undefined).attributes);
    } finally {
      child.kill();
      other.kill();
      db.close();
    }
  },
);

test(
  'a process read before it is in its job (between fork and exec, or before its cgroup) gets ' +
    'its job when it has one; a pid reused by another process is read anew',
  () => {
    const proc = tempDir('l9gpu-proc-');
    const pid = 4242;
    mkdirSync(join(proc, String(pid)));
    // field 22 (starttime) of /proc/<pid>/stat: 5000 clock ticks after boot
    const stat = (start: number) =>
      writeFileSync(join(proc, String(pid), 'stat'), `${pid} (slurmstepd) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 ${start} 0 0\n`);
    stat(5000);
    writeFileSync(join(proc, String(pid), 'cgroup'), '0::/system.slice/slurmd.service\n');
    writeFileSync(join(proc, String(pid), 'environ'), 'PATH=/usr/bin\0');
    let now = 1_000_000;
    const cache = new PidJobCache(jobOfPid, proc, () => now);
    assert.equal(cache.job(pid), null);
    // it execs the job's script: the same process (same start time), now with the job's environment
    writeFileSync(join(proc, String(pid), 'environ'), 'PATH=/usr/bin\0SLURM_JOB_ID=77\0');
    now += 1000;
    assert.equal(cache.job(pid), null, 'a "no job" answer is believed for a few seconds');
    now += 5000;
    assert.equal(cache.job(pid), '77', 'and read again after them');
    // a found job is kept for the process's life, however long
    writeFileSync(join(proc, String(pid), 'environ'), 'PATH=/usr/bin\0SLURM_JOB_ID=78\0');
    now += 3_600_000;
    assert.equal(cache.job(pid), '77');
    // the pid reused by a new process: read at once
    stat(9000);
    assert.equal(cache.job(pid), '78');
  },
);

test(
  'a job a process names itself (SLURM_JOB_ID in its environment) stands only when the store ' +
    "does not know it as another user's; Slurm's cgroup always stands",
  () => {
    const proc = tempDir('l9gpu-proc-own-');
    const proc0 = (pid: number, uid: number, cgroup: string, environ: string) => {
      mkdirSync(join(proc, String(pid)));
      writeFileSync(join(proc, String(pid), 'status'), `Name:\tpython\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
      writeFileSync(join(proc, String(pid), 'cgroup'), cgroup);
      writeFileSync(join(proc, String(pid), 'environ'), environ);
    };
    // the store: job 999 is uid 1001's
    const uids: Record<string, number | null> = { '999': 1001, '777': null };
    const refused: string[] = [];
    const read = ownJobOfPid(
      (job) => uids[job],
      (pid, job, uid) => refused.push(`${pid}:${job}:${uid}`),
    );
    proc0(10, 65534, '0::/user.slice\n', 'SLURM_JOB_ID=999\0');
    proc0(11, 1001, '0::/user.slice\n', 'SLURM_JOB_ID=999\0');
    proc0(12, 65534, '0::/user.slice\n', 'SLURM_JOB_ID=555\0');
    proc0(13, 65534, '0::/system.slice/slurmstepd.scope/job_999/step_0\n', 'SLURM_JOB_ID=1\0');
    assert.equal(read(10, proc), null, "nobody saying job 999 (uid 1001's) is not in it");
    assert.deepEqual(refused, ['10:999:65534'], 'and it is counted');
    assert.equal(read(11, proc), '999', "the job's own user is");
    assert.equal(
      read(12, proc),
      null,
      "a job the store does not know (another node's, a future id) is not believed: asked again once the prolog has run",
    );
    assert.deepEqual(refused, ['10:999:65534'], 'an unknown job is no refusal');
    assert.equal(read(13, proc), '999', "Slurm's cgroup (v2) is Slurm's word, whatever the environment says");
    proc0(18, 65534, '0::/user.slice\n', 'SLURM_JOB_ID=777\0');
    assert.equal(
      read(18, proc),
      '777',
      'a job the store has without a uid (recorded by an old reconciler) is believed: nothing to hold it to',
    );
    proc0(14, 65534, '12:pids:/slurm_gpunode9/uid_65534/job_321/step_0\n', '');
    assert.equal(read(14, proc), '321', "and v1's");
    // a delegated systemd --user cgroup named like Slurm's is the user's own folder
    proc0(15, 65534, '0::/user.slice/user-65534.slice/user@65534.service/app.slice/job_999/x\n', '');
    proc0(16, 65534, '0::/user.slice/user-65534.slice/user@65534.service/system.slice/slurmstepd.scope/job_999\n', '');
    assert.equal(read(15, proc), null);
    assert.equal(read(16, proc), null);
    // an environment of megabytes is read to its first 256 kB
    proc0(17, 1001, '0::/user.slice\n', `${'X=' + 'y'.repeat(1 << 20)}\0SLURM_JOB_ID=999\0`);
    assert.equal(read(17, proc), null, 'SLURM_JOB_ID past the first 256 kB is not read');
    assert.equal(jobOfPid(10, proc), '999', 'jobOfPid alone reads what the process says');
  },
);

test(
  'a 120 kB SLURM_JOB_NAME, through the real prolog and the Slurm transform: the store keeps ' +
    '1 kB of it, the points carry label_length of it, and the cut is counted once against the ' +
    "job's user",
  () => {
    const d = tempDir('l9gpu-attr-long-name-');
    chmodSync(d, 0o755);
    const state = join(d, 'state');
    writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${state}\n`);
    const name = `train-${'x'.repeat(120_000)}`;
    // slurmd's environment: no PATH, no HOME
    const r = spawnSync(join(ROOT, 'slurm', 'prolog'), [], {
      env: {
        L9GPU_NODE: process.execPath,
        L9GPU_CONFIG: join(d, 'l9gpu.ini'),
        SLURM_JOB_ID: '500',
        SLURM_JOB_USER: 'mallory',
        SLURM_JOB_UID: '1003',
        SLURM_JOB_NAME: name,
        CUDA_VISIBLE_DEVICES: PARENT,
      },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const db = openStore(state);
    try {
      const stored = db.prepare("SELECT name FROM jobs WHERE job_id = '500'").get() as { name: string };
      assert.equal(stored.name.length, 1024);
      assert.ok(stored.name.endsWith('...') && stored.name.startsWith('train-xxx'));
      const budgets = new BudgetLedger();
      const t = new SlurmAttribution(db, log, undefined, { labelLength: 256, budgets });
      const gpu: Point = { metric: metric('gpu.utilization'), value: 0.5, attributes: identity(PARENT) };
      for (let i = 0; i < 3; i++) {
        t.invalidate(); // a reload each time: the cut is still counted once
        const out = t.attribute({ source: 'nvml', time: Date.now(), intervalMs: 1000, points: [gpu] } as Batch);
        assert.equal(out.points[0]!.attributes['slurm.job.id'], '500');
        assert.equal(out.points[0]!.attributes['slurm.job.name'], `${name.slice(0, 253)}...`);
        assert.equal(out.points[0]!.attributes['slurm.user'], 'mallory');
      }
      assert.equal(budgets.total('label_length'), 1);
    } finally {
      db.close();
    }
  },
);

/** The nvml plugin's points of one GPU in one batch, with the process list: what a shared GPU's tick looks like. */
function gpuTick(uuid: string, procs: [pid: number, bytes: number][]): Point[] {
  return [
    { metric: metric('gpu.utilization'), value: 0.6, attributes: identity(uuid) },
    { metric: metric('gpu.memory.used'), value: 3e9, attributes: identity(uuid) },
    { metric: metric('gpu.power.draw'), value: 300, attributes: identity(uuid) },
    { metric: metric('gpu.process.count'), value: procs.length, attributes: identity(uuid) },
    ...procs.map(([pid, bytes]): Point => ({
      metric: metric('gpu.process.memory.used'),
      value: bytes,
      attributes: { ...identity(uuid), 'process.pid': pid },
    })),
  ];
}

test(
  "[attribution] job_labels = info: a shared GPU's own points go out once with its identity " +
    "alone; gpu.job.share, per job, carries every attribute of the job; its processes' points " +
    'keep their job; batch.jobs is the same in both modes',
  () => {
    const db = openStore(tempDir('l9gpu-attr-info-'));
    const a = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      env: { ...process.env, SLURM_JOB_ID: '61' },
      stdio: 'ignore',
    });
    const b = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      env: { ...process.env, SLURM_JOB_ID: '62' },
      stdio: 'ignore',
    });
    try {
      const uid = process.getuid!();
      recordStart(
        db,
        { jobId: '61', runKey: 'r0', user: 'alice', uid, partition: 'gpu', name: 'train' },
        [{ uuid: PARENT, shared: true }],
        'prolog',
      );
      recordStart(
        db,
        { jobId: '62', runKey: 'r0', user: 'bob', uid, partition: 'gpu', name: 'eval' },
        [{ uuid: PARENT, shared: true }],
        'prolog',
      );
      const batch = {
        source: 'nvml',
        time: 1_700_000_000_000,
        intervalMs: 1000,
        points: gpuTick(PARENT, [
          [a.pid!, 3e9],
          [b.pid!, 1e9],
        ]),
      } as Batch;
      const points = new SlurmAttribution(db, log).attribute(batch);
      const info = new SlurmAttribution(db, log, undefined, { jobLabels: { mode: 'info', omit: [] } }).attribute(batch);
      const byName = (out: Batch, name: string) => out.points.filter((p) => p.metric.name === name);
      // points: the GPU's series once per job; info: once, as the plugin sent it
      assert.deepEqual(
        byName(points, 'gpu.utilization').map((p) => p.attributes['slurm.job.id']),
        ['61', '62'],
      );
      assert.deepEqual(
        byName(info, 'gpu.utilization').map((p) => p.attributes),
        [identity(PARENT)],
      );
      assert.deepEqual(
        byName(info, 'gpu.power.draw').map((p) => p.attributes),
        [identity(PARENT)],
      );
      // the share series is the same in both: the GPU's identity and the whole job, its share by process memory
      for (const out of [points, info]) {
        assert.deepEqual(
          byName(out, 'gpu.job.share').map((p) => [p.value, { ...p.attributes }]),
          [
            [
              0.75,
              { ...identity(PARENT), 'slurm.job.id': '61', 'slurm.user': 'alice', 'slurm.partition': 'gpu', 'slurm.job.name': 'train' },
            ],
            [0.25, { ...identity(PARENT), 'slurm.job.id': '62', 'slurm.user': 'bob', 'slurm.partition': 'gpu', 'slurm.job.name': 'eval' }],
          ],
        );
        // a process's series is its job's anyway: it keeps the job in both modes
        assert.deepEqual(
          byName(out, 'gpu.process.memory.used').map((p) => p.attributes['slurm.job.id']),
          ['61', '62'],
        );
      }
      assert.deepEqual(info.jobs, points.jobs);
      assert.equal(info.time, batch.time, "the share goes out in the GPU points' batch: one timestamp");
    } finally {
      a.kill();
      b.kill();
      db.close();
    }
  },
);

test(
  "[attribution] omit_from_points: the named attributes leave every point (a GPU's, a " +
    "process's, an engine's) but stay on gpu.job.share and batch.jobs; a 120 kB job name is cut " +
    'on the share too',
  () => {
    const db = openStore(tempDir('l9gpu-attr-omit-'));
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      env: { ...process.env, SLURM_JOB_ID: '63' },
      stdio: 'ignore',
    });
    try {
      const name = `train-${'x'.repeat(120_000)}`;
      recordStart(
        db,
        { jobId: '63', runKey: 'r0', user: 'carol', uid: process.getuid!(), partition: 'gpu', name },
        [{ uuid: PARENT, shared: false }],
        'prolog',
      );
      const engine: Point = {
        metric: metric('vllm.requests.running'),
        value: 1,
        attributes: { 'server.address': '127.0.0.1', 'server.port': 8000, 'process.pid': child.pid! },
      };
      const batch = {
        source: 'nvml',
        time: Date.now(),
        intervalMs: 1000,
        points: [...gpuTick(PARENT, [[child.pid!, 1e9]]), engine],
      } as Batch;
      for (const mode of ['points', 'info'] as const) {
        const out = new SlurmAttribution(db, log, undefined, {
          labelLength: 256,
          jobLabels: { mode, omit: ['slurm.job.name', 'slurm.user'] },
        }).attribute(batch);
        const share = out.points.find((p) => p.metric.name === 'gpu.job.share')!;
        assert.equal(share.attributes['slurm.job.name'], `${name.slice(0, 253)}...`, mode);
        assert.equal(share.attributes['slurm.user'], 'carol', mode);
        assert.equal(out.jobs!.get(PARENT)![0]!.attributes['slurm.user'], 'carol', mode);
        for (const p of out.points.filter((q) => q.metric.name !== 'gpu.job.share')) {
          assert.equal(p.attributes['slurm.user'], undefined, `${mode}: ${p.metric.name}`);
          assert.equal(p.attributes['slurm.job.name'], undefined, `${mode}: ${p.metric.name}`);
        }
        const carry = out.points.filter((p) => p.attributes['slurm.job.id'] === '63').map((p) => p.metric.name);
        assert.deepEqual(
          carry,
          mode === 'points'
            ? [
                'gpu.utilization',
                'gpu.memory.used',
                'gpu.power.draw',
                'gpu.process.count',
                'gpu.process.memory.used',
                'vllm.requests.running',
                'gpu.job.share',
              ]
            : ['gpu.process.memory.used', 'vllm.requests.running', 'gpu.job.share'],
        );
        assert.equal(out.points.find((p) => p.metric.name === 'gpu.job.share')!.attributes['slurm.partition'], 'gpu');
        assert.equal(out.points.find((p) => p.metric.name === 'vllm.requests.running')!.attributes['slurm.partition'], 'gpu');
      }
    } finally {
      child.kill();
      db.close();
    }
  },
);
