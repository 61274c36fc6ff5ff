/** The jobstats-like notes (src/jobs/slurm-notes.ts) and site notes with their condition language (src/jobs/site-notes.ts). */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { totalsOf } from '../../src/jobs/report.js';
import type { GpuRow, JobHeader } from '../../src/jobs/report-model.js';
import { NO_IDLE } from '../../src/figures/rollup.js';
import { evaluate, parseCondition, parseSiteNotes, siteNotes, siteNotesFrom } from '../../src/jobs/site-notes.js';
import { migGpuOf, migProfileFor, slurmDuration, slurmNotes } from '../../src/jobs/slurm-notes.js';
import { configFrom } from '../helpers/config.js';
import { tempDir } from '../helpers/paths.js';

const G = 1024 ** 3;
const job = (over: Partial<JobHeader> = {}): JobHeader => ({
  id: '7',
  job_id: '7',
  run: 'r0',
  user: 'alice',
  uid: 1001,
  account: 'physics',
  partition: 'gpu',
  qos: 'normal',
  name: 'x',
  cluster: 'alps',
  state: 'COMPLETED',
  start: null,
  end: null,
  elapsed_s: 3 * 3600,
  exit_code: 0,
  nodes: ['n1'],
  earlier_runs: 0,
  cpus: 8,
  mem_req_bytes: 32 * G,
  mem_max_rss_bytes: 20 * G,
  time_limit_s: 4 * 3600,
  time_efficiency: 0.75,
  gpus_alloc: 1,
  exit_signal: 0,
  ...over,
});
function gpu(over: Partial<GpuRow['figures']> = {}, model = 'NVIDIA H100 80GB HBM3', uuid = 'GPU-a'): GpuRow {
  return {
    node: 'n1',
    uuid,
    model,
    index: 0,
    shared: false,
    figures: {
      samples: 360,
      seconds: 3600,
      gpuHours: 1,
      utilMean: 0.9,
      utilMax: 1,
      memUtilMean: 0.5,
      memUsedMax: 60 * G,
      memTotal: 79.6 * G,
      energyJ: 2e6,
      energySource: 'counter',
      powerMean: 550,
      powerMax: 700,
      tempMax: 70,
      throttledS: {},
      xid: {},
      eccCorrected: 0,
      eccUncorrected: 0,
      shareMean: 1,
      gpm: null,
      idle: NO_IDLE,
      ...over,
    },
  };
}
const notes = (h: JobHeader, gpus: GpuRow[] = [gpu()]) => slurmNotes(h, gpus, totalsOf(gpus, null), []);
const codes = (h: JobHeader, gpus?: GpuRow[]) => notes(h, gpus).map((n) => n.code);

test('a job that used what it asked for has no Slurm note', () => {
  assert.deepEqual(codes(job()), []);
});

test('out-of-memory: the peak, the request and a --mem; not for another state', () => {
  const n = notes(job({ state: 'OUT_OF_MEMORY', mem_req_bytes: 32 * G, mem_max_rss_bytes: 31.9 * G, nodes: ['n1', 'n2'] }));
  assert.deepEqual(n, [
    {
      level: 'warn',
      code: 'out-of-memory',
      text:
        'ran out of CPU memory (state OUT_OF_MEMORY): the largest task peaked at 31.9 GiB (MaxRSS), ' +
        '16.0 GiB requested per node; ask for more with --mem=32G (twice the request), or check the ' +
        'code for a leak',
    },
  ]);
  assert.deepEqual(codes(job({ state: 'FAILED', mem_max_rss_bytes: 31.9 * G })), []);
  assert.match(
    notes(job({ state: 'OUT_OF_MEMORY', mem_req_bytes: null, mem_max_rss_bytes: null }))[0]!.text,
    /^ran out of CPU memory \(state OUT_OF_MEMORY\); ask for more with --mem, or/,
  );
});

test('timeout: names the limit; not for a job that finished in time', () => {
  assert.deepEqual(notes(job({ state: 'TIMEOUT', elapsed_s: 4 * 3600 + 30, time_efficiency: 1 })), [
    {
      level: 'warn',
      code: 'timeout',
      text:
        'hit its time limit of 4:00:00 (state TIMEOUT) and was killed: write checkpoints and resume ' +
        'from them, or ask for a longer --time',
    },
  ]);
  assert.deepEqual(codes(job({ elapsed_s: 4 * 3600 - 60, time_efficiency: 0.996 })), []);
});

test('time-overrequested: under 25 % of a limit over 1 h, with a --time of 1.5x the run time to the quarter hour', () => {
  const n = notes(job({ elapsed_s: 2 * 3600 + 600, time_limit_s: 2 * 86400, time_efficiency: 0.0451 }));
  assert.deepEqual(
    n.map((x) => x.text),
    ['used 5% of its time limit (2:10:00 of 2-00:00:00): --time=3:15:00 would do, and shorter limits start sooner (backfill)'],
  );
  assert.deepEqual(codes(job({ elapsed_s: 900, time_limit_s: 3600, time_efficiency: 0.25 })), [], 'at 25 %');
  assert.deepEqual(codes(job({ elapsed_s: 600, time_limit_s: 3600, time_efficiency: 0.1667 })), [], 'a limit of 1 h is short already');
  assert.deepEqual(
    codes(job({ state: 'FAILED', elapsed_s: 60, time_limit_s: 86400, time_efficiency: 0.0007 })),
    [],
    'a failed job did not finish its work',
  );
  assert.deepEqual(codes(job({ elapsed_s: 60, time_limit_s: 86400, time_efficiency: 0.0007 })), ['time-overrequested']);
  assert.equal(slurmDuration(86400 + 3661), '1-01:01:01');
});

test('cpu-memory-overrequested: max RSS under 20 % of a per-node request of 4 GiB or more', () => {
  assert.deepEqual(
    notes(job({ mem_req_bytes: 128 * G, mem_max_rss_bytes: 3.2 * G, nodes: ['n1', 'n2'] })).map((n) => n.text),
    [
      'CPU memory over-requested: 64.0 GiB per node, the largest task peaked at 3.2 GiB (MaxRSS, ' +
        'per task: times the tasks per node): --mem=7G would do for one task per node',
    ],
  );
  assert.deepEqual(codes(job({ mem_req_bytes: 32 * G, mem_max_rss_bytes: 6.5 * G })), [], '20.3 %');
  assert.deepEqual(codes(job({ mem_req_bytes: 3 * G, mem_max_rss_bytes: 0.1 * G })), [], 'a small request');
  assert.deepEqual(codes(job({ state: 'RUNNING', mem_req_bytes: 64 * G, mem_max_rss_bytes: 1 * G })), [], 'still running');
});

test('mig-fit: the smallest profile of the model holding peak memory and mean utilization; never on MIG or a busy GPU', () => {
  const idle = { utilMean: 0.08, utilMax: 0.5, memUsedMax: 7 * G };
  assert.deepEqual(notes(job(), [gpu(idle)]), [
    {
      level: 'info',
      code: 'mig-fit',
      text:
        'this job would fit a MIG slice: its GPU peaked at 7.0 GiB of memory and 8% utilization, ' +
        "which a 1g.10gb instance of the H100 80GB holds; ask for your site's MIG GPUs and leave " +
        'the whole GPU to jobs that need it',
    },
  ]);
  // 8.5 GiB is over 90 % of 10 GB: the next profile with 1 compute slice
  assert.match(notes(job(), [gpu({ ...idle, memUsedMax: 8.5 * G })])[0]!.text, /a 1g\.20gb instance of the H100 80GB/);
  assert.match(notes(job(), [gpu({ ...idle, utilMean: 0.2 })])[0]!.text, /a 2g\.20gb instance/, '20 % needs 2 of 7 slices');
  assert.match(
    notes(job(), [gpu(idle), gpu({ ...idle, memUsedMax: 30 * G }, undefined, 'GPU-b')])[0]!.text,
    /each of its 2 GPUs .* a 3g\.40gb instance/,
  );
  assert.deepEqual(codes(job(), [gpu({ ...idle, utilMean: 0.3 })]), [], 'busy');
  assert.deepEqual(codes(job(), [gpu({ ...idle, memUsedMax: 40 * G })]), [], 'needs more than 4g.40gb');
  assert.deepEqual(codes(job(), [gpu(idle, 'NVIDIA H100 80GB HBM3', 'MIG-0b2c')]), [], 'already on MIG');
  assert.deepEqual(codes(job(), [gpu(idle, 'NVIDIA L40S')]), [], 'no MIG on an L40S');
  assert.deepEqual(codes(job(), [gpu({ ...idle, seconds: 200 })]), [], 'seen too briefly');
  assert.deepEqual(codes(job({ state: 'RUNNING' }), [gpu(idle)]), [], 'running: its peak may grow');
});

test('MIG profile choice per model, from the NVIDIA MIG User Guide', () => {
  const pick = (model: string, memTotalGiB: number | null, peakGiB: number, util = 0.05) => {
    const t = migGpuOf(model, memTotalGiB === null ? null : memTotalGiB * G);
    return t && migProfileFor(t, peakGiB * G, util);
  };
  assert.equal(pick('NVIDIA A100-SXM4-40GB', 39.5, 4), '1g.5gb');
  assert.equal(pick('NVIDIA A100-PCIE-40GB', null, 8), '1g.10gb');
  assert.equal(pick('NVIDIA A100 80GB PCIe', 79.2, 8), '1g.10gb');
  assert.equal(pick('NVIDIA A100-SXM4-80GB', null, 30), '3g.40gb');
  assert.equal(pick('NVIDIA A30', 24, 5), '1g.6gb');
  assert.equal(pick('NVIDIA A30', 24, 6), '2g.12gb');
  assert.equal(pick('NVIDIA H100 80GB HBM3', 79.6, 15), '1g.20gb');
  assert.equal(pick('NVIDIA H100 NVL', null, 10), '1g.12gb');
  assert.equal(pick('NVIDIA H100 PCIe', 93.6, 35), '3g.47gb');
  assert.equal(pick('NVIDIA H100 PCIe', 93.6, 40), undefined, '40 GiB is over 90 % of 47 GB: no slice below the whole GPU');
  assert.equal(pick('NVIDIA GH200 480GB', 95.6, 40), '3g.48gb');
  assert.equal(pick('NVIDIA H200', 139.8, 15), '1g.18gb');
  assert.equal(pick('NVIDIA H200 NVL', null, 55), '3g.71gb');
  assert.equal(pick('NVIDIA B200', 178, 18), '1g.23gb');
  assert.equal(pick('NVIDIA B200', 178, 20), '1g.45gb', '20 GiB is over 90 % of 23 GB');
  assert.equal(pick('NVIDIA H20', 95.6, 10), '1g.12gb');
  assert.equal(pick('NVIDIA H100 80GB HBM3', 79.6, 5, 0.5), '4g.40gb', '50 % needs 4 of 7 slices');
  assert.equal(pick('NVIDIA GeForce RTX 4090', 24, 2), undefined);
  assert.equal(pick('NVIDIA GB200', 186, 2), undefined, 'not in the table: no guess');
});

const ctx = (h: Partial<JobHeader> = {}, gpus: GpuRow[] = [gpu()]) => ({ job: job(h), gpus, totals: totalsOf(gpus, null) });
const holds = (src: string, h: Partial<JobHeader> = {}, gpus?: GpuRow[]) => evaluate(parseCondition(src), ctx(h, gpus));

test('conditions: precedence not > and > or, parentheses, strings, percents, unknown figures', () => {
  assert.equal(holds('gpus == 2 or gpus == 1 and partition == "debug"'), false, 'and binds tighter: 2 or (1 and debug)');
  assert.equal(holds('(gpus == 2 or gpus == 1) and partition == "gpu"'), true);
  assert.equal(holds("not gpus == 1 or state == 'COMPLETED'"), true, 'not binds tightest');
  assert.equal(holds('not (gpus == 1 or state == "COMPLETED")'), false);
  assert.equal(holds('util_mean >= 90% and util_mean <= 0.9'), true);
  assert.equal(holds('elapsed_h > 2.5 and time_efficiency < 0.8 and mem_peak_gib >= 60 and energy_kwh > 0.5 and gpu_hours == 1'), true);
  assert.equal(holds('qos != "normal"'), false);
  assert.equal(holds('gpu_model == "NVIDIA H100 80GB HBM3" and cluster == "alps" and user == "alice" and account == "physics"'), true);
  assert.equal(holds('time_limit_h > 1', { time_limit_s: null }), false, 'an unknown figure compares false');
  assert.equal(holds('not time_limit_h > 1', { time_limit_s: null }), true);
  assert.equal(holds('1 < gpus'), false, 'a literal on the left');
});

test('conditions: errors name the column and what was wrong', () => {
  const err = (src: string) => {
    try {
      parseCondition(src);
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };
  assert.equal(
    err('util_mean < 0.2 and gpu > 4'),
    'column 21: unknown field "gpu" (did you mean gpus?); fields: util_mean, gpus, gpu_hours, ' +
      'mem_peak_gib, energy_kwh, elapsed_h, time_limit_h, time_efficiency, cpus, mem_req_gib, ' +
      'mem_max_rss_gib, exit_code, restarts, cost, state, partition, account, user, qos, cluster, ' +
      'gpu_model',
  );
  assert.equal(err('gpus = 4'), 'column 6: "=" is not an operator: write ==');
  assert.equal(err('partition < "a"'), 'column 11: strings compare with == or != only, not <');
  assert.equal(err('partition == 4'), 'column 11: cannot compare a string with a number');
  assert.equal(err('(gpus > 1'), 'column 10: expected ) but found the end');
  assert.equal(err('gpus > 1 gpus'), 'column 10: expected and, or or the end but found "gpus"');
  assert.equal(err('gpus and'), 'column 6: expected a comparison (< <= > >= == !=) after gpus but found "and"');
  assert.equal(err('state == "TIMEOUT'), 'column 10: string not closed (no " after it)');
  assert.equal(err('1 < 2'), 'column 1: a comparison needs a field on one side');
  assert.equal(err(''), 'column 1: empty condition');
  assert.equal(err('gpus > 1; rm'), 'column 9: unexpected ";"');
});

const FILE = `# site notes
[big-idle]
when  = gpus >= 1 and util_mean < 0.95
level = warn
text  = {gpus} GPU(s) at {util_mean} on {partition}
link  = https://hpc.example.edu/gpu

[never]
when = state == "TIMEOUT"
text = never shown
`;

test('site notes: the file, fired notes with placeholders and link, and a note that does not fire', () => {
  const site = parseSiteNotes(FILE, '/etc/l9gpu/site-notes.ini');
  assert.deepEqual(
    site.map((s) => [s.name, s.level, s.link]),
    [
      ['big-idle', 'warn', 'https://hpc.example.edu/gpu'],
      ['never', 'info', null],
    ],
  );
  const gpus = [gpu()];
  assert.deepEqual(siteNotes(site, job(), gpus, totalsOf(gpus, null)), [
    { level: 'warn', code: 'site:big-idle', text: '1 GPU(s) at 90% on gpu (https://hpc.example.edu/gpu)' },
  ]);
  assert.deepEqual(
    slurmNotes(job(), gpus, totalsOf(gpus, null), site).map((n) => n.code),
    ['site:big-idle'],
    'slurmNotes appends them',
  );
});

test('site notes: every mistake is an error naming file:line', () => {
  const msg = (text: string) => {
    try {
      parseSiteNotes(text, 'n.ini');
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };
  assert.equal(
    msg('[a]\nwhen = gpus > 1 and utl < 2\ntext = x\n'),
    'n.ini:2: [a] when: column 14: unknown field "utl"; fields: util_mean, gpus, gpu_hours, ' +
      'mem_peak_gib, energy_kwh, elapsed_h, time_limit_h, time_efficiency, cpus, mem_req_gib, ' +
      'mem_max_rss_gib, exit_code, restarts, cost, state, partition, account, user, qos, cluster, ' +
      'gpu_model',
  );
  assert.equal(msg('[a]\nwhen = gpus > 1\n'), 'n.ini:1: [a] has no text =');
  assert.equal(
    msg('[a]\nwhen = gpus > 1\ntext = {gpu} x\n'),
    'n.ini:3: [a] text: unknown field {gpu}; fields: util_mean, gpus, gpu_hours, mem_peak_gib, ' +
      'energy_kwh, elapsed_h, time_limit_h, time_efficiency, cpus, mem_req_gib, mem_max_rss_gib, ' +
      'exit_code, restarts, cost, state, partition, account, user, qos, cluster, gpu_model',
  );
  assert.equal(msg('[a]\nwhen = gpus > 1\ntext = x\nlevel = error\n'), 'n.ini:4: [a] level: "error" is not info or warn');
  assert.equal(msg('[a]\nwhen = gpus > 1\ntext = x\nlink = ftp://x\n'), 'n.ini:4: [a] link: "ftp://x" is not an http(s) URL');
  assert.equal(msg('[a]\nwhen = gpus > 1\ntxt = x\n'), 'n.ini:3: [a] unknown key txt (did you mean text?); keys: when, text, level, link');
  assert.equal(msg('[a]\nwhen = gpus > 1\nwhen = gpus > 2\n'), 'n.ini:3: [a] when is set twice (line 2)');
  assert.equal(msg('when = gpus > 1\n'), 'n.ini:1: key = value before any [name] section');
  assert.equal(msg('[a]\nwhen = gpus > 1\ntext = x\n[a]\n'), 'n.ini:4: [a] is defined twice');
  assert.equal(msg('[Big Idle]\n'), "n.ini:1: [Big Idle]: a note's name is lowercase letters, digits, - and _");
  assert.equal(msg('[a]\njust words\n'), 'n.ini:2: expected [name] or key = value, found "just words"');
  assert.throws(() => parseSiteNotes('[a]\ntext = x\n', 'n.ini'), { name: 'ConfigError', message: 'n.ini:1: [a] has no when =' });
});

test('site notes from [jobs] site_notes: unset is none, a missing file a ConfigError', () => {
  assert.deepEqual(siteNotesFrom(configFrom({})), []);
  const dir = tempDir('site-notes');
  const file = join(dir, 'notes.ini');
  writeFileSync(file, FILE);
  assert.equal(siteNotesFrom(configFrom({ jobs: { site_notes: file } })).length, 2);
  assert.throws(() => siteNotesFrom(configFrom({ jobs: { site_notes: join(dir, 'nope.ini') } })), {
    name: 'ConfigError',
    message: `[jobs] site_notes: ${join(dir, 'nope.ini')}: no such file`,
  });
});
