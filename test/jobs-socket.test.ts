/**
 * Users' `l9gpu jobs` against a real daemon: the store is root's alone, so a
 * user's question goes through the daemon's socket, which answers by the uid
 * the kernel reports (SO_PEERCRED), not by anything the client says. Slurm is
 * a stand-in here (scontrol in [slurm] bin_dir answering as 22.05 does with no
 * step on the node); the real-Slurm suites ask the same way after real jobs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { recordEnd, recordStart } from '../src/store/jobs.js';
import { openStore } from '../src/store/open.js';
import { CLI, tempDir } from './helpers/paths.js';
import { DaemonProcess, runCli } from './helpers/daemon.js';
import { waitFor } from './helpers/wait.js';

const USER = 'l9gputest';
const d = tempDir('l9gpu-jobs-socket-');
const state = join(d, 'state');
const config = join(d, 'l9gpu.ini');
const sock = join(state, 'jobs.sock');
let daemon: DaemonProcess;

const asUser = (args: string[]) => spawnSync('runuser', ['-u', USER, '--', process.execPath, CLI, ...args, '--config', config], { encoding: 'utf8' });

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
  writeFileSync(join(bin, 'scontrol'), `#!/bin/sh\n[ "$1" = listjobs ] && { echo 'invalid keyword: listjobs' >&2; exit 1; }\necho 'No job steps exist on this node.' >&2; exit 1\n`, { mode: 0o755 });
  writeFileSync(join(bin, 'sacct'), `#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1\n`, { mode: 0o755 });
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=ci\n');
  writeFileSync(config, `[daemon]\nstate_dir = ${state}\nattribution = slurm\ninterval = 1s\n[slurm]\nslurm_conf = ${join(d, 'slurm.conf')}\nnode_name = gpunode9\nbin_dir = ${bin}\n[sim]\ngpus = 1\n`);
  const uid = Number(spawnSync('id', ['-u', USER], { encoding: 'utf8' }).stdout.trim());
  const db = openStore(state);
  const t = Date.now() - 3_600_000;
  recordStart(db, { jobId: '71', runKey: 'r0', user: USER, uid, partition: 'gpu' }, [{ uuid: 'GPU-sock-0', shared: false }], 'prolog', t);
  recordEnd(db, { jobId: '71', runKey: 'r0' }, { endTime: t + 600_000, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', t + 600_000);
  recordStart(db, { jobId: '72', runKey: 'r0', user: 'root', uid: 0, partition: 'gpu' }, [{ uuid: 'GPU-sock-0', shared: false }], 'prolog', t);
  recordEnd(db, { jobId: '72', runKey: 'r0' }, { endTime: t + 600_000, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', t + 600_000);
  db.close();
  daemon = new DaemonProcess(['--config', config, '--plugin', 'sim', '--sink', 'stdout']);
  await waitFor('the jobs socket', () => existsSync(sock), 20_000);
});

after(async () => {
  assert.equal(await daemon.stop(), 0, daemon.stderr);
});

test('the store is root\'s alone; a user\'s l9gpu jobs is answered by the daemon, for their own jobs only', async () => {
  assert.equal(statSync(join(state, 'l9gpu.db')).mode & 0o777, 0o600);
  assert.equal(statSync(sock).mode & 0o777, 0o666, 'anyone may ask');
  const mine = asUser(['jobs', '--json']);
  assert.equal(mine.status, 0, mine.stderr);
  assert.deepEqual((JSON.parse(mine.stdout) as { id: string }[]).map((r) => r.id), ['71']);
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

test('with the daemon stopped, a user is told why', async () => {
  assert.equal(await daemon.stop(), 0, daemon.stderr);
  assert.equal(existsSync(sock), false, 'the socket goes with the daemon');
  const r = asUser(['jobs']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /the l9gpu daemon is not answering on \S+jobs\.sock \(is it running on this node\?\); the job store is readable by root only/);
});
