/**
 * The reconciler's bounds, with squeue, sacct and scontrol stand-ins in
 * [slurm] bin_dir that print recorded Slurm 22.05 output and count their
 * calls (the real-Slurm suites cover the rest): end states are backfilled
 * with a bounded number of calls, and a job Slurm answered for is not asked
 * about again.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { Reconciler, type ReconcileSource } from '../../slurm/reconciler.js';
import { simUuid } from '../../plugins/sim/index.js';
import { parseLines, runCli } from '../helpers/daemon.js';
import { ROOT, tempDir } from '../helpers/paths.js';

const TD = join(ROOT, 'slurm', 'testdata');

function fakeSlurm(opts: { sacct: 'disabled' | 'recorded'; steps?: 'none' | 'job 1'; job1?: (record: string) => string }): {
  bin: string;
  calls: (tool: string) => string[];
} {
  const d = tempDir('l9gpu-fake-slurm-');
  const bin = join(d, 'bin');
  mkdirSync(bin);
  const tool = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\necho "$*" >> '${d}/${name}.calls'\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  // recorded on a 22.05 node named vm: no job runs on the node these tests reconcile
  // squeue's ids (--format=%A): the one job asked for (--jobs), else job 1
  tool(
    'squeue',
    [
      `case " $* " in *" --format=%A "*) for a; do last=$a; done; case " $* " in *" --jobs "*) ` +
        `echo "$last" ;; *) echo 1 ;; esac; exit 0 ;; esac`,
      `cat '${join(TD, 'squeue-22.05-v0.0.38.json')}'`,
    ].join('\n'),
  );
  tool(
    'sacct',
    opts.sacct === 'disabled'
      ? `echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1`
      : `tail -n +2 '${join(TD, 'sacct-22.05.psv')}'`,
  );
  // 22.05's scontrol: no listjobs; listpids prints the recorded steps (job 1) or else the recorded "no steps"
  // answer; `show node -o NAME` answers for the one node this stand-in cluster has; job 1 is the recorded record
  // of a job running here when its step runs, and any other id gets that record as a finished job of its id
  // without -d, as slurmctld, no GRES detail lines
  tool(
    'scontrol',
    [
      `[ "$1" = --local ] && shift`,
      `detail() { case " $* " in *" -d "*) cat ;; *) grep -v -E '^[[:space:]]*(JOB_GRES|Nodes)=' ;; esac; }`,
      `[ "$1" = --json ] && { echo "scontrol: unrecognized option '--json'" >&2; echo 'Try ` +
        `"scontrol --help" for more information' >&2; exit 1; }`,
      `[ "$1" = listjobs ] && { echo 'invalid keyword: listjobs' >&2; exit 1; }`,
      opts.steps === 'job 1'
        ? `[ "$1" = listpids ] && { cat '${join(TD, 'scontrol-listpids-22.05.txt')}'; exit 0; }`
        : `[ "$1" = listpids ] && { echo 'No job steps exist on this node.' >&2; exit 1; }`,
      `if [ "$1 $2" = "show node" ]; then [ "$4" = gpunode9 ] && { echo 'NodeName=gpunode9 ` +
        `Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=16 State=IDLE'; exit 0; }; echo "Node $4 ` +
        `not found"; exit 1; fi`,
      ...(opts.steps === 'job 1'
        ? [`[ "$*" = "show job 1" -o "$*" = "show job -d 1" ] && { detail "$@" < '${job1Record(d, opts.job1)}'; exit 0; }`]
        : []),
      `for a; do last=$a; done; sed -e 's/JobState=RUNNING/JobState=COMPLETED/' -e "s/^JobId=1 ` +
        `/JobId=$last /" '${join(TD, 'scontrol-show-job-d-22.05.txt')}' | awk 'NR == 1, /^$/' | ` +
        `detail "$@"`,
    ].join('\n'),
  );
  const calls = (t: string) => {
    try {
      return readFileSync(join(d, `${t}.calls`), 'utf8')
        .trim()
        .split('\n');
    } catch {
      return [];
    }
  };
  return { bin, calls };
}

/** Job 1's recorded record as running on gpunode9 (its first record: up to the blank line), as edit makes it. */
function job1Record(d: string, edit: (record: string) => string = (r) => r): string {
  const recorded = readFileSync(join(TD, 'scontrol-show-job-d-22.05.txt'), 'utf8');
  const first = recorded
    .slice(0, recorded.indexOf('\n\n') + 1)
    .replace(/=vm$/gm, '=gpunode9')
    .replace(/Nodes=vm /g, 'Nodes=gpunode9 ');
  writeFileSync(join(d, 'job1.txt'), `${edit(first)}\n`);
  return join(d, 'job1.txt');
}

function reconciler(bin: string, source: ReconcileSource = 'local') {
  const db = openStore(tempDir());
  const r = new Reconciler({
    db,
    node: () => ({ name: 'gpunode9', guessed: false }),
    gresConf: '/nonexistent/gres.conf',
    binDir: bin,
    slurmConf: null,
    commandTimeoutMs: 5000,
    source,
    log: createLogger('error', () => {}),
  });
  return { db, r };
}

/** The single-job queries of a stand-in Slurm (RPCs to slurmctld), not the node-local listings. */
const showJob = (slurm: ReturnType<typeof fakeSlurm>) => slurm.calls('scontrol').filter((c) => /^(--local )?show job/.test(c));

test('without accounting, end states come from scontrol, at most 10 calls a reconcile, each job asked once', async () => {
  const slurm = fakeSlurm({ sacct: 'disabled' });
  const { db, r } = reconciler(slurm.bin);
  const now = Date.now();
  for (let i = 0; i < 25; i++) {
    recordStart(db, { jobId: String(5000 + i), runKey: 'r0' }, [], 'prolog', now - 120_000);
    recordEnd(db, { jobId: String(5000 + i), runKey: 'r0' }, { endTime: now - 60_000 }, [], 'epilog', now - 60_000);
  }
  const perTick: number[] = [];
  for (let t = 0; t < 4; t++) {
    const before = showJob(slurm).length;
    await r.reconcileOnce(now + t * 1000);
    perTick.push(showJob(slurm).length - before);
  }
  assert.deepEqual(perTick, [10, 10, 5, 0]);
  assert.equal(slurm.calls('sacct').length, 1, 'sacct said no once: not asked again for 10 minutes');
  assert.equal(new Set(showJob(slurm)).size, 25, 'each job asked once');
  assert.equal((db.prepare(`SELECT COUNT(*) AS n FROM jobs WHERE state = 'COMPLETED'`).get() as { n: number }).n, 25);
  db.close();
});

test('with accounting, one sacct call a reconcile; a FAILED job sacct confirmed is not asked about again', async () => {
  const slurm = fakeSlurm({ sacct: 'recorded' });
  const { db, r } = reconciler(slurm.bin);
  const now = Date.now();
  // job 4 failed (exit code 3: the epilog records FAILED); sacct-22.05.psv has it FAILED 3:0
  recordStart(db, { jobId: '4', runKey: 'r0' }, [], 'prolog', now - 120_000);
  recordEnd(
    db,
    { jobId: '4', runKey: 'r0' },
    { endTime: now - 60_000, exitCode: 3, exitSignal: 0, state: 'FAILED' },
    [],
    'epilog',
    now - 60_000,
  );
  await r.reconcileOnce(now);
  await r.reconcileOnce(now + 1000);
  await r.reconcileOnce(now + 2000);
  assert.deepEqual(
    slurm.calls('sacct').map((c) => c.split(' -j ')[1]),
    ['4'],
    'asked once: FAILED from sacct is final',
  );
  assert.equal(showJob(slurm).length, 0);
  db.close();
});

test('[slurm] bin_dir wins over PATH', async () => {
  const slurm = fakeSlurm({ sacct: 'disabled' });
  const { db, r } = reconciler(slurm.bin);
  await r.reconcileOnce();
  assert.deepEqual(
    slurm.calls('scontrol'),
    ['listjobs gpunode9', 'listpids * gpunode9'],
    `the scontrol in bin_dir, not ${process.env.PATH}'s; listpids after 22.05 said it has no listjobs`,
  );
  db.close();
});

test('after a restart the first batch is reconciled first: a job that died with the node gets no sample', async () => {
  const slurm = fakeSlurm({ sacct: 'disabled' });
  const d = tempDir('l9gpu-restart-');
  const state = join(d, 'state');
  const db = openStore(state);
  // the node went down with job 4100 on sim GPU 0: its binding is still open in the store
  recordStart(
    db,
    { jobId: '4100', runKey: 'r0', user: 'alice' },
    [{ uuid: simUuid('testhost', 0), shared: false }],
    'prolog',
    Date.now() - 3_600_000,
  );
  db.close();
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=ci\n');
  writeFileSync(
    join(d, 'l9gpu.ini'),
    `[daemon]\nhost_name = testhost\nstate_dir = ${state}\nattribution = ` +
      `slurm\n[slurm]\nslurm_conf = ${join(d, 'slurm.conf')}\nnode_name = gpunode9\nbin_dir = ${slurm.bin}\n[sim]\ngpus ` +
      `= 2\n`,
  );
  const r = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'stdout', '--config', join(d, 'l9gpu.ini')]);
  assert.equal(r.status, 0, r.stderr);
  const pts = parseLines(r.stdout).filter((p) => p.name === 'gpu.utilization');
  assert.equal(pts.length, 2);
  assert.ok(
    pts.every((p) => !('slurm.job.id' in p.attributes)),
    JSON.stringify(pts.map((p) => p.attributes)),
  );
  assert.match(r.stderr, /closed the bindings of a job whose epilog did not run job=4100/);
});

test(
  'local source: a job no step shows is asked about alone, at most 10 a reconcile, each once; ' +
    'a job its steps show is not asked again before job_recheck',
  async () => {
    const slurm = fakeSlurm({ sacct: 'recorded', steps: 'job 1' });
    const { db, r } = reconciler(slurm.bin);
    const now = Date.now();
    // 24 runs whose epilog never ran here (no step lists them), and job 1, whose batch step runs
    for (let i = 0; i < 24; i++) recordStart(db, { jobId: String(6000 + i), runKey: 'r0' }, [], 'prolog', now - 3_600_000);
    recordStart(db, { jobId: '1', runKey: 'r0' }, [{ uuid: 'GPU-1', shared: false }], 'prolog', now - 3_600_000);
    const perTick: number[] = [];
    for (let t = 0; t < 4; t++) {
      const before = showJob(slurm).length;
      await r.reconcileOnce(now + t * 1000);
      perTick.push(showJob(slurm).length - before);
    }
    assert.deepEqual(perTick, [10, 10, 5, 0], 'bounded, and nothing left to ask');
    assert.equal(new Set(showJob(slurm)).size, 25, 'each job asked once');
    const open = db.prepare('SELECT job_id, name FROM jobs WHERE end_time IS NULL').all() as { job_id: string; name: string }[];
    assert.deepEqual(
      open,
      [{ job_id: '1', name: 'myjob' }],
      'the 24 closed (Slurm answered: COMPLETED); job 1 confirmed running here, its name filled in',
    );
    assert.equal(
      (db.prepare(`SELECT COUNT(*) AS n FROM jobs WHERE state = 'COMPLETED'`).get() as { n: number }).n,
      24,
      'the end state from the same answer',
    );
    await r.reconcileOnce(now + 299_000);
    assert.equal(showJob(slurm).length, 25, 'a job confirmed running here is not asked again before job_recheck (300 s)');
    await r.reconcileOnce(now + 303_000);
    assert.deepEqual(showJob(slurm).slice(25), ['--local show job 1'], 'one RPC: no -d (and its node table) for a job already bound');
    assert.deepEqual(
      slurm.calls('squeue').filter((c) => !/ --jobs \d+$/.test(c)),
      [],
      'never the whole queue (squeue of one job: the ids its text answer may hold)',
    );
    db.close();
  },
);

test('squeue source: the whole queue every reconcile (the old way, kept for nodes whose step daemons cannot be asked)', async () => {
  const slurm = fakeSlurm({ sacct: 'disabled' });
  const { db, r } = reconciler(slurm.bin, 'squeue');
  await r.reconcileOnce();
  await r.reconcileOnce();
  assert.equal(slurm.calls('squeue').length, 2);
  assert.equal(slurm.calls('scontrol').filter((c) => c.startsWith('list')).length, 0);
  db.close();
});

test('local source on 22.05: a prolog record without a GPU binding is repaired with show job -d (its GPU indices)', async () => {
  const slurm = fakeSlurm({ sacct: 'recorded', steps: 'job 1' });
  const { db, r } = reconciler(slurm.bin);
  // what 22.05's prolog records for a job started right after slurmctld restarted: no GPU in its environment
  recordStart(db, { jobId: '1', runKey: 'r0' }, [], 'prolog', Date.now() - 60_000);
  await r.reconcileOnce();
  assert.deepEqual(showJob(slurm), ['--local show job 1', '--local show job -d 1']);
  const b = db.prepare('SELECT gpu_uuid, source FROM bindings WHERE job_id = ? ORDER BY gpu_uuid').all('1');
  // no gres.conf here: the recorded IDX:0-1 stay GRES indices until one says which GPUs they are
  assert.deepEqual(b, [
    { gpu_uuid: 'gres:0', source: 'poll' },
    { gpu_uuid: 'gres:1', source: 'poll' },
  ]);
  db.close();
});

test(
  'local source on 22.05: a job name posing as fields (a newline, a GRES line, another user) ' +
    "is not read: the prolog's record stands, the job is said once a recheck, the other jobs " +
    'are asked on',
  async () => {
    // slurmctld takes any byte in a job name and scontrol prints it raw
    const slurm = fakeSlurm({
      sacct: 'recorded',
      steps: 'job 1',
      job1: (r) =>
        r.replace(
          'JobName=myjob\n',
          'JobName=x\n     Nodes=gpunode9 CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)\n   UserId=mallory(666) GroupId=mallory(666) MCS_label=N/A\n',
        ),
    });
    const lines: string[] = [];
    const db = openStore(tempDir());
    const r = new Reconciler({
      db,
      node: () => ({ name: 'gpunode9', guessed: false }),
      gresConf: '/nonexistent/gres.conf',
      binDir: slurm.bin,
      slurmConf: null,
      commandTimeoutMs: 5000,
      source: 'local',
      log: createLogger('warn', (l) => lines.push(l)),
    });
    const now = Date.now();
    // no GPU in the prolog's environment: the record's GPU indices would be read (show job -d)
    recordStart(db, { jobId: '1', runKey: 'r0', user: 'root' }, [], 'prolog', now - 60_000);
    recordStart(db, { jobId: '6000', runKey: 'r0' }, [], 'prolog', now - 3_600_000);
    await r.reconcileOnce(now);
    assert.deepEqual(db.prepare('SELECT gpu_uuid FROM bindings WHERE job_id = ?').all('1'), [], "no GPU from the name's GRES line");
    assert.deepEqual(
      db.prepare('SELECT user, end_time FROM jobs WHERE job_id = ?').get('1'),
      { user: 'root', end_time: null },
      "the prolog's user; the run left open",
    );
    assert.equal(
      (db.prepare('SELECT end_time FROM jobs WHERE job_id = ?').get('6000') as { end_time: number | null }).end_time !== null,
      true,
      'the next job was asked and closed',
    );
    const said = lines.filter((l) => l.includes("a job's record in Slurm is not read"));
    assert.equal(said.length, 1, lines.join('\n'));
    assert.match(said[0]!, /job=1 .*scontrol show job 1: UserId= is printed 2 times/);
    await r.reconcileOnce(now + 1000);
    assert.equal(lines.filter((l) => l.includes("a job's record in Slurm is not read")).length, 1, 'not asked again before job_recheck');
    db.close();
  },
);

test(
  "local source: an answer over the tool runner's bound (an array's thousands of split tasks " +
    "with long names) is that job's alone: left as the hooks wrote it, said, the other jobs " +
    'asked on',
  async () => {
    // 17 MiB of a comment's text after the record, as scontrol would print it for thousands of tasks
    const slurm = fakeSlurm({ sacct: 'recorded', steps: 'job 1', job1: (r) => `${r}   Comment=${'x'.repeat(17 * 1024 * 1024)}\n` });
    const lines: string[] = [];
    const db = openStore(tempDir());
    const r = new Reconciler({
      db,
      node: () => ({ name: 'gpunode9', guessed: false }),
      gresConf: '/nonexistent/gres.conf',
      binDir: slurm.bin,
      slurmConf: null,
      commandTimeoutMs: 20_000,
      source: 'local',
      log: createLogger('warn', (l) => lines.push(l)),
    });
    const now = Date.now();
    recordStart(db, { jobId: '1', runKey: 'r0', user: 'root' }, [{ uuid: 'GPU-1', shared: false }], 'prolog', now - 60_000);
    recordStart(db, { jobId: '6000', runKey: 'r0' }, [], 'prolog', now - 3_600_000);
    await r.reconcileOnce(now);
    assert.equal(
      (db.prepare('SELECT end_time FROM jobs WHERE job_id = ?').get('1') as { end_time: number | null }).end_time,
      null,
      'job 1 left open',
    );
    assert.notEqual(
      (db.prepare('SELECT end_time FROM jobs WHERE job_id = ?').get('6000') as { end_time: number | null }).end_time,
      null,
      'the next job asked and closed',
    );
    assert.match(lines.join('\n'), /a job's record in Slurm is not read job=1 .*output larger than 16777216 bytes/);
    db.close();
  },
);

test(
  'requeue: a late epilog of the killed run closed the new run; its steps run and slurmctld ' +
    'says RUNNING: reopened, with its GPUs; an epilog after the question is believed',
  async () => {
    const slurm = fakeSlurm({ sacct: 'recorded', steps: 'job 1' });
    const { db, r } = reconciler(slurm.bin);
    const t0 = Date.now() - 60_000;
    // the order seen on 22.05 under load: the new run's prolog (r0 here: the recorded job's restart count), then the
    // killed run's epilog, its restart count already bumped to the new run's, which closes the new run
    recordStart(db, { jobId: '1', runKey: 'r0' }, [{ uuid: 'GPU-1', shared: false }], 'prolog', t0);
    recordEnd(db, { jobId: '1', runKey: 'r0' }, { endTime: t0 + 700 }, [], 'epilog', t0 + 700);
    await r.reconcileOnce();
    const run = db.prepare('SELECT end_time, state FROM jobs WHERE job_id = ?').get('1');
    assert.deepEqual(run, { end_time: null, state: null }, 'the run is open again');
    assert.deepEqual(db.prepare(`SELECT gpu_uuid, end_time, closed_by FROM bindings WHERE job_id = ? AND gpu_uuid = 'GPU-1'`).all('1'), [
      { gpu_uuid: 'GPU-1', end_time: null, closed_by: null },
    ]);
    db.close();

    // an epilog that closed the run after slurmctld was asked (the job ended meanwhile) stands
    const late = reconciler(slurm.bin);
    recordStart(late.db, { jobId: '1', runKey: 'r0' }, [{ uuid: 'GPU-1', shared: false }], 'prolog', t0);
    recordEnd(late.db, { jobId: '1', runKey: 'r0' }, { endTime: Date.now() + 60_000 }, [], 'epilog', Date.now() + 60_000);
    await late.r.reconcileOnce();
    assert.equal(
      (late.db.prepare('SELECT closed_by FROM bindings WHERE job_id = ?').get('1') as { closed_by: string }).closed_by,
      'epilog',
    );
    late.db.close();
  },
);

test('24.11+: an empty --json answer is not taken for "job gone" (slurmctld down answers the same): nothing is closed', async () => {
  const d = tempDir('l9gpu-fake-slurm-');
  const bin = join(d, 'bin');
  mkdirSync(bin);
  // recorded from 24.11.5 with slurmctld stopped (slurm/testdata/README.md)
  writeFileSync(
    join(bin, 'scontrol'),
    [
      '#!/bin/sh',
      `[ "$1" = listjobs ] && { echo "No slurmstepd's found on this node" >&2; exit 1; }`,
      // the node confirmed a moment before slurmctld went away
      `[ "$2 $3" = "show node" ] && { echo 'NodeName=gpunode9 Arch=x86_64 CoresPerSocket=1 State=IDLE'; exit 0; }`,
      `[ "$2" = --json ] && { cat '${join(TD, 'scontrol-json-show-job-unreachable-24.11.json')}'; exit 0; }`,
      `echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2; exit 1`,
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  const { db, r } = reconciler(bin);
  recordStart(db, { jobId: '9', runKey: 'r0' }, [{ uuid: 'GPU-9', shared: false }], 'prolog', Date.now() - 3_600_000);
  await assert.rejects(
    r.reconcileOnce(),
    /scontrol --local show job 9: exit code 1: slurm_load_jobs error: Unable to contact slurm controller/,
  );
  assert.equal((db.prepare('SELECT end_time FROM bindings WHERE job_id = ?').get('9') as { end_time: number | null }).end_time, null);
  db.close();
});

test(
  'squeue source on a Slurm without squeue --json: records a name made ambiguous (its own, ' +
    'and a job it posed as) are not read from the whole queue; a run of one is asked about ' +
    'alone; the others are reconciled',
  async () => {
    const d = tempDir('l9gpu-fake-slurm-');
    const bin = join(d, 'bin');
    mkdirSync(bin);
    const recorded = readFileSync(join(TD, 'scontrol-show-job-d-22.05.txt'), 'utf8');
    const first = recorded
      .slice(0, recorded.indexOf('\n\n') + 1)
      .replace(/=vm$/gm, '=gpunode9')
      .replace(/Nodes=vm /g, 'Nodes=gpunode9 ');
    // job 7 (mallory's): a name that forges a whole record and pushes its real rest under job 9's id; job 8 runs here;
    // job 9 (a victim's, requeued) now runs on another node, its old run here still open
    const forged =
      'x\n   UserId=root(0) GroupId=root(0)\n   Account=root QOS=normal\n   JobState=RUNNING\n   ' +
      'StartTime=2020-01-01T00:00:00 EndTime=Unknown\n   Partition=gpu\n   NodeList=gpunode9\n   ' +
      'JOB_GRES=gpu:8\n     Nodes=gpunode9 CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)\n\nJobId=9 ' +
      'JobName=y';
    const seven = first.replace('JobId=1 JobName=myjob\n', `JobId=7 JobName=${forged}\n`);
    const nine = first
      .replace('JobId=1 ', 'JobId=9 ')
      .replace(/=gpunode9$/gm, '=gpunode2')
      .replace(/Nodes=gpunode9 /g, 'Nodes=gpunode2 ');
    writeFileSync(join(d, 'jobs.txt'), `${seven}\n${first.replace('JobId=1 ', 'JobId=8 ')}\n${nine}`);
    writeFileSync(join(d, 'job7.txt'), seven);
    writeFileSync(join(d, 'job9.txt'), nine);
    writeFileSync(join(d, 'job8.txt'), first.replace('JobId=1 ', 'JobId=8 '));
    const tool = (name: string, body: string) => writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    // squeue's ids: the whole queue's, or the one job --jobs names
    tool(
      'squeue',
      [
        `[ "$1" = --json ] && { echo "squeue: unrecognized option '--json'" >&2; exit 1; }`,
        `case " $* " in *" --jobs "*) for a; do last=$a; done; echo "$last" ;; *) printf '7\\n8\\n9\\n' ;; esac`,
      ].join('\n'),
    );
    tool(
      'scontrol',
      [
        `[ "$1" = --version ] && { echo 'slurm 22.05.8'; exit 0; }`,
        `[ "$2" = --json ] && { echo "scontrol: unrecognized option '--json'" >&2; exit 1; }`,
        `[ "$2 $3" = "show node" ] && { echo 'NodeName=gpunode9 Arch=x86_64 CoresPerSocket=1 State=IDLE'; exit 0; }`,
        `[ "$*" = "show job -d" ] && { cat '${join(d, 'jobs.txt')}'; exit 0; }`,
        // one job alone, without -d (no GRES detail lines, as slurmctld prints it)
        `[ "$1 $2 $3" = "--local show job" ] && { for a; do last=$a; done; if [ "$4" = -d ]; then ` +
          `cat "${d}/job$last.txt"; else grep -v -E '^[[:space:]]*(JOB_GRES|Nodes)=' "${d}/job$last.txt"; ` +
          `fi; exit 0; }`,
        `exit 1`,
      ].join('\n'),
    );
    const lines: string[] = [];
    const db = openStore(tempDir());
    const r = new Reconciler({
      db,
      node: () => ({ name: 'gpunode9', guessed: false }),
      gresConf: '/nonexistent/gres.conf',
      binDir: bin,
      slurmConf: null,
      commandTimeoutMs: 5000,
      source: 'squeue',
      log: createLogger('warn', (l) => lines.push(l)),
    });
    const long = Date.now() - 3_600_000;
    recordStart(db, { jobId: '7', runKey: 'r0', user: 'mallory' }, [{ uuid: 'gres:1', shared: false }], 'prolog', long);
    recordStart(db, { jobId: '9', runKey: 'r0', user: 'victim' }, [{ uuid: 'gres:3', shared: false }], 'prolog', long);
    await r.reconcileOnce();
    await r.reconcileOnce();
    const open = db.prepare('SELECT job_id, user FROM jobs WHERE end_time IS NULL ORDER BY job_id').all();
    // job 8's record is printed just before job 9's real one, so the whole queue's text does not give it either: asked alone
    assert.deepEqual(
      open,
      [
        { job_id: '7', user: 'mallory' },
        { job_id: '8', user: 'root' },
      ],
      'job 7 as its prolog wrote it (its own answer is ambiguous too); job 8, asked alone, runs ' +
        'here: recorded; job 9, asked alone, runs elsewhere: closed',
    );
    assert.deepEqual(
      db.prepare('SELECT gpu_uuid, source FROM bindings WHERE job_id = ?').all('8'),
      [
        { gpu_uuid: 'gres:0', source: 'poll' },
        { gpu_uuid: 'gres:1', source: 'poll' },
      ],
      'with its GPUs (-d)',
    );
    assert.deepEqual(
      db.prepare('SELECT gpu_uuid FROM bindings WHERE job_id = ? ORDER BY gpu_uuid').all('7'),
      [{ gpu_uuid: 'gres:1' }],
      "none of the name's GPUs",
    );
    const said = lines.filter((l) => l.includes("job records in Slurm's answer are not read"));
    assert.equal(said.length, 1, 'one line, once a recheck period');
    assert.match(said[0]!, /jobs=3 /);
    db.close();
  },
);
