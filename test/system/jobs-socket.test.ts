/**
 * Users' `l9gpu jobs` against a real daemon: the store is root's alone, so a
 * user's question goes through the daemon's socket, which answers by the uid
 * the kernel reports (SO_PEERCRED), not by anything the client says. Slurm is
 * a stand-in here (scontrol in [slurm] bin_dir answering as 22.05 does with no
 * step on the node); the real-Slurm suites ask the same way after real jobs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { CLI, tempDir } from '../helpers/paths.js';
import { DaemonProcess, runCli } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const USER = 'l9gputest';
const d = tempDir('l9gpu-jobs-socket-');
const state = join(d, 'state');
const config = join(d, 'l9gpu.ini');
const sock = join(state, 'jobs.sock');
let daemon: DaemonProcess;

const asUser = (args: string[]) =>
  spawnSync('runuser', ['-u', USER, '--', process.execPath, CLI, ...args, '--config', config], { encoding: 'utf8' });

/** One raw request line (or none), the daemon's one answer line. */
function raw(payload: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const s = connect(sock);
    let buf = '';
    s.on('connect', () => s.write(payload));
    s.setEncoding('utf8').on('data', (c: string) => (buf += c));
    s.on('end', () => resolve(JSON.parse(buf) as Record<string, unknown>));
    s.on('error', reject);
  });
}

before(async () => {
  chmodSync(d, 0o755);
  const bin = join(d, 'bin');
  mkdirSync(bin);
  // 22.05's scontrol with no step on the node (recorded answers: slurm/testdata/README.md)
  writeFileSync(
    join(bin, 'scontrol'),
    `#!/bin/sh\n[ "$1" = listjobs ] && { echo 'invalid keyword: listjobs' >&2; exit 1; }\necho ` +
      `'No job steps exist on this node.' >&2; exit 1\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(bin, 'sacct'), `#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1\n`, { mode: 0o755 });
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=ci\n');
  writeFileSync(
    config,
    `[daemon]\nstate_dir = ${state}\nattribution = slurm\ninterval = 1s\n[slurm]\nslurm_conf = ${join(d, 'slurm.conf')}\nnode_name ` +
      `= gpunode9\nbin_dir = ${bin}\n[sim]\ngpus = 1\n`,
  );
  const uid = Number(spawnSync('id', ['-u', USER], { encoding: 'utf8' }).stdout.trim());
  const db = openStore(state);
  const t = Date.now() - 3_600_000;
  recordStart(db, { jobId: '71', runKey: 'r0', user: USER, uid, partition: 'gpu' }, [{ uuid: 'GPU-sock-0', shared: false }], 'prolog', t);
  recordEnd(db, { jobId: '71', runKey: 'r0' }, { endTime: t + 600_000, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', t + 600_000);
  recordStart(
    db,
    { jobId: '72', runKey: 'r0', user: 'root', uid: 0, partition: 'gpu' },
    [{ uuid: 'GPU-sock-0', shared: false }],
    'prolog',
    t,
  );
  recordEnd(db, { jobId: '72', runKey: 'r0' }, { endTime: t + 600_000, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', t + 600_000);
  db.close();
  daemon = new DaemonProcess(['--config', config, '--plugin', 'sim', '--sink', 'stdout']);
  await waitFor('the jobs socket', () => existsSync(sock), 20_000);
});

after(async () => {
  assert.equal(await daemon.stop(), 0, daemon.stderr);
});

test("the store is root's alone; a user's l9gpu jobs is answered by the daemon, for their own jobs only", async () => {
  assert.equal(statSync(join(state, 'l9gpu.db')).mode & 0o777, 0o600);
  assert.equal(statSync(sock).mode & 0o777, 0o666, 'anyone may ask');
  const mine = asUser(['jobs', '--json']);
  assert.equal(mine.status, 0, mine.stderr);
  assert.deepEqual(
    (JSON.parse(mine.stdout) as { id: string }[]).map((r) => r.id),
    ['71'],
  );
  const shown = asUser(['jobs', 'show', '71', '--json']);
  assert.equal(shown.status, 0, shown.stderr);
  assert.equal((JSON.parse(shown.stdout) as { job: { user: string } }).job.user, USER);
  const theirs = asUser(['jobs', 'show', '72']);
  assert.equal(theirs.status, 1);
  // Slurm's PrivateData=jobs: not the owner, not where else to look
  assert.equal(theirs.stderr, 'l9gpu: job 72 is not yours\n');
  const other = asUser(['jobs', '--user', 'root']);
  assert.equal(other.status, 1);
  assert.match(other.stderr, /you can only list your own jobs \(l9gputest\)/);
  // root reads the store itself and sees both
  const all = await runCli(['jobs', '--json', '--config', config]);
  assert.deepEqual((JSON.parse(all.stdout) as { id: string }[]).map((r) => r.id).sort(), ['71', '72']);
});

test('the socket answers bad requests with what was wrong, and goes on answering', async () => {
  assert.match(String((await raw('{nope\n')).error), /^bad request: not JSON/);
  assert.match(String((await raw('{"op":"drop","table":"jobs"}\n')).error), /^bad request: op: "drop" is not list or show/);
  assert.match(String((await raw('{"op":"show","jobId":"1; rm -rf /"}\n')).error), /^bad request: jobId: not a job id/);
  assert.match(String((await raw('{"op":"list","state":"all","limit":-1}\n')).error), /^bad request: limit/);
  assert.match(String((await raw('x'.repeat(70_000))).error), /request longer than 65536 bytes/);
  const ok = await raw('{"op":"list","user":null,"account":null,"partition":null,"state":"all","since":null,"limit":10}\n');
  assert.equal(ok.ok, true, 'root over the socket: answered');
  assert.equal((ok.rows as unknown[]).length, 2);
});

test('one daemon per state folder: a second says which pid runs and exits 1', async () => {
  const second = await runCli(['daemon', '--config', config, '--plugin', 'sim', '--sink', 'stdout']);
  assert.equal(second.status, 1, second.stderr);
  assert.match(
    second.stderr,
    new RegExp(
      `another l9gpu daemon \\(pid ${daemon.child.pid}\\) runs on this state folder \\(it holds ${state}/daemon\\.lock\\): stop it first`,
    ),
  );
  assert.equal(statSync(sock).isSocket(), true, "the running daemon's socket is left alone");
  // root's alone: a user who could open it could hold a shared lock on it and have every later start refused
  assert.equal(statSync(join(state, 'daemon.lock')).mode & 0o777, 0o600);
});

test('daemon --once beside the running daemon reads its store and leaves jobs.sock answering', async () => {
  const before = statSync(sock).ino;
  const once = await runCli(['daemon', '--once', '--config', config, '--plugin', 'sim', '--sink', 'stdout']);
  assert.equal(once.status, 0, once.stderr);
  assert.match(
    once.stderr,
    new RegExp(
      String.raw`another l9gpu daemon \(pid \d+\) runs on this state folder .*--once samples and ` +
        String.raw`exports beside it, without its store's writes, its jobs socket or its health ` +
        String.raw`file`,
    ),
  );
  assert.match(once.stdout, /"name":"gpu\.utilization"/, 'it sampled and exported');
  assert.equal(statSync(sock).ino, before, 'the same socket file: not removed, not made again');
  const mine = asUser(['jobs', '--json']);
  assert.equal(mine.status, 0, mine.stderr);
  assert.deepEqual(
    (JSON.parse(mine.stdout) as { id: string }[]).map((r) => r.id),
    ['71'],
  );
});

test('SIGHUP makes the jobs socket again when its file is gone', async () => {
  rmSync(sock);
  const gone = asUser(['jobs']);
  assert.equal(gone.status, 1);
  const mark = daemon.stderr.length;
  daemon.child.kill('SIGHUP');
  await daemon.waitStderr(/the jobs socket was gone: made again/, 15_000, mark);
  await waitFor('the socket made again', () => existsSync(sock), 15_000);
  const mine = asUser(['jobs', '--json']);
  assert.equal(mine.status, 0, mine.stderr);
  assert.deepEqual(
    (JSON.parse(mine.stdout) as { id: string }[]).map((r) => r.id),
    ['71'],
  );
});

test('1,000 SIGHUPs in a burst: a few reloads, a few log lines, fds and the socket as before', async () => {
  const fds = () => readdirSync(`/proc/${daemon.child.pid}/fd`).length;
  const fdsBefore = fds();
  const mark = daemon.stderr.length;
  const reloaded = () => [...daemon.stderr.slice(mark).matchAll(/configuration reloaded .*?config=(\w+)/g)].map((m) => m[1]!);
  for (let i = 0; i < 1000; i++) daemon.child.kill('SIGHUP');
  await waitFor('a reload of the burst', () => reloaded().length > 0 || undefined, 30_000);
  // a changed configuration is always said: its line, with the new digest, ends the burst's reloads (one at a time)
  const burst = reloaded()[0]!;
  writeFileSync(config, readFileSync(config, 'utf8') + 'seed = 7\n'); // in [sim]: a changed value
  daemon.child.kill('SIGHUP');
  await waitFor('the changed configuration reloaded', () => reloaded().some((d) => d !== burst) || undefined, 30_000).catch((e: Error) => {
    throw new Error(`${e.message}; the daemon said since the burst:\n${daemon.stderr.slice(mark).slice(-3000)}`);
  });
  const lines = daemon.stderr
    .slice(mark)
    .split('\n')
    .filter((l) => /configuration reloaded|reload failed/.test(l));
  assert.ok(
    lines.length >= 2 && lines.length <= 7,
    `a burst of 1,000 SIGHUPs and one changed file: ${lines.length} lines:\n${lines.join('\n')}`,
  );
  assert.ok(Math.abs(fds() - fdsBefore) <= 2, `fds ${fdsBefore} -> ${fds()}`);
  const mine = asUser(['jobs', '--json']);
  assert.equal(mine.status, 0, mine.stderr);
});

test('with the daemon stopped, a user is told why', async () => {
  assert.equal(await daemon.stop(), 0, daemon.stderr);
  assert.equal(existsSync(sock), false, 'the socket goes with the daemon');
  const r = asUser(['jobs']);
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    /the l9gpu daemon is not answering on \S+jobs\.sock \(is it running on this node\?\); the job store is readable by root only/,
  );
});
