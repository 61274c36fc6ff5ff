/**
 * The slurmctld epilog, bounded: the real slurm/ctld-epilog entry run as
 * slurmctld runs it, against a real VictoriaMetrics, with accounting stood in
 * (test/helpers/ctld-stand-in.ts). A CPU job starts nothing; many ending
 * together make one worker that batches its queries; a worker killed
 * mid-drain leaves nothing undone and nothing done twice; the queue's cap
 * holds and says what it dropped; the log is rotated.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { pushGpuJob, queryCount, standIn, type StandIn } from '../helpers/ctld-stand-in.js';
import { waitFor } from '../helpers/wait.js';
import { CLI, tempDir } from '../helpers/paths.js';
import { tryWorkerLock } from '../../slurm/ctld-lock.js';
import { ctldLog, LOG_FILE } from '../../slurm/ctld-log.js';
import { decodeSummary } from '../../src/jobs/summary.js';

let vm: VictoriaMetrics;
before(async () => {
  vm = await new VictoriaMetrics().start();
});
after(async () => {
  await vm?.stop();
});

const queued = (s: StandIn, sub: 'new' | 'cur') => {
  const d = join(s.stateDir, 'ctld-queue', sub);
  return existsSync(d) ? readdirSync(d) : [];
};
/** The pids of the workers that ran, from their log lines. */
const workers = (log: string) => [...log.matchAll(/worker (\d+): started/g)].map((m) => m[1]!);
const drained = (s: StandIn, n: number) => () =>
  (s.log().match(/: the queue is empty/g)?.length ?? 0) >= n && queued(s, 'new').length === 0 && queued(s, 'cur').length === 0;
/** n GPU jobs from id `base` on, ended two minutes ago: in accounting (the stand-in's sacct) and their series in VictoriaMetrics. */
async function endedGpuJobs(s: StandIn, n: number, base: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => String(base + i));
  const start = Math.floor(Date.now() / 1000) - 120;
  for (const id of ids) s.record(id, start);
  await pushGpuJob(vm, ids);
  return ids;
}

test(
  'a CPU-only job (its nodes have no GPU GRES in slurm.conf) queues nothing and starts no ' + 'worker; a job that never ran is passed over',
  async () => {
    const s = standIn(vm);
    const cpu = await s.epilog('5001', 'cpu[1-2]');
    assert.equal(cpu.code, 0);
    assert.equal(cpu.stderr, '');
    const pending = await s.epilog('5002', 'None assigned');
    assert.equal(pending.code, 0);
    assert.deepEqual(queued(s, 'new'), []);
    // the Node epilog left what the shell path needs: the next CPU job is decided without Node
    assert.match(readFileSync(join(s.stateDir, 'ctld-fast'), 'utf8'), /^gpu\tgpu1$/m);
    const again = await s.epilog('5003', 'cpu2');
    assert.equal(again.code, 0);
    assert.deepEqual(queued(s, 'new'), []);
    assert.equal(existsSync(join(s.stateDir, 'ctld-worker.lock')), false, 'no worker ever took its lock');
    assert.equal(s.log(), '');
  },
);

test(
  'the shell path queues what the Node epilog would: an array task by its ARRAYID_TASKID, a ' +
    'mixed node list as a GPU job; a changed slurm.conf or an unknown node goes to the Node ' +
    'epilog',
  async () => {
    const s = standIn(vm);
    // the test holds the worker lock: the epilogs only queue
    const held = tryWorkerLock(s.stateDir)!;
    try {
      assert.equal((await s.epilog('5100', 'cpu1')).code, 0);
      assert.equal((await s.epilog('5101', 'cpu1,gpu[2-3]', { SLURM_ARRAY_JOB_ID: '5090', SLURM_ARRAY_TASK_ID: '11' })).code, 0);
      const files = queued(s, 'new');
      assert.equal(files.length, 1);
      assert.deepEqual(JSON.parse(readFileSync(join(s.stateDir, 'ctld-queue', 'new', files[0]!), 'utf8')), {
        rawId: '5101',
        acctId: '5090_11',
        at: Number(files[0]!.split('-')[0]),
      });
      // a node slurm.conf does not name: queued (by the Node epilog, which decides 'unknown')
      assert.equal((await s.epilog('5102', 'dyn7')).code, 0);
      assert.equal(queued(s, 'new').length, 2);
      // slurm.conf changed: cpu1 has GPUs now; the shell must not trust its old verdict
      const conf = join(s.dir, 'slurm.conf');
      writeFileSync(conf, readFileSync(conf, 'utf8').replace('NodeName=cpu[1-2]', 'NodeName=cpu[1-2] Gres=gpu:1'));
      utimesSync(conf, new Date(), new Date(Date.now() + 5000));
      assert.equal((await s.epilog('5103', 'cpu1')).code, 0);
      assert.equal(queued(s, 'new').length, 3);
      assert.match(readFileSync(join(s.stateDir, 'ctld-fast'), 'utf8'), /^gpu\tcpu1$/m);
    } finally {
      // the workers the epilogs started found the lock held and went; then nothing is left for one to start on
      await waitFor('no worker start under way', () => !existsSync(join(s.stateDir, 'ctld-worker.starting')));
      rmSync(join(s.stateDir, 'ctld-queue'), { recursive: true, force: true });
      held.release();
    }
  },
);

test('200 GPU jobs ending at once: one worker at a time, every summary written once, in a few queries per round', async () => {
  const s = standIn(vm);
  const ids = await endedGpuJobs(s, 200, 6000);
  const before = await queryCount(vm);
  // all at once, as slurmctld's scripts thread pool starts them; the machine's 2 cores take them 25 at a time
  for (let i = 0; i < ids.length; i += 25)
    for (const r of await Promise.all(ids.slice(i, i + 25).map((id, k) => s.epilog(id, `gpu${(k % 4) + 1}`)))) assert.equal(r.code, 0);
  await waitFor('the queue drained', drained(s, 1), 120_000, 100);
  const log = s.log();
  // workers may follow one another (one found the queue empty, a later epilog started the next), never two at once
  const pids = workers(log);
  assert.ok(pids.length >= 1 && pids.length <= 3, `workers: ${pids.join(', ')}`);
  const events = [...log.matchAll(/worker (\d+): (started|the queue is empty)/g)].map((m) => m[2]);
  for (let i = 0; i < events.length; i += 2)
    assert.deepEqual(events.slice(i, i + 2), ['started', 'the queue is empty'], `worker lines in order: ${events.join(', ')}`);
  const writes = s.writes();
  assert.deepEqual([...writes].sort(), [...ids].sort(), 'each job written once');
  for (const id of ids.slice(0, 5)) {
    const summary = decodeSummary(readFileSync(join(s.dir, 'acct', `${id}.comment`), 'utf8'), `job ${id}`);
    assert.equal(summary?.gpus.length, 1);
    assert.equal(summary!.gpus[0]!.figures.samples, 6);
  }
  // the first ends found no ctld-fast file (or one being written) and ran the Node epilog; the rest queued in the shell
  assert.ok(existsSync(join(s.stateDir, 'ctld-fast')));
  const queries = (await queryCount(vm)) - before;
  // per job the old worker asked about 30 queries (coverage 3, report 21, again while settling)
  assert.ok(queries < ids.length, `${queries} PromQL queries for ${ids.length} jobs`);
});

test("the worker killed (SIGKILL) mid-drain: the next epilog's worker takes its jobs again; none is written twice", async () => {
  const s = standIn(vm);
  const ids = Array.from({ length: 40 }, (_, i) => String(7000 + i));
  const start = Math.floor(Date.now() / 1000) - 120;
  // accounting has the end of half the jobs: the worker writes those and waits on the rest
  ids.forEach((id, i) => s.record(id, start, i % 2 === 0));
  await pushGpuJob(vm, ids);
  for (const id of ids) assert.equal((await s.epilog(id, 'gpu1')).code, 0);
  await waitFor('the first half written', () => s.writes().length >= 20, 60_000, 50);
  const pid = Number(workers(s.log())[0]);
  process.kill(pid, 'SIGKILL');
  await waitFor('the worker gone', () => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  });
  assert.ok(queued(s, 'cur').length >= 20, "the killed worker's jobs are still taken");
  for (const id of ids) s.end(id);
  const last = String(7040);
  s.record(last, start);
  await pushGpuJob(vm, [last]);
  assert.equal((await s.epilog(last, 'gpu2')).code, 0);
  await waitFor('the queue drained', drained(s, 1), 60_000, 100);
  assert.match(s.log(), /worker \d+: started; \d+ job\(s\) taken by a worker that ended before it finished them: taken again/);
  assert.deepEqual([...s.writes()].sort(), [...ids, last].sort(), 'every job written, none twice');
});

test(
  "the queue's cap: past it the newest ended job is dropped, said on stderr for slurmctld's " + "log, and counted in the worker's log",
  async () => {
    const s = standIn(vm);
    const ids = await endedGpuJobs(s, 8, 8000);
    // a worker busy elsewhere: the test holds the lock, so the epilogs only queue
    const held = tryWorkerLock(s.stateDir)!;
    const env = { L9GPU_CTLD_BACKLOG: '5' };
    const results = [];
    for (const id of ids) results.push(await s.epilog(id, 'gpu3', env));
    assert.deepEqual(
      results.map((r) => r.code),
      ids.map(() => 0),
    );
    assert.deepEqual(
      results.map((r) => r.stderr),
      ids.map((id, i) => (i < 5 ? '' : `l9gpu ctld-epilog: job ${id} not queued: the queue holds 5 jobs already\n`)),
    );
    assert.equal(queued(s, 'new').length, 5);
    held.release();
    // a worker of its own (one an epilog started while the lock was held may have got there first: then this one exits)
    const w = spawn(process.execPath, [CLI, 'slurm', 'ctld-epilog', '--worker', '--config', s.config], { stdio: 'ignore' });
    await new Promise((r) => w.on('close', r));
    await waitFor('the queue drained', drained(s, 1), 60_000, 50);
    assert.match(s.log(), /3 ended job\(s\) dropped: the queue was full/);
    assert.deepEqual([...s.writes()].sort(), ids.slice(0, 5));
  },
);

test('the log is size-capped: past the cap it becomes ctld-epilog.log.1 and a new one begins', () => {
  const dir = tempDir('l9gpu-ctld-log-');
  const log = ctldLog(dir, 1000);
  for (let i = 0; i < 100; i++) log(`job ${i}: summary of 1 GPU(s) on 1 node(s) stored in AdminComment (300 characters)`);
  const cur = statSync(join(dir, LOG_FILE)).size;
  const old = statSync(join(dir, `${LOG_FILE}.1`)).size;
  assert.ok(cur <= 1000 && old <= 1000, `${cur} and ${old} bytes`);
  assert.match(readFileSync(join(dir, LOG_FILE), 'utf8'), /job 99: /);
  assert.deepEqual(readdirSync(dir).sort(), [LOG_FILE, `${LOG_FILE}.1`]);
});
