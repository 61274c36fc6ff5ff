/** One job from sacct (slurm/sacct-job.ts) on fixtures built from SchedMD's sources (slurm/testdata/sacct/README.md), and its header. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  SACCT_JOB_ENV,
  SACCT_JOB_FIELDS,
  parseSacctJob,
  parseSacctJobName,
  sacctJob,
  sacctJobArgs,
  sacctJobNameArgs,
  sacctJobs,
} from '../../slurm/sacct-job.js';
import { headerFromSacct, withSacct } from '../../src/jobs/slurm-header.js';
import { headerOf } from '../../src/jobs/report.js';
import { ROOT } from '../helpers/paths.js';

const read = (f: string) => readFileSync(join(ROOT, 'slurm', 'testdata', 'sacct', f), 'utf8');
const S = 1795248000;
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

test('sacct: a completed 2-node job with four steps, every field', () => {
  const j = parseSacctJob(read('completed-multistep.psv'), '4100')!;
  assert.deepEqual(j, {
    jobId: '4100',
    jobIdRaw: '4100',
    arrayJobId: null,
    arrayTaskId: null,
    name: null,
    user: 'alice',
    uid: 1001,
    account: 'physics',
    partition: 'gpu',
    qos: 'normal',
    cluster: 'alps',
    state: 'COMPLETED',
    exitCode: 0,
    exitSignal: 0,
    start: S * 1000,
    end: (S + 3725) * 1000,
    elapsedS: 3725,
    timeLimitS: 240 * 60,
    cpus: 32,
    memReqBytes: 131072 * MiB,
    maxRssBytes: 24 * GiB,
    nodes: ['gpu01', 'gpu02'],
    gpus: 8,
    restarts: 0,
    adminComment: 'l9gpu1:H4sIAAAAAAAAA6tWKkktLlGyUlAqS8wpTVWqBQBk7sYQEgAAAA==',
  });
});

test('sacct: OUT_OF_MEMORY with converted sizes, local times and a header line', () => {
  const j = parseSacctJob(read('out-of-memory.psv'), '4101')!;
  assert.equal(j.state, 'OUT_OF_MEMORY');
  assert.deepEqual([j.exitCode, j.exitSignal], [0, 125]);
  assert.equal(j.memReqBytes, 16 * GiB);
  assert.equal(j.maxRssBytes, Math.round(15.98 * GiB), 'the batch step, not the extern step (512K)');
  assert.equal(j.start, Date.parse('2026-11-21T09:00:00'));
  assert.equal(j.end! - j.start!, 750_000);
  assert.equal(j.gpus, 1);
});

test('sacct: TIMEOUT, a typed GPU count only, ReqMem in M', () => {
  const j = parseSacctJob(read('timeout.psv'), '4102')!;
  assert.deepEqual(
    [j.state, j.timeLimitS, j.elapsedS, j.gpus, j.memReqBytes, j.maxRssBytes],
    ['TIMEOUT', 3600, 3630, 1, 8000 * MiB, 2097152000],
  );
});

test('sacct: "CANCELLED by 1004" is CANCELLED, the signal kept', () => {
  const j = parseSacctJob(read('cancelled-by-uid.psv'), '4103')!;
  assert.deepEqual([j.state, j.exitCode, j.exitSignal, j.gpus], ['CANCELLED', 0, 15, 2]);
});

test('sacct: an array task by its array id and by its own raw id', () => {
  const text = read('array-task.psv');
  const j = parseSacctJob(text, '5000_7')!;
  assert.deepEqual([j.jobId, j.jobIdRaw, j.arrayJobId, j.arrayTaskId, j.maxRssBytes], ['5000_7', '5012', '5000', '7', GiB]);
  assert.deepEqual(parseSacctJob(text, '5012'), j);
  assert.equal(parseSacctJob(text, '5000'), undefined, '5000 is the array, not this task (the store keys jobs the same way)');
  assert.equal(parseSacctJob(text, '5000_8'), undefined);
});

test('sacct: a running job with an UNLIMITED time limit; Partition_Limit is no number either', () => {
  const j = parseSacctJob(read('unlimited-running.psv'), '4104')!;
  assert.deepEqual([j.state, j.end, j.timeLimitS, j.memReqBytes, j.maxRssBytes, j.gpus], ['RUNNING', null, null, 0, null, 1]);
  assert.equal(parseSacctJob(read('admin-comment-separators.usv'), '4106')!.timeLimitS, null);
});

test('sacct: an AdminComment holding | and = survives (unit separator, and | with the comment last)', () => {
  const j = parseSacctJob(read('admin-comment-separators.usv'), '4106')!;
  assert.deepEqual(
    [j.adminComment, j.state, j.exitCode, j.gpus, j.maxRssBytes],
    ['site=alps|l9gpu=v1|gpus=0|b64=AAB==', 'FAILED', 3, 0, null],
  );
  const piped = read('completed-multistep.psv')
    .split('\n')[0]!
    .replace(/\|[^|]*$/, '|a=b|c||d=');
  assert.equal(parseSacctJob(piped, '4100')!.adminComment, 'a=b|c||d=');
  const multiline = `${read('completed-multistep.psv').split('\n')[0]!}\nsecond line of the comment\n`;
  assert.equal(parseSacctJob(multiline, '4100')!.adminComment.split('\n')[1], 'second line of the comment', 'a newline in the comment');
});

test('sacct: ReqMem before 21.08, per CPU and per node, totalled for the job', () => {
  const text = read('reqmem-legacy.psv');
  assert.equal(parseSacctJob(text, '300')!.memReqBytes, 8 * 4000 * MiB);
  assert.equal(parseSacctJob(text, '300')!.maxRssBytes, 3 * GiB);
  assert.equal(parseSacctJob(text, '301')!.memReqBytes, 2 * 64 * GiB);
});

test('sacct -D: the latest run of a requeued job, its restarts counted, its own steps only', () => {
  const j = parseSacctJob(read('requeued-duplicates.psv'), '4105')!;
  assert.deepEqual([j.state, j.restarts, j.nodes, j.maxRssBytes, j.start], ['COMPLETED', 1, ['gpu13'], 8 * GiB, (S + 400) * 1000]);
});

test('sacct: bad input is an error naming the field and the line', () => {
  const good = read('completed-multistep.psv').split('\n');
  const bad = (i: number, field: string, value: string) => {
    const cols = good[i]!.split('|');
    cols[SACCT_JOB_FIELDS.indexOf(field as never)] = value;
    return [...good.slice(0, i), cols.join('|'), ...good.slice(i + 1)].join('\n');
  };
  assert.throws(() => parseSacctJob(bad(0, 'ElapsedRaw', '12x'), '4100'), {
    message: 'sacct -j 4100: line 1: ElapsedRaw "12x" is not a count',
  });
  assert.throws(() => parseSacctJob(bad(0, 'ReqMem', '4 GB'), '4100'), { message: 'sacct -j 4100: line 1: ReqMem "4 GB" is not a size' });
  assert.throws(() => parseSacctJob(bad(3, 'MaxRSS', '-5'), '4100'), { message: 'sacct -j 4100: line 4: MaxRSS "-5" is not a size' });
  assert.throws(() => parseSacctJob(bad(0, 'Start', 'yesterday'), '4100'), /line 1: Start "yesterday" is not a time/);
  assert.throws(() => parseSacctJob(bad(0, 'ExitCode', '0'), '4100'), /line 1: ExitCode "0" is not code:signal/);
  assert.throws(
    () => parseSacctJob(bad(0, 'NodeList', 'gpu[01-'), '4100'),
    /line 1: NodeList "gpu\[01-" hostlist "gpu\[01-": unbalanced \[/,
  );
  assert.throws(
    () => parseSacctJob(bad(0, 'AllocTRES', 'cpu=1,gres/gpu=two'), '4100'),
    /line 1: AllocTRES .* has a bad GPU count "gres\/gpu=two"/,
  );
  assert.throws(() => parseSacctJob(bad(0, 'State', 'completed?'), '4100'), /line 1: State "completed\?" is not a job state/);
  assert.throws(() => parseSacctJob(bad(0, 'JobID', '41x00'), '4100'), /line 1: JobID "41x00" is not a job id/);
  assert.throws(
    () => parseSacctJob(good.slice(1).join('\n'), '4100'),
    /line 1: JobID "4100.batch" is a step of no allocation line before it/,
  );
  assert.throws(() => parseSacctJob('4100|4100|x\n', '4100'), {
    message: `sacct -j 4100: line 1: 3 fields, expected 21 (${SACCT_JOB_FIELDS.join(',')})`,
  });
  assert.throws(() => parseSacctJob(`JobID|JobIDRaw|State\n${good[0]}`, '4100'), /line 1: the header is not JobID\|JobIDRaw\|User/);
  const legacy = read('reqmem-legacy.psv').split('\n')[0]!.split('|');
  legacy[SACCT_JOB_FIELDS.indexOf('AllocCPUS')] = '';
  assert.throws(() => parseSacctJob(legacy.join('|'), '300'), /line 1: AllocCPUS "" is needed to total ReqMem 4000Mc/);
});

test('sacct: an id slurmctld gave again (its state lost) and printed before the older job: the job that started last', () => {
  const newer = read('timeout.psv').trimEnd();
  const older = read('cancelled-by-uid.psv')
    .trimEnd()
    .replace(/4103/g, '4102')
    .replace(/\|17952480(00|42|43)(?=\|)/g, '|17952400$1');
  const j = parseSacctJob(`${newer}\n${older}\n`, '4102')!;
  assert.deepEqual([j.state, j.user, j.restarts], ['TIMEOUT', parseSacctJob(newer, '4102')!.user, 0]);
  assert.ok(parseSacctJob(newer, '4102')!.start! > parseSacctJob(older, '4102')!.start!, 'the fixture pair: TIMEOUT started after');
  // the older job cancelled before it started (Start Unknown): as old as its end
  const never = older.replace(/^(4102\|4102\|(?:[^|]*\|){8})1795240000\|/m, '$1Unknown|');
  assert.notEqual(never, older);
  assert.equal(parseSacctJob(`${newer}\n${never}\n`, '4102')!.state, 'TIMEOUT');
});

test('sacct: one id on two clusters (-M a,b) is ambiguous; an unknown job is undefined', () => {
  const line = read('cancelled-by-uid.psv').split('\n')[0]!;
  assert.throws(
    () => parseSacctJob(`${line}\n${line.replace('|alps|', '|eiger|')}`, '4103'),
    /job 4103 is in clusters alps, eiger: name one with --cluster/,
  );
  assert.equal(parseSacctJob('', '1'), undefined);
});

test('sacctJob: the arguments, the environment and -M, through the runner it is given', async () => {
  const calls: [string, readonly string[], Record<string, string>][] = [];
  const run = async (c: string, a: readonly string[], e: Record<string, string>) => {
    calls.push([c, a, e]);
    return read('timeout.psv');
  };
  const j = await sacctJob('4102', { run, cluster: 'alps' });
  assert.equal(j!.state, 'TIMEOUT');
  assert.deepEqual(calls, [
    [
      'sacct',
      ['-j', '4102', '-D', '-P', '-n', '--delimiter=\x1f', '--noconvert', `--format=${SACCT_JOB_FIELDS.join(',')}`, '-M', 'alps'],
      { SLURM_TIME_FORMAT: '%s' },
    ],
  ]);
  assert.deepEqual(sacctJobArgs('1').slice(-1), [`--format=${SACCT_JOB_FIELDS.join(',')}`], 'no -M without a cluster');
  assert.deepEqual(SACCT_JOB_ENV, { SLURM_TIME_FORMAT: '%s' });
  await assert.rejects(sacctJob('1;rm', { run }), /"1;rm" is not a job id/);
  await assert.rejects(sacctJob('4100', { run: async () => '4100|x\n' }), /^Error: sacct -j 4100: line 1: 2 fields/);
  // the name on request, from a call of its own
  calls.length = 0;
  const named = await sacctJob('4102', {
    run: async (c, a, e) => (
      calls.push([c, a, e]),
      a.includes('-X') ? '4102\x1f4102\x1f1795248000\x1f1795251630\x1ftrain\x1fllm\n' : read('timeout.psv')
    ),
    cluster: 'alps',
    name: true,
  });
  assert.equal(named!.name, 'train\x1fllm');
  assert.deepEqual(
    calls.map((c) => c[1]),
    [sacctJobArgs('4102', 'alps'), sacctJobNameArgs('4102', 'alps')],
  );
  assert.deepEqual(sacctJobNameArgs('4102', 'alps'), [
    '-j',
    '4102',
    '-X',
    '-D',
    '-P',
    '-n',
    '--delimiter=\x1f',
    '--format=JobIDRaw,JobID,Start,End,JobName',
    '-M',
    'alps',
  ]);
});

test(
  "sacct: a job name is never on the record's line: one holding the delimiter or a newline " +
    "cannot make its job another user's, another state or another time limit",
  () => {
    // slurmctld takes any byte in a name (job_mgr.c tests its length alone), and sacct prints it as it is
    for (const f of ['JobName', 'Comment', 'WCKey', 'SubmitLine', 'WorkDir', 'Constraints', 'Reason', 'SystemComment'])
      assert.ok(!(SACCT_JOB_FIELDS as readonly string[]).includes(f), `${f} is a user's text`);
    // the name's own call: the name is the last field, so the delimiter and newlines stay in it
    const forged = 'train\x1fmallory\x1f0\x1facct\x1fgpu\x1fnormal\x1falps\x1fCOMPLETED\nforged';
    assert.equal(parseSacctJobName(`4106\x1f4106\x1f1795248000\x1f1795248100\x1f${forged}\n`, '4106'), forged);
    assert.equal(parseSacctJobName('4106\x1f4106\x1f1795248000\x1f1795248100\x1fx|y\n', '4106'), 'x|y');
    // -D: the latest run's; an array task by its array id; nothing, or "(null)", is no name
    assert.equal(
      parseSacctJobName('4105\x1f4105\x1f1795248000\x1f1795248100\x1fold\n4105\x1f4105\x1f1795248400\x1f1795248500\x1fnew\n', '4105'),
      'new',
    );
    // the run that started last, whatever sacct's order (an id slurmctld gave again after losing its state); not started yet: the newest
    assert.equal(
      parseSacctJobName('4105\x1f4105\x1f1795248400\x1f1795248500\x1fnew\n4105\x1f4105\x1f1795248000\x1f1795248100\x1fold\n', '4105'),
      'new',
    );
    assert.equal(
      parseSacctJobName('4105\x1f4105\x1f1795248400\x1f1795248500\x1fran\n4105\x1f4105\x1fUnknown\x1fUnknown\x1fpending\n', '4105'),
      'pending',
    );
    // one cancelled before it started (no start: its end) is as old as its end
    assert.equal(
      parseSacctJobName('4105\x1f4105\x1f1795248400\x1fUnknown\x1fnew\n4105\x1f4105\x1fNone\x1f1795240000\x1fold\n', '4105'),
      'new',
    );
    assert.equal(parseSacctJobName('5012\x1f5000_7\x1f1795248000\x1f1795248100\x1fsweep\n', '5000_7'), 'sweep');
    assert.equal(parseSacctJobName('5012\x1f5000_7\x1f1795248000\x1f1795248100\x1fsweep\n', '5012'), 'sweep');
    assert.equal(parseSacctJobName('', '1'), null);
    assert.equal(parseSacctJobName('4106\x1f4106\x1f1795248000\x1f1795248100\x1f\n', '4106'), null);
    // a name that starts another job's line forges nothing for this one
    assert.equal(
      parseSacctJobName('4106\x1f4106\x1f1795248000\x1f1795248100\x1fa\n999\x1f999\x1f1795248000\x1f1795248100\x1fevil\n', '4106'),
      'a',
    );
  },
);

test(
  'sacctJobs: 250 jobs in three sacct calls of at most 100 ids, each id its own record as ' +
    'sacctJob gives it, undefined where accounting has none',
  async () => {
    // what sacct -j a,b,... prints: each asked job's lines (its runs and steps), here the fixtures' of 4100 and 4102
    const lines = [read('completed-multistep.psv'), read('timeout.psv')]
      .join('\n')
      .split('\n')
      .filter((l) => l.trim() !== '');
    const calls: string[][] = [];
    const run = async (_c: string, a: readonly string[]) => {
      const asked = new Set(a[a.indexOf('-j') + 1]!.split(','));
      calls.push([...asked]);
      return lines.filter((l) => asked.has(l.split(/[|\x1f]/)[0]!.split('.')[0]!)).join('\n') + '\n';
    };
    const ids = Array.from({ length: 250 }, (_, i) => String(4000 + i));
    const got = await sacctJobs([...ids, '4100'], { run });
    assert.deepEqual(
      calls.map((c) => c.length),
      [100, 100, 50],
      'one call per 100 ids, each id asked once',
    );
    assert.deepEqual(got.get('4100'), parseSacctJob(read('completed-multistep.psv'), '4100'));
    assert.deepEqual([got.get('4102')!.state, got.get('4102')!.timeLimitS], ['TIMEOUT', 3600]);
    assert.equal(got.get('4001'), undefined);
    assert.equal(got.size, 250);
    const refused: string[] = [];
    const mixed = await sacctJobs(['4100', '2;rm'], { run, onError: (id, e) => refused.push(`${id}: ${e.message}`) });
    assert.deepEqual(refused, ['2;rm: "2;rm" is not a job id (123 or 122_4)'], 'a bad id is said and never on the command line');
    assert.deepEqual(calls.at(-1), ['4100']);
    assert.equal(mixed.get('4100')!.jobId, '4100', 'its neighbour is read');
    const said: string[] = [];
    const unreadable = await sacctJobs(['4100'], { run: async () => '4100|x\n', onError: (id, e) => said.push(`${id}: ${e.message}`) });
    assert.equal(unreadable.get('4100'), undefined);
    assert.equal(said.length, 1);
    assert.match(said[0]!, /^4100: sacct -j 4100: line 1: 2 fields, expected 21/);
  },
);

test(
  'sacct: ReqMem as Slurm 22.05 prints NO_VAL64 (2^64 as a double) is no value, not a size ' +
    "error; sacctJobs: one job's bad line is that job's alone",
  async () => {
    const withReqMem = (text: string, v: string) => text.replace(/^(4100(?:\|[^|\n]*){14}\|)131072M\|/m, `$1${v}|`);
    const sentinel = withReqMem(read('completed-multistep.psv'), '18446744073709551616.00M');
    assert.notEqual(sentinel, read('completed-multistep.psv'), "the allocation line's ReqMem replaced");
    const j = parseSacctJob(sentinel, '4100')!;
    assert.equal(j.memReqBytes, null);
    assert.equal(j.timeLimitS, 240 * 60);
    const bad = withReqMem(read('completed-multistep.psv'), '12Q');
    assert.throws(() => parseSacctJob(bad, '4100'), /ReqMem "12Q" is not a size/);
    const errors: string[] = [];
    const got = await sacctJobs(['4100', '4102'], {
      run: async () => `${bad.trimEnd()}\n${read('timeout.psv')}`,
      onError: (id, e) => errors.push(`${id}: ${e.message}`),
    });
    assert.equal(got.get('4100'), undefined);
    assert.equal(got.get('4102')!.timeLimitS, 3600, 'its neighbour in the same answer is read');
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /^4100: sacct -j 4100,4102: line \d+: ReqMem "12Q" is not a size/);
  },
);

test('the header from sacct: over a store header, and alone', () => {
  // the name as sacctJob({ name: true }) adds it from its own call
  const s = { ...parseSacctJob(read('completed-multistep.psv'), '4100')!, name: 'train-llm' };
  const store = headerOf(
    {
      job_id: '4100',
      run_key: 'r0',
      user: 'alice',
      uid: 1001,
      account: null,
      partition: 'gpu',
      qos: null,
      name: null,
      cluster: null,
      array_job_id: null,
      array_task_id: null,
      start_time: S * 1000,
      end_time: (S + 3700) * 1000,
      state: null,
      exit_code: null,
    },
    1,
    ['gpu01'],
  );
  const h = withSacct(store, s);
  assert.deepEqual(
    [
      h.state,
      h.qos,
      h.cluster,
      h.account,
      h.name,
      h.exit_code,
      h.exit_signal,
      h.elapsed_s,
      h.end,
      h.nodes,
      h.cpus,
      h.mem_req_bytes,
      h.mem_max_rss_bytes,
      h.time_limit_s,
      h.time_efficiency,
      h.gpus_alloc,
      h.run,
    ],
    [
      'COMPLETED',
      'normal',
      'alps',
      'physics',
      'train-llm',
      0,
      0,
      3725,
      new Date((S + 3725) * 1000).toISOString(),
      ['gpu01'],
      32,
      128 * GiB,
      24 * GiB,
      14400,
      0.2587,
      8,
      'r0',
    ],
  );
  const alone = headerFromSacct(parseSacctJob(read('requeued-duplicates.psv'), '4105')!);
  assert.deepEqual([alone.id, alone.run, alone.earlier_runs, alone.time_efficiency, alone.uid], ['4105', 'r1', 1, 0.5, 1009]);
  const timeout = headerFromSacct(parseSacctJob(read('timeout.psv'), '4102')!);
  assert.equal(timeout.time_efficiency, 1, 'over the limit (KillWait) reads as 1');
});
