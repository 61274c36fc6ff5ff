/**
 * The jobs socket against a hostile local user: the daemon is root, the socket
 * is 0666, and `nobody` (uid 65534, through runuser) does what the findings
 * did: holds connections open by the thousand with 60 kB half-requests,
 * trickles a byte at a time, sends request after request, and asks for a list
 * of 100,000 jobs. Each test reproduces one of them against the real daemon
 * (or the real server with its worker) and real SQLite, and asserts the bound
 * that stops it; root and another user are still answered throughout.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { BudgetLedger, DEFAULT_LIMITS } from '../../src/core/limits.js';
import { answerJobs } from '../../src/jobs/api.js';
import { startJobsServer } from '../../src/jobs/server.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { CLI, tempDir } from '../helpers/paths.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const OTHER = 'l9gputest';
const d = tempDir('l9gpu-jobs-hostile-');
const state = join(d, 'state');
const config = join(d, 'l9gpu.ini');
const sock = join(state, 'jobs.sock');
const idLog = join(d, 'id.log');
const client = join(d, 'client.mjs');
let daemon: DaemonProcess;

/**
 * The hostile user's side, run as nobody. Prints one JSON line of what it saw,
 * then (hold) keeps its connections open until its stdin closes.
 */
const CLIENT =
  `
import { connect } from 'node:net';
const [mode, path, ...a] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const open = () => new Promise((resolve) => { const s = connect(path); s.on('error', () => {}); s.once('connect', () => resolve(s)); ` +
  `s.once('close', () => resolve(s)); });
const answerOf = (s) => new Promise((resolve) => { let buf = ''; s.setEncoding('utf8').on('data', (c) => (buf += c)); s.on('close', ` +
  `() => resolve(buf)); });
if (mode === 'hold') {
  // n connections, each sent bytes of a request that never ends; waits for the refused ones to be answered
  const [n, bytes, expectClosed, waitMs] = a.map(Number);
  const socks = [];
  let closed = 0;
  const answers = [];
  for (let i = 0; i < n; i++) {
    const s = await open();
    socks.push(s);
    answerOf(s).then((b) => { closed++; if (b) answers.push(b); });
    s.write('x'.repeat(bytes));
  }
  const until = Date.now() + waitMs;
  while (closed < expectClosed && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  out({ closed, answers: [...new Set(answers)] });
  process.stdin.resume().on('end', () => { for (const s of socks) s.destroy(); process.exit(0); });
} else if (mode === 'trickle') {
  // a byte every intervalMs, never a newline: when is it cut, and with what answer
  const [intervalMs, giveUpMs] = a.map(Number);
  const t0 = Date.now();
  const s = await open();
  const timer = setInterval(() => s.write('{'), intervalMs);
  const giveUp = setTimeout(() => s.destroy(), giveUpMs);
  const answer = await answerOf(s);
  clearInterval(timer);
  clearTimeout(giveUp);
  out({ cutAfterMs: Date.now() - t0, answer });
} else if (mode === 'requests') {
  // n valid requests, concurrency at a time
  const [n, concurrency] = a.map(Number);
  const req = JSON.stringify({ op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 10 }) + '\\n';
  let ok = 0;
  const errors = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      next++;
      const s = await open();
      const p = answerOf(s);
      s.write(req);
      const r = JSON.parse((await p) || '{}');
      if (r.ok) ok++;
      else errors.push(r.error);
    }
  }));
  out({ ok, errors: [...new Set(errors)] });
}
`;

/** The client as nobody; `hold` keeps running until the returned child's stdin is closed. */
function asNobody(args: string[]): { child: ChildProcess; result: Promise<Record<string, unknown>> } {
  const child = spawn('runuser', ['-u', 'nobody', '--', process.execPath, client, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const result = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as Record<string, unknown>);
    });
    child.on('exit', (code) => reject(new Error(`client exited ${code} before saying what it saw: ${out}`)));
  });
  return { child, result };
}

const done = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null ? r() : (c.on('exit', () => r()), c.stdin!.end())));

/** One request from this process (root), its answer. */
function ask(path: string, req: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    let buf = '';
    s.on('connect', () => s.write(JSON.stringify(req) + '\n'));
    s.setEncoding('utf8').on('data', (c: string) => (buf += c));
    s.on('end', () => resolve(JSON.parse(buf) as Record<string, unknown>));
    s.on('error', reject);
  });
}

const LIST = { op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 10 };
const asUser = (user: string, args: string[]) =>
  spawnSync('runuser', ['-u', user, '--', process.execPath, CLI, ...args, '--config', config], { encoding: 'utf8' });

/** As runuser, without blocking this process (whose event loop may be serving the socket asked). */
function runAs(user: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn('runuser', ['-u', user, '--', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let stderr = '';
    c.stdout.on('data', (b: Buffer) => out.push(b));
    c.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    c.on('close', (status) => resolve({ status, stdout: Buffer.concat(out).toString('utf8'), stderr }));
  });
}
/** One raw request as `user`: what the socket answers. */
const rawAs = async (user: string, path: string, req: object) =>
  JSON.parse(
    (
      await runAs(user, [
        '-e',
        `const s=require('net').connect(${JSON.stringify(path)});let ` +
          `b='';s.on('connect',()=>s.write(${JSON.stringify(JSON.stringify(req) + '\n')}));` +
          `s.setEncoding('utf8').on('data',(c)=>b+=c).on('end',()=>process.stdout.write(b))`,
      ])
    ).stdout,
  ) as Record<string, unknown>;
const memMb = (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const writeConfig = (adminGroup: string) =>
  writeFileSync(
    config,
    `[daemon]\nstate_dir = ${state}\nattribution = slurm\ninterval = 1s\n[slurm]\nslurm_conf = ${join(d, 'slurm.conf')}\nnode_name ` +
      `= gpunode9\nbin_dir = ${join(d, 'bin')}\n[jobs]\nadmin_group = ${adminGroup}\n[limits]\njobs_request_timeout ` +
      `= 60s\n[sim]\ngpus = 1\n`,
  );

before(async () => {
  chmodSync(d, 0o755);
  writeFileSync(client, CLIENT, { mode: 0o644 });
  const bin = join(d, 'bin');
  mkdirSync(bin);
  writeFileSync(
    join(bin, 'scontrol'),
    `#!/bin/sh\n[ "$1" = listjobs ] && { echo 'invalid keyword: listjobs' >&2; exit 1; }\necho ` +
      `'No job steps exist on this node.' >&2; exit 1\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(bin, 'sacct'), `#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1\n`, { mode: 0o755 });
  // the daemon's NSS lookups, counted: the first `id` in its PATH notes each call and runs the real one
  const fakeId = join(d, 'nss');
  mkdirSync(fakeId);
  writeFileSync(join(fakeId, 'id'), `#!/bin/sh\necho "$*" >> ${idLog}\nexec /usr/bin/id "$@"\n`, { mode: 0o755 });
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=ci\n');
  writeConfig('wheel');
  const db = openStore(state);
  const t = Date.now() - 3_600_000;
  recordStart(db, { jobId: '72', runKey: 'r0', user: 'root', uid: 0, partition: 'gpu' }, [{ uuid: 'GPU-h-0', shared: false }], 'prolog', t);
  recordEnd(db, { jobId: '72', runKey: 'r0' }, { endTime: t + 600_000, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', t + 600_000);
  recordStart(
    db,
    { jobId: '73', runKey: 'r0', user: 'nobody', uid: 65534, partition: 'gpu' },
    [{ uuid: 'GPU-h-0', shared: false }],
    'prolog',
    t + 1000,
  );
  db.close();
  daemon = new DaemonProcess(['--config', config, '--plugin', 'sim', '--sink', 'stdout'], { PATH: `${fakeId}:${process.env.PATH}` });
  await waitFor('the jobs socket', () => existsSync(sock), 20_000);
});

after(async () => {
  assert.equal(await daemon.stop(), 0, daemon.stderr);
});

test('connections of one uid past jobs_connections_per_user are refused at once; root and another user are still answered', async () => {
  const hold = asNobody(['hold', sock, '20', '100', '12', '10000']);
  const seen = await hold.result;
  try {
    assert.equal(seen.closed, 12, '8 held, the other 12 refused at once');
    // nobody's name is not known yet: a refusal asks NSS nothing
    assert.deepEqual(seen.answers, [
      `${JSON.stringify({ ok: false, error: 'too many connections of uid 65534 open (8): try again when they are answered', code: 1 })}\n`,
    ]);
    // nobody's 8 are still open: others are not affected
    assert.equal((await ask(sock, LIST)).ok, true, 'root is answered');
    const other = asUser(OTHER, ['jobs', '--json']);
    assert.equal(other.status, 0, other.stderr);
    assert.deepEqual(JSON.parse(other.stdout), []);
  } finally {
    await done(hold.child);
  }
  await daemon.waitStderr(
    /limit reached: jobs socket: too many connections of uid 65534 open.*budget=jobs_connections_per_user user=65534/,
  );
});

test('many held 60 kB half-requests: the daemon holds a bounded few, its memory does not grow with them', async () => {
  assert.equal((await ask(sock, LIST)).ok, true);
  const before = memMb(daemon.child.pid!, 'VmRSS');
  const peakBefore = memMb(daemon.child.pid!, 'VmHWM');
  const hold = asNobody(['hold', sock, '600', String(60_000), '592', '10000']);
  const seen = await hold.result;
  try {
    // a round trip after the last byte was sent: the daemon has read what it was going to read
    assert.equal((await ask(sock, LIST)).ok, true);
    const grown = memMb(daemon.child.pid!, 'VmRSS') - before;
    // the old daemon held all 600 (36 MB of request text alone) until its idle timeout; now 8 x 60 kB
    const peakGrown = memMb(daemon.child.pid!, 'VmHWM') - peakBefore;
    assert.ok(
      grown < 16 && peakGrown < 16,
      `the daemon grew ${grown.toFixed(1)} MB (peak ${peakGrown.toFixed(1)} MB) holding nobody's half-requests`,
    );
    assert.equal(seen.closed, 592);
  } finally {
    await done(hold.child);
  }
});

test('valid requests in a burst cost a lookup of the uid, not an NSS child process each', async () => {
  writeFileSync(idLog, '');
  const burst = asNobody(['requests', sock, '200', '4']);
  const seen = await burst.result;
  await done(burst.child);
  assert.deepEqual(seen, { ok: 200, errors: [] });
  const lookups = readFileSync(idLog, 'utf8').split('\n').filter(Boolean);
  assert.ok(lookups.length <= 2, `${lookups.length} id processes for 200 requests: ${lookups.slice(0, 4).join('; ')}`);
});

test('another user\'s job: "job N is not yours", and nothing more (socket and store alike)', async () => {
  const r = asUser('nobody', ['jobs', 'show', '72']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'l9gpu: job 72 is not yours\n');
  const json = await rawAs('nobody', sock, { op: 'show', jobId: '72' });
  assert.deepEqual(json, { ok: false, error: 'job 72 is not yours', code: 1, denied: true });
  const db = openStore(state);
  try {
    assert.deepEqual(answerJobs(db, 'gpunode9', null, { name: 'alice', privileged: false }, { op: 'show', jobId: '72' }), {
      ok: false,
      error: 'job 72 is not yours',
      code: 1,
      denied: true,
    });
  } finally {
    db.close();
  }
});

test('a reload that changes [jobs] keeps the socket: a user asks afterwards and is answered', async () => {
  const mark = daemon.stderr.length;
  writeConfig('l9gpu-admins');
  daemon.child.kill('SIGHUP');
  await waitFor('the reload', () => /configuration reloaded/.test(daemon.stderr.slice(mark)));
  assert.ok(existsSync(sock) && statSync(sock).isSocket(), 'jobs.sock is there after the reload');
  const r = asUser('nobody', ['jobs', '--json']);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(
    (JSON.parse(r.stdout) as { id: string }[]).map((j) => j.id),
    ['73'],
  );
  const doc = spawnSync(process.execPath, [CLI, 'doctor', '--json', '--config', config], { encoding: 'utf8' });
  assert.equal((JSON.parse(doc.stdout) as { jobs_socket: { ok: boolean } }).jobs_socket.ok, true, doc.stdout);
  // what the old reload left: a running daemon without its socket, which doctor must not call healthy
  unlinkSync(sock);
  const gone = spawnSync(process.execPath, [CLI, 'doctor', '--json', '--config', config], { encoding: 'utf8' });
  assert.equal(gone.status, 1);
  assert.match(
    (JSON.parse(gone.stdout) as { jobs_socket: { ok: boolean; detail: string } }).jobs_socket.detail,
    /^the daemon runs \(pid \d+ holds the state folder.s lock\) but the l9gpu daemon is not answering on /,
  );
});

test('a client that trickles a byte at a time is cut at the request deadline, not kept by its bytes', async () => {
  const dir = tempDir('l9gpu-jobs-trickle-');
  chmodSync(dir, 0o755);
  openStore(dir).close();
  const server = await startJobsServer({
    stateDir: dir,
    node: () => 'n',
    prices: () => null,
    adminGroup: () => null,
    log: createLogger('error', () => {}),
    limits: () => ({ ...DEFAULT_LIMITS, jobsRequestTimeoutMs: 1000 }),
  });
  try {
    const t = asNobody(['trickle', join(dir, 'jobs.sock'), '100', '8000']);
    const seen = await t.result;
    await done(t.child);
    // bytes every 100 ms: the old per-byte idle timeout never fired
    assert.ok((seen.cutAfterMs as number) < 4000, `cut after ${String(seen.cutAfterMs)} ms`);
    assert.equal(seen.answer, `${JSON.stringify({ ok: false, error: 'no whole request line within 1 s', code: 2 })}\n`);
    assert.equal(server.stats().timedOut, 1);
  } finally {
    server.close();
  }
});

test('a user with 100,000 jobs gets them a page at a time, and l9gpu jobs still shows them all', async () => {
  const dir = tempDir('l9gpu-jobs-100k-');
  chmodSync(dir, 0o755);
  const db = openStore(dir);
  const now = Date.now();
  const ins = db.prepare(
    `INSERT INTO jobs (job_id, run_key, cluster, user, uid, account, partition, name, ` +
      `start_time, end_time, state, exit_code, source, updated_at) VALUES (?, 'r0', 'c', ` +
      `'nobody', 65534, 'a', 'gpu', ?, ?, ?, 'COMPLETED', 0, 'prolog', ?)`,
  );
  // 100 pairs of jobs that start in the same ms: the pages must neither repeat nor skip one of a pair
  db.transaction(() => {
    for (let i = 0; i < 100_000; i++) ins.run(String(1_000_000 + i), `job-${i}`, now - Math.floor(i / 2) * 60_000, now, now);
  })();
  db.close();
  const cfg = join(dir, 'l9gpu.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${dir}\n`);
  const budgets = new BudgetLedger();
  const server = await startJobsServer({
    stateDir: dir,
    node: () => 'n',
    prices: () => null,
    adminGroup: () => null,
    log: createLogger('error', () => {}),
    budgets,
  });
  try {
    const first = await rawAs('nobody', join(dir, 'jobs.sock'), { ...LIST, limit: 0 });
    assert.equal((first.rows as unknown[]).length, DEFAULT_LIMITS.jobsRows, 'one page');
    assert.equal(first.next, DEFAULT_LIMITS.jobsRows);
    const all = await runAs('nobody', [CLI, 'jobs', '--limit', '0', '--csv', '--config', cfg]);
    assert.equal(all.status, 0, all.stderr);
    const ids = all.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',')[0]!);
    assert.equal(ids.length, 100_000);
    assert.equal(new Set(ids).size, 100_000, 'no job twice');
    // newest first
    assert.equal(ids[0], '1000001');
    assert.equal(ids.at(-1), '1099998');
    // --by name: 100,000 groups, paged too (the worker folds the jobs once for all the pages)
    const byName = await runAs('nobody', [CLI, 'jobs', '--by', 'name', '--limit', '0', '--csv', '--config', cfg]);
    assert.equal(byName.status, 0, byName.stderr);
    const names = byName.stdout.trim().split('\n').slice(1);
    assert.equal(new Set(names.map((l) => l.split(',')[0])).size, 100_000);
    // a list shorter than a page is one answer, as before
    const few = await runAs('nobody', [CLI, 'jobs', '--limit', '3', '--json', '--config', cfg]);
    assert.deepEqual(
      (JSON.parse(few.stdout) as { id: string }[]).map((j) => j.id),
      ['1000001', '1000000', '1000003'],
    );
  } finally {
    server.close();
  }
});
