/**
 * The nccl plugin against a hostile local user. The daemon is root and reads
 * folders that users write; here the user is the real `nobody` (files made
 * through runuser, or made by root and chown'ed to 65534 where only the owner
 * matters and there are thousands of them), and each case is one a user
 * reproduced against the default configuration:
 *
 * - H1: a followed log, and a .prom file, replaced by a FIFO (with and
 *   without a writer): the collection returns (it runs in a child process
 *   killed at a deadline, so a blocked open fails the test, not hangs it);
 * - H2/L15: 25,000 one-line logs: descriptors, budget hits and log lines bounded;
 * - H6: links (symbolic and hard) to a root-only file: none of its bytes read;
 * - H7: a log named after another user's process, a .prom file's and a
 *   folder's job id naming another job: nothing credited to them;
 * - L10: a 10 GB sparse log, NUL holes, and one user's backlog against
 *   another user's few lines;
 * - series_per_communicator; and folders of processes in another mount
 *   namespace (PrivateTmp, containers), read through /proc/<pid>/root and cwd.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { pluginContext } from '../../src/core/plugin.js';
import { ncclPlugin } from '../../plugins/nccl/index.js';
import { Locator } from '../../plugins/nccl/locate.js';
import type { CollectReport, CollectSpec } from '../helpers/nccl-collect.js';
import { configFrom } from '../helpers/config.js';
import { ROOT, tempDir } from '../helpers/paths.js';

const HELPER = join(ROOT, 'dist', 'test', 'helpers', 'nccl-collect.js');
const HOST = hostname();
const NOBODY = 65534;
const UUID = '5e2b9c71-0a3d-4f68-b1c4-7a90d3e2f615';
const PROM_TEXT = readFileSync(
  join(ROOT, 'plugins', 'nccl', 'testdata', 'v2.30.3-prom-interval', `nccl_inspector_metrics_${UUID}.prom`),
  'utf8',
);

const made: string[] = [];
// 25,000 files, 20,000 folders, 70 MB of logs: not left in /tmp
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A folder nobody can enter, for nobody's folders to be made in. */
function base(): string {
  const d = tempDir('l9gpu-nccl-hostile-');
  chmodSync(d, 0o755);
  made.push(d);
  return d;
}

function asNobody(script: string, env: Record<string, string> = {}): string {
  return execFileSync('runuser', ['-u', 'nobody', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'sh', '-c', script], {
    encoding: 'utf8',
  });
}

/** A folder made by nobody, in nobody's own corner of `parent` (as a home or a scratch folder is). */
function nobodyDir(parent: string, name: string): string {
  const home = join(parent, 'nobody');
  if (!existsSync(home)) {
    mkdirSync(home);
    chownSync(home, NOBODY, NOBODY);
  }
  const d = join(home, name);
  asNobody(`mkdir '${d}'`);
  return d;
}

/** One Inspector line (2.30.3) of an AllReduce on comm, as process pid wrote it. */
function line(pid: number, sn: number, o: { comm?: string; bytes?: number; rank?: number } = {}): string {
  const bytes = o.bytes ?? 1 << 26;
  const us = 300;
  const alg = bytes / 1e9 / (us / 1e6);
  return (
    `{"header":{"id":"${o.comm ?? '0x1f2e3d4c5b6a7988'}","comm_name":"c","rank":${o.rank ?? 0},"n_ranks":2,"nnodes":1},` +
    `"metadata":{"inspector_output_format_version":"v4.0","git_rev":"6da4220","rec_mechanism":"nccl_profiler_interface",` +
    `"dump_timestamp_us":${1_763_900_000_000_000 + sn},"hostname":"${HOST}","pid":${pid}},` +
    `"coll_perf":{"coll":"AllReduce","coll_sn":${sn},"coll_msg_size_bytes":${bytes},"coll_exec_time_us":${us},` +
    `"coll_timing_source":"kernel_gpu","coll_algobw_gbs":${alg.toFixed(6)},"coll_busbw_gbs":${alg.toFixed(6)}}}\n`
  );
}

function lines(pid: number, n: number, o: { comm?: string } = {}): string {
  let s = '';
  for (let i = 0; i < n; i++) s += line(pid, i, o);
  return s;
}

/** The collections in a child process, killed at the deadline: a collection that blocks fails here. */
function collect(spec: Omit<CollectSpec, 'options'> & { options: Partial<CollectSpec['options']> }, deadlineMs = 60_000): CollectReport {
  const full: CollectSpec = {
    ...spec,
    options: { paths: [], discover: false, maxFileAgeMs: 3_600_000, maxSeries: 20_000, window: 256, hostNames: [HOST], ...spec.options },
  };
  const r = spawnSync(process.execPath, [HELPER, JSON.stringify(full)], {
    timeout: deadlineMs,
    killSignal: 'SIGKILL',
    encoding: 'utf8',
    maxBuffer: 512 << 20,
  });
  if (r.error || r.signal)
    assert.fail(
      `the collections did not return within ${deadlineMs} ms (${r.error?.message ?? r.signal}): ` +
        `the daemon would be stuck; stderr: ${r.stderr.slice(-2000)}`,
    );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as CollectReport;
}

const ops = (r: CollectReport) => r.points.filter((p) => p.name === 'nccl.operations');
const total = (r: CollectReport) => ops(r).reduce((a, p) => a + p.value, 0);

/** A process of nobody's (or root's, in its own mount namespace) that lives until killed; its pid, once it runs. */
async function live(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ pid: number; child: ChildProcess }> {
  const child = spawn(cmd, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((res, rej) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /^(\d+)\n/.exec(out);
      if (m) res(Number(m[1]));
    });
    child.on('exit', (code) => rej(new Error(`${cmd} exited (${code}) before saying its pid: ${out}`)));
  });
  return { pid, child };
}

function end(p: { pid: number; child: ChildProcess }): void {
  try {
    process.kill(p.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  p.child.kill('SIGKILL');
}

test(
  'H1: a followed log and .prom files replaced by FIFOs (no writer; a writer holding one ' +
    'open): the collections return, each FIFO counted once as not_regular_file, the log read up ' +
    'to then',
  { timeout: 120_000 },
  async () => {
    const dir = nobodyDir(base(), 'nccl-inspector-1');
    const log = join(dir, `${HOST}-pid4000001.log`);
    writeFileSync(join(dir, 'seed'), lines(4000001, 3));
    asNobody(
      `cat '${join(dir, 'seed')}' > '${log}' && mkfifo '${join(dir, `nccl_inspector_metrics_${UUID}.prom`)}' ` +
        `&& mkfifo '${join(dir, 'held')}'`,
    );
    // a writer holding a FIFO open (read-write, so it does not wait for a reader), put in place of a second .prom
    const holder = await live('runuser', ['-u', 'nobody', '--', 'sh', '-c', `exec 3<>'${join(dir, 'held')}'; echo $$; exec sleep 600`]);
    try {
      const prom2 = join(dir, 'nccl_inspector_metrics_00000000-0000-4000-8000-000000000002.prom');
      asNobody(`mv '${join(dir, 'held')}' '${prom2}'`);
      const r = collect({
        options: { paths: [dir] },
        collections: 4,
        // the followed log becomes a FIFO between the first collection and the second
        between: [null, `runuser -u nobody -- sh -c "rm '${log}' && mkfifo '${log}'"`],
      });
      assert.equal(r.budgets.not_regular_file, 3, 'the log and the two .prom FIFOs, once each');
      assert.equal(total(r), 3, "the log's lines before it was replaced");
      assert.ok(r.log.filter((l) => /not_regular_file/.test(l)).length <= 2, r.log.join('\n'));
    } finally {
      end(holder);
    }
  },
);

test(
  'H2/L15: 25,000 one-line logs of one user: files_per_user followed, descriptors bounded, ' +
    'each file over the budget counted once, a few log lines in all',
  { timeout: 300_000 },
  () => {
    const dir = nobodyDir(base(), 'nccl-inspector-2');
    for (let pid = 1; pid <= 25_000; pid++) {
      const f = join(dir, `${HOST}-pid${pid}.log`);
      writeFileSync(f, 'not an inspector line\n');
      chownSync(f, NOBODY, NOBODY);
    }
    const r = collect({ options: { paths: [dir] }, collections: 3 }, 240_000);
    assert.equal(r.budgets.files_per_user, 25_000 - 64);
    assert.ok(r.fdsPeak - r.fdsBefore <= 64, `${r.fdsPeak - r.fdsBefore} descriptors held after a collection`);
    const rejected = r.points.find((p) => p.name === 'l9gpu.nccl.lines.rejected')!.value;
    assert.equal(rejected, 64, "the followed files' lines, once");
    // what the daemon would log: the plugin's own lines, and one runner line per distinct unreadable field
    assert.ok(
      r.log.length + r.unread <= 10,
      `${r.log.length} log lines and ${r.unread} unreadable fields:\n${r.log.slice(0, 20).join('\n')}`,
    );
  },
);

test(
  "L15: the node's files budget; a folder that keeps writing garbage gets " +
    'log_lines_per_minute lines a minute, the rest held back and counted',
  { timeout: 120_000 },
  () => {
    const b = base();
    const noisy = nobodyDir(b, 'nccl-inspector-15');
    const quiet = nobodyDir(b, 'nccl-inspector-16');
    const log = join(noisy, `${HOST}-pid4000050.log`);
    asNobody(`: > '${log}'`);
    for (let i = 0; i < 20; i++) writeFileSync(join(quiet, `${HOST}-pid${4100100 + i}.log`), '');
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, quiet]);
    const n = 25;
    const r = collect({
      // the noisy folder first: its log is among the 8 followed
      options: { paths: [noisy, quiet] },
      limits: { files: 8 },
      collections: n,
      between: Array.from({ length: n }, () => `runuser -u nobody -- sh -c "echo garbage >> '${log}'"`),
    });
    assert.equal(r.budgets.files, 21 - 8);
    assert.equal(r.points.find((p) => p.name === 'l9gpu.nccl.lines.rejected')!.value, n);
    const said = r.log.filter((l) => l.includes('inspector output not read')).length;
    // 10 a minute: the collections take seconds, so at most two minutes' worth even across a minute's turn
    assert.ok(said >= 10 && said <= 20, `${said} lines`);
    assert.equal(said + r.budgets.log_lines_per_minute!, n, "each collection's line said or counted as held back");
  },
);

test(
  "H2: one user's 20,000 folders in a globbed place do not crowd out another user's: files_per_user folders of each owner are looked at",
  { timeout: 180_000 },
  () => {
    const area = nobodyDir(base(), 'area');
    execFileSync('runuser', ['-u', 'nobody', '--', 'sh', '-c', `cd '${area}' && seq 1 20000 | sed 's/^/nccl-inspector-c/' | xargs mkdir`]);
    const victim = join(area, 'nccl-inspector-victim');
    mkdirSync(victim);
    const f = join(victim, `${HOST}-pid4000060.log`);
    writeFileSync(f, lines(4000060, 4, { comm: '0x60' }));
    execFileSync('chown', ['-R', '1:1', victim]);
    const r = collect({ options: { paths: [join(area, 'nccl-inspector-*')] }, collections: 2 });
    assert.equal(
      ops(r)
        .filter((p) => p.attributes['nccl.comm.id'] === '0x60')
        .reduce((a, p) => a + p.value, 0),
      4,
      "the other user's folder is read",
    );
    assert.equal(r.byUser[`files_per_user/${NOBODY}`], 20_000 - 64, 'each folder left out counted once');
  },
);

test('H6: symbolic and hard links to a root-only file: refused unread; not a byte of it in points or log', { timeout: 120_000 }, () => {
  const b = base();
  const secret = join(b, 'secret');
  const MARKER = 'ROOTONLYMARKER7f3a';
  writeFileSync(secret, `${MARKER} 1 2 3 {\n${MARKER}-second-line\n`, { mode: 0o600 });
  const dir = nobodyDir(b, 'nccl-inspector-6');
  asNobody(
    `ln -s '${secret}' '${join(dir, `nccl_inspector_metrics_${UUID}.prom`)}' && ln -s '${secret}' '${join(dir, `${HOST}-pid4000002.log`)}'`,
  );
  // a hard link: fs.protected_hardlinks stops nobody making one here, so root makes it (a node without the
  // sysctl lets the user); either way a root file with two names in a user's folder
  linkSync(secret, join(dir, 'nccl_inspector_metrics_00000000-0000-4000-8000-000000000006.prom'));
  linkSync(secret, join(dir, `${HOST}-pid4000003.log`));
  const r = collect({ options: { paths: [dir] }, collections: 3 });
  assert.doesNotMatch(r.allPoints, new RegExp(MARKER));
  assert.doesNotMatch(r.log.join('\n'), new RegExp(MARKER));
  assert.equal(r.budgets.not_regular_file, 2);
  assert.equal(r.budgets.not_owner, 2);
});

test(
  "H6: a user's process naming a root folder as its dump folder (NCCL_INSPECTOR_DUMP_DIR=/root-ish): root's files there are not read",
  { timeout: 60_000 },
  async () => {
    const b = base();
    const rootDir = join(b, 'root-only');
    mkdirSync(rootDir, { mode: 0o700 });
    const MARKER = 'ROOTDIRMARKER91c2';
    writeFileSync(join(rootDir, `${HOST}-pid1.log`), `${MARKER} not a record\n`, { mode: 0o600 });
    const p = await live('runuser', [
      '-u',
      'nobody',
      '--',
      'env',
      'NCCL_INSPECTOR_ENABLE=1',
      `NCCL_INSPECTOR_DUMP_DIR=${rootDir}`,
      'sh',
      '-c',
      'echo $$; exec sleep 600',
    ]);
    try {
      const r = collect({ options: { paths: [], discover: true }, collections: 2 });
      assert.doesNotMatch(r.allPoints + r.log.join('\n'), new RegExp(MARKER));
      // discovery sees every process on the machine: this test's own hit is root's file
      assert.equal(r.byUser['not_owner/0'], 1);
    } finally {
      end(p);
    }
  },
);

test(
  "H7: a log named after another user's process, a .prom file and a folder naming another " +
    "job: read, credited to neither; a log of the owner's own process keeps its pid",
  { timeout: 120_000 },
  async () => {
    const b = base();
    const dir = nobodyDir(b, 'nccl-inspector-999999');
    const prom = PROM_TEXT.replaceAll('node="node01"', `node="${HOST}"`).replaceAll('slurm_job_id="48213"', 'slurm_job_id="999999"');
    writeFileSync(join(b, 'seed.prom'), prom);
    writeFileSync(join(b, 'seed.log'), lines(1, 3));
    // pid 1: root's init, alive
    asNobody(
      `cp '${join(b, 'seed.prom')}' '${join(dir, `nccl_inspector_metrics_${UUID}.prom`)}' && cp '${join(b, 'seed.log')}' ` +
        `'${join(dir, `${HOST}-pid1.log`)}'`,
    );
    const mine = await live('runuser', ['-u', 'nobody', '--', 'sh', '-c', 'echo $$; exec sleep 600']);
    try {
      writeFileSync(join(b, 'mine.log'), lines(mine.pid, 2, { comm: '0x77' }));
      asNobody(`cp '${join(b, 'mine.log')}' '${join(dir, `${HOST}-pid${mine.pid}.log`)}'`);
      // 2 collections: a .prom file is read once it has stayed the same for a poll
      const r = collect({ options: { paths: [dir] }, collections: 2 });
      const all = r.points;
      assert.ok(
        all.some((p) => p.name === 'nccl.interval.bandwidth.bus'),
        'the .prom file is read',
      );
      assert.equal(all.filter((p) => p.attributes['nccl.job.id'] === '999999').length, 0, 'no series credited to job 999999');
      assert.equal(all.filter((p) => p.attributes['process.pid'] === 1).length, 0, 'no series credited to pid 1');
      assert.equal(total(r), 5, 'both logs read');
      assert.ok(
        ops(r).some((p) => p.attributes['process.pid'] === mine.pid),
        "the owner's own process keeps its pid",
      );
      assert.equal(r.budgets.not_owner, 1);
    } finally {
      end(mine);
    }
  },
);

test(
  "H7: a discovered folder: its job is its process's (a process of the files' owner), never the folder's name or a .prom file's label",
  { timeout: 120_000 },
  async () => {
    const b = base();
    const dir = nobodyDir(b, 'nccl-inspector-999998');
    writeFileSync(
      join(b, 'seed.prom'),
      PROM_TEXT.replaceAll('node="node01"', `node="${HOST}"`).replaceAll('slurm_job_id="48213"', 'slurm_job_id="999998"'),
    );
    // a GPU of its own: discovery finds every Inspector process on the machine, this test's points are this GPU's
    const uuid = randomUUID();
    asNobody(`cp '${join(b, 'seed.prom')}' '${join(dir, `nccl_inspector_metrics_${uuid}.prom`)}'`);
    const p = await live('runuser', [
      '-u',
      'nobody',
      '--',
      'env',
      'NCCL_INSPECTOR_ENABLE=1',
      'SLURM_JOB_ID=4321',
      `NCCL_INSPECTOR_DUMP_DIR=${dir}`,
      'sh',
      '-c',
      'echo $$; exec sleep 600',
    ]);
    try {
      const r = collect({ options: { paths: [], discover: true }, collections: 2 });
      const pts = r.points.filter((x) => x.name === 'nccl.interval.bandwidth.bus' && x.attributes['gpu.uuid'] === `GPU-${uuid}`);
      assert.ok(pts.length > 0, 'the discovered folder is read');
      assert.deepEqual([...new Set(pts.map((x) => x.attributes['nccl.job.id']))], ['4321']);
    } finally {
      end(p);
    }
  },
);

test(
  "H7: a user's files in a shared root folder named for a job (sticky, like /tmp): read, not credited to that job, which is root's",
  { timeout: 60_000 },
  () => {
    const b = base();
    const dir = join(b, 'nccl-inspector-999997');
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    writeFileSync(join(b, 'seed.prom'), PROM_TEXT.replaceAll('node="node01"', `node="${HOST}"`));
    writeFileSync(join(b, 'seed.log'), lines(4000040, 2));
    asNobody(
      `cp '${join(b, 'seed.prom')}' '${join(dir, `nccl_inspector_metrics_${UUID}.prom`)}' && cp '${join(b, 'seed.log')}' ` +
        `'${join(dir, `${HOST}-pid4000040.log`)}'`,
    );
    // root's own log there is the folder's job's, as before
    writeFileSync(join(dir, `${HOST}-pid4000041.log`), lines(4000041, 3, { comm: '0x41' }));
    const r = collect({ options: { paths: [dir] }, collections: 2 });
    assert.ok(
      r.points.some((p) => p.name === 'nccl.interval.bandwidth.bus'),
      'the .prom file is read',
    );
    assert.equal(total(r), 5);
    const jobs = (pred: (p: CollectReport['points'][number]) => boolean) =>
      new Set(r.points.filter(pred).map((p) => p.attributes['nccl.job.id']));
    assert.deepEqual([...jobs((p) => p.attributes['nccl.comm.id'] === '0x41')], ['999997']);
    assert.deepEqual([...jobs((p) => p.attributes['nccl.comm.id'] !== '0x41' && p.name !== 'l9gpu.nccl.lines.rejected')], [undefined]);
  },
);

test(
  'L10: a 10 GB sparse log that keeps growing is skipped to its end (counted) and followed from there; a NUL hole is no line',
  { timeout: 120_000 },
  () => {
    const dir = nobodyDir(base(), 'nccl-inspector-10');
    const big = join(dir, `${HOST}-pid4000010.log`);
    const holed = join(dir, `${HOST}-pid4000011.log`);
    writeFileSync(join(dir, '..', 'one'), line(4000010, 1));
    asNobody(
      `truncate -s 10G '${big}' && cat '${join(dir, '..', 'one')}' >> '${big}' && truncate -s ` +
        `100K '${holed}' && cat '${join(dir, '..', 'one')}' >> '${holed}'`,
    );
    const r = collect({
      options: { paths: [dir] },
      collections: 3,
      between: [null, `runuser -u nobody -- sh -c "cat '${join(dir, '..', 'one')}' >> '${big}'"`],
    });
    assert.equal(r.budgets.read_bytes, 1, 'the 10 GB backlog, once');
    assert.equal(total(r), 2, "the holed file's line and the line appended after the skip");
    assert.equal(r.points.find((p) => p.name === 'l9gpu.nccl.lines.rejected')!.value, 0, 'the hole is no line');
  },
);

test(
  "L10: one user's backlog does not keep another user's lines waiting: each gets its share of read_bytes first",
  { timeout: 180_000 },
  () => {
    const b = base();
    const heavy = nobodyDir(b, 'a-heavy');
    // 140 logs of 520 KB each: more than the whole default read budget, a chunk at a time
    const text = lines(4000020, 1200);
    for (let i = 0; i < 140; i++) {
      const f = join(heavy, `${HOST}-pid${4100000 + i}.log`);
      writeFileSync(f, text);
      chownSync(f, NOBODY, NOBODY);
    }
    const light = join(b, 'b-light');
    mkdirSync(light);
    chownSync(light, 1, 1);
    const f = join(light, `${HOST}-pid4200000.log`);
    writeFileSync(f, lines(4200000, 10, { comm: '0x42' }));
    chownSync(f, 1, 1);
    const r = collect({ options: { paths: [heavy, light] }, collections: 1, limits: { readBytes: 4 << 20, filesPerUser: 200 } });
    const lightOps = ops(r)
      .filter((p) => p.attributes['nccl.comm.id'] === '0x42')
      .reduce((a, p) => a + p.value, 0);
    assert.equal(lightOps, 10, "the light user's lines in the first collection");
  },
);

test("series_per_communicator: one communicator's flood of sizes stops at the bound, counted", { timeout: 60_000 }, () => {
  const dir = nobodyDir(base(), 'nccl-inspector-11');
  let s = '';
  for (let i = 0; i < 40; i++) s += line(4000030, i, { bytes: 2 ** (10 + i) });
  writeFileSync(join(dir, '..', 'seed'), s);
  asNobody(`cp '${join(dir, '..', 'seed')}' '${join(dir, `${HOST}-pid4000030.log`)}'`);
  const r = collect({ options: { paths: [dir] }, collections: 1, limits: { seriesPerCommunicator: 10 } });
  assert.equal(ops(r).length, 10);
  assert.equal(r.budgets.series_per_communicator, 30);
});

test(
  "another mount namespace (PrivateTmp, a container): a discovered process's folder in its " +
    'own /tmp is read through /proc/<pid>/root and /proc/<pid>/cwd',
  { timeout: 120_000 },
  async () => {
    const seed = join(base(), 'seed');
    writeFileSync(seed, lines(4242, 2));
    // a private /tmp in a mount namespace of its own, as systemd's PrivateTmp or a container gives a job
    const inNs = (dumpDir: string, cd: string) =>
      live('unshare', [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        `L=$(cat '${seed}') && mount -t tmpfs none /tmp && mkdir -p /tmp/nccl-inspector-77 && ` +
          `printf '%s\\n' "$L" > /tmp/nccl-inspector-77/${HOST}-pid$$.log && cd ${cd} && echo $$ && ` +
          `exec env NCCL_INSPECTOR_ENABLE=1 SLURM_JOB_ID=77 NCCL_INSPECTOR_DUMP_DIR=${dumpDir} sleep ` +
          `600`,
      ]);
    const abs = await inNs('/tmp/nccl-inspector-77', '/');
    try {
      const rel = await inNs('nccl-inspector-77', '/tmp');
      try {
        const r = collect({ options: { paths: [], discover: true }, collections: 1 });
        const mine = ops(r).filter((p) => p.attributes['process.pid'] === abs.pid || p.attributes['process.pid'] === rel.pid);
        assert.equal(
          mine.reduce((a, p) => a + p.value, 0),
          4,
          "both processes' logs, 2 lines each",
        );
        assert.ok(mine.every((p) => p.attributes['nccl.job.id'] === '77'));
      } finally {
        end(rel);
      }
    } finally {
      end(abs);
    }
  },
);

test(
  'another mount namespace that sees the same folder (a bind mount): read by the plain path, ' +
    "so a dump at the process's exit is still read after it has gone",
  { timeout: 120_000 },
  async () => {
    const dir = join(base(), 'nccl-inspector-78');
    mkdirSync(dir);
    const p = await live('unshare', [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      `cd '${dir}/..' && echo $$ && exec env NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=nccl-inspector-78 sleep 600`,
    ]);
    try {
      const log = join(dir, `${HOST}-pid${p.pid}.log`);
      writeFileSync(join(dir, '..', 'seed'), lines(p.pid, 3));
      const r = collect({
        options: { paths: [], discover: true },
        collections: 2,
        // the process ends, and its log is written as it exits (the Inspector's dump at teardown): the folder is
        // listed after the process has gone
        between: [null, `kill -9 ${p.pid}; cp '${join(dir, '..', 'seed')}' '${log}'`],
      });
      assert.equal(total(r), 3);
    } finally {
      end(p);
    }
  },
);

test('doctor: a discovered folder that cannot be reached (a link) is said, with why', { timeout: 60_000 }, async () => {
  const b = base();
  const target = join(b, 'elsewhere');
  mkdirSync(target);
  const link = join(nobodyDir(b, 'area'), 'nccl-inspector-5');
  asNobody(`ln -s '${target}' '${link}'`);
  const p = await live('runuser', [
    '-u',
    'nobody',
    '--',
    'env',
    'NCCL_INSPECTOR_ENABLE=1',
    `NCCL_INSPECTOR_DUMP_DIR=${link}`,
    'sh',
    '-c',
    'echo $$; exec sleep 600',
  ]);
  try {
    const ctx = pluginContext(
      configFrom({ nccl: { paths: join(b, 'none-*'), discover: 'true' } }),
      createLogger('error', () => {}),
    );
    const r = await ncclPlugin.probe(ctx);
    assert.equal(r.ok, true, "a user's link is said, it does not make doctor fail");
    assert.match(r.detail, new RegExp(`discovered folder\\(s\\) cannot be reached: ${link} \\(not_regular_file: a symbolic link\\)`));
  } finally {
    end(p);
  }
});

test(
  'a .prom file of 20,000 interval samples: at most series_per_communicator of them kept as points, the rest counted against its owner',
  { timeout: 120_000 },
  () => {
    const b = base();
    const dir = nobodyDir(b, 'nccl-inspector-prom-flood');
    let text = '';
    for (let i = 0; i < 10_000; i++) {
      const l =
        `{version="v5.1",node="${HOST}",comm_name="c${i}",n_nodes="1",nranks="8",` +
        `collective="AllReduce",message_size="64-65MB",algo_proto="RING_SIMPLE"}`;
      text += `nccl_bus_bandwidth_gbs${l} 1\nnccl_collective_exec_time_microseconds${l} 2\n`;
    }
    writeFileSync(join(b, 'seed.prom'), text);
    asNobody(`cp '${join(b, 'seed.prom')}' '${join(dir, `nccl_inspector_metrics_${UUID}.prom`)}'`);
    // 2 collections: a .prom file is read once it has stayed the same for a poll
    const r = collect({ options: { paths: [dir] }, limits: { seriesPerCommunicator: 50 }, collections: 2 });
    const pts = r.points.filter((p) => p.name.startsWith('nccl.interval.'));
    assert.ok(pts.length > 0 && pts.length <= 50, `${pts.length} interval points`);
    assert.ok((r.byUser[`series_per_communicator/${NOBODY}`] ?? 0) >= 19_000, JSON.stringify(r.byUser));
  },
);

/** A user's shell that starts `n` Inspector processes (sleep) each naming a folder of its own under `prefix`; ends when they all have. */
async function swarm(user: string, n: number, prefix: string): Promise<{ pids: number[]; done: Promise<void> }> {
  const child = spawn(
    'runuser',
    [
      '-u',
      user,
      '--',
      'sh',
      '-c',
      `i=0; while [ $i -lt ${n} ]; do i=$((i+1)); NCCL_INSPECTOR_ENABLE=1 ` +
        `NCCL_INSPECTOR_DUMP_DIR=${prefix}/$i sleep 600 & echo $!; done; echo started; wait`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const done = new Promise<void>((res) => child.on('exit', () => res()));
  const pids = await new Promise<number[]>((res, rej) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('started\n'))
        res(
          out
            .split('\n')
            .filter((l) => /^\d+$/.test(l))
            .map(Number),
        );
    });
    child.on('exit', (code) => rej(new Error(`the swarm exited (${code}) before starting: ${out}`)));
  });
  return { pids, done };
}

test(
  "discovery: one user's 40 processes naming made-up folders take at most files_per_user " +
    "places (counted), not another user's job; once they end, their never-made folders are " +
    'forgotten',
  { timeout: 120_000 },
  async () => {
    const b = base();
    const victimDir = join(b, 'daemon-job');
    mkdirSync(victimDir);
    chownSync(victimDir, 1, 1);
    const prefix = `/nonexistent-l9gpu-${randomUUID()}`;
    const flood = await swarm('nobody', 40, prefix);
    const victim = await live('runuser', [
      '-u',
      'daemon',
      '--',
      'env',
      'NCCL_INSPECTOR_ENABLE=1',
      `NCCL_INSPECTOR_DUMP_DIR=${victimDir}`,
      'sh',
      '-c',
      'echo $$; exec sleep 600',
    ]);
    const log = join(victimDir, `${HOST}-pid${victim.pid}.log`);
    writeFileSync(log, line(victim.pid, 1));
    chownSync(log, 1, 1);
    const crowded: [string, number][] = [];
    try {
      const loc = new Locator({
        paths: [],
        discover: true,
        hostNames: [HOST],
        maxDirs: 16,
        dirsPerUser: 4,
        onCrowded: (p, uid) => crowded.push([p, uid]),
      });
      const t0 = Date.now();
      const files = loc.files(t0);
      assert.ok(
        files.some((f) => f.path === log),
        "the other user's job is read",
      );
      const floods = loc.unreached.filter((u) => u.path.startsWith(prefix));
      assert.equal(floods.length, 4, 'files_per_user folders of the flooding uid');
      assert.ok(crowded.filter(([p, uid]) => uid === NOBODY && p.startsWith(prefix)).length >= 36, `${crowded.length} crowded`);
      for (const pid of flood.pids) process.kill(pid, 'SIGKILL');
      await flood.done;
      loc.files(t0 + 20_000);
      assert.deepEqual(
        loc.unreached.filter((u) => u.path.startsWith(prefix)),
        [],
        "ended processes' never-made folders are not kept",
      );
      assert.ok(
        loc.files(t0 + 40_000).some((f) => f.path === log),
        "the living job's folder stays",
      );
    } finally {
      for (const pid of flood.pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already ended
        }
      }
      end(victim);
    }
  },
);

test(
  "discovery: another user's process naming a user's folder (a higher pid) does not stop the " +
    "owner's files being read, nor take the owner's job",
  { timeout: 120_000 },
  async () => {
    const b = base();
    const dir = nobodyDir(b, 'nccl-inspector-77');
    const alice = await live('runuser', [
      '-u',
      'nobody',
      '--',
      'env',
      'NCCL_INSPECTOR_ENABLE=1',
      'SLURM_JOB_ID=4444',
      `NCCL_INSPECTOR_DUMP_DIR=${dir}`,
      'sh',
      '-c',
      'echo $$; exec sleep 600',
    ]);
    const mallory = await live('runuser', [
      '-u',
      'daemon',
      '--',
      'env',
      'NCCL_INSPECTOR_ENABLE=1',
      'SLURM_JOB_ID=5555',
      `NCCL_INSPECTOR_DUMP_DIR=${dir}`,
      'sh',
      '-c',
      'echo $$; exec sleep 600',
    ]);
    try {
      assert.ok(mallory.pid > alice.pid, "the other user's process comes later, as in the report");
      const comm = `0x${randomUUID().replaceAll('-', '').slice(0, 16)}`;
      writeFileSync(join(b, 'seed.log'), lines(alice.pid, 3, { comm }));
      asNobody(`cp '${join(b, 'seed.log')}' '${join(dir, `${HOST}-pid${alice.pid}.log`)}'`);
      const r = collect({ options: { paths: [], discover: true }, collections: 1 });
      const mine = ops(r).filter((p) => p.attributes['nccl.comm.id'] === comm);
      assert.equal(
        mine.reduce((a, p) => a + p.value, 0),
        3,
        "the owner's log is read",
      );
      assert.equal(r.byUser[`not_owner/${NOBODY}`], undefined, JSON.stringify(r.byUser));
      assert.deepEqual([...new Set(mine.map((p) => p.attributes['nccl.job.id']))], ['4444']);
    } finally {
      end(mallory);
      end(alice);
    }
  },
);

test(
  "nccl_series_per_user: one user's communicators (ids the file picks) stop at the user's " +
    'bound, counted against that user, leaving max_series to the others; max_series hits are ' +
    'counted too',
  { timeout: 60_000 },
  () => {
    const b = base();
    const dir = nobodyDir(b, 'nccl-inspector-comms');
    let s = '';
    for (let i = 0; i < 40; i++) s += line(4000050, i, { comm: `0x${(0x5000 + i).toString(16)}` });
    writeFileSync(join(b, 'seed'), s);
    asNobody(`cp '${join(b, 'seed')}' '${join(dir, `${HOST}-pid4000050.log`)}'`);
    const rootDir = join(b, 'root-job');
    mkdirSync(rootDir);
    writeFileSync(join(rootDir, `${HOST}-pid4000051.log`), lines(4000051, 5, { comm: '0x51' }));
    const r = collect({ options: { paths: [dir, rootDir], maxSeries: 20 }, collections: 1, limits: { ncclSeriesPerUser: 10 } });
    assert.equal(ops(r).filter((p) => p.attributes['process.owner'] !== undefined).length, 10, "the user's series");
    assert.equal(ops(r).filter((p) => p.attributes['nccl.comm.id'] === '0x51').length, 1, "root's series, within max_series");
    assert.equal(r.byUser[`nccl_series_per_user/${NOBODY}`], 30);
    assert.equal(r.byUser['nccl_max_series/0'], undefined);

    // root's files are held to max_series alone: past it each new series is counted, with whose file it was
    const full = join(b, 'root-full');
    mkdirSync(full);
    let t = '';
    for (let i = 0; i < 30; i++) t += line(4000052, i, { comm: `0x${(0x6000 + i).toString(16)}` });
    writeFileSync(join(full, `${HOST}-pid4000052.log`), t);
    const r2 = collect({ options: { paths: [full], maxSeries: 20 }, collections: 1, limits: { ncclSeriesPerUser: 10 } });
    assert.equal(ops(r2).length, 20);
    assert.equal(r2.byUser['nccl_max_series/0'], 10);
  },
);

test(
  'a folder of 2,000 empty logs: only 4 x files_per_user of its names are made files (the ' +
    'rest counted), and a name waiting for a place is not lstat()ed again while its folder is ' +
    'unchanged',
  { timeout: 120_000 },
  () => {
    const b = base();
    const dir = nobodyDir(b, 'nccl-inspector-names');
    asNobody(`cd '${dir}' && i=0; while [ $i -lt 2000 ]; do i=$((i+1)); : > '${HOST}-pid'$((5000000+i)).log; done`);
    const full: [number, number][] = [];
    const loc = new Locator({
      paths: [dir],
      discover: false,
      hostNames: [HOST],
      filesPerDir: { user: 16, root: 64 },
      onFolderFull: (_p, uid, left) => full.push([uid, left]),
    });
    assert.equal(loc.files(Date.now()).length, 16);
    assert.deepEqual(full, [[NOBODY, 1984]]);
    const r = collect({ options: { paths: [dir] }, collections: 1, limits: { filesPerUser: 4 } });
    assert.equal(r.byUser[`files_per_user/${NOBODY}`], 1984 + 12, 'the names past 16 once, and the 12 looked at past 4');

    // one log followed, then a second one waiting; the waiting one made a link with the folder's time put back: not
    // looked at again (an lstat each collection for each waiting name), until the folder's time moves
    const waiting = (moved: boolean) => {
      const two = nobodyDir(b, `nccl-inspector-waiting-${moved}`);
      const second = join(two, `${HOST}-pid4000061.log`);
      const ref = join(b, `ref-${moved}`);
      asNobody(`echo > '${join(two, `${HOST}-pid4000060.log`)}'`);
      const between = [
        null,
        `runuser -u nobody -- sh -c "echo > '${second}'"`,
        `touch -r '${two}' '${ref}' && rm '${second}' && ln -s /etc/hostname '${second}' && touch -r '${ref}' '${two}'`,
      ];
      const w = collect({
        options: { paths: [two] },
        limits: { filesPerUser: 1 },
        collections: moved ? 4 : 3,
        between: moved ? [...between, `touch '${two}'`] : between,
      });
      assert.equal(w.byUser[`files_per_user/${NOBODY}`], 1, 'the second log waits');
      return (w.byUser['not_regular_file/0'] ?? 0) + (w.byUser[`not_regular_file/${NOBODY}`] ?? 0);
    };
    assert.equal(waiting(false), 0, 'the folder unchanged: the waiting name is not looked at');
    assert.equal(waiting(true), 1, 'the folder changed: it is, and the link is refused');
  },
);

test(
  '30 folders of one user, each with a link for a log: at most log_lines_per_minute lines ' +
    'about them a minute, the rest counted against that user',
  { timeout: 60_000 },
  () => {
    const b = base();
    const home = join(b, 'nobody');
    mkdirSync(home);
    chownSync(home, NOBODY, NOBODY);
    asNobody(
      `cd '${home}' && i=0; while [ $i -lt 30 ]; do i=$((i+1)); mkdir d$i && ln -s /etc/hostname d$i/${HOST}-pid$((4100000+i)).log; done`,
    );
    const r = collect({ options: { paths: [join(home, 'd*')] }, collections: 1, limits: { logLinesPerMinute: 5 } });
    assert.equal(r.byUser[`not_regular_file/${NOBODY}`], 30);
    assert.equal(r.log.filter((l) => l.includes('files in a folder not read')).length, 5);
    assert.equal(r.byUser[`log_lines_per_minute/${NOBODY}`], 25);
  },
);
