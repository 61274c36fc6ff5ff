/**
 * `l9gpu jobs --waste` (src/jobs/waste.ts): each class with a case and its
 * near miss; the same rows from this node's store and, through real
 * VictoriaMetrics fed over OTLP, from the job-end summary metrics of the
 * cluster; the CLI's text, --json and --csv; and the access rule.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Batch, Point } from '../../src/core/metrics/model.js';
import { JobLedger } from '../../src/ledger/ledger.js';
import { answerJobs, parseJobsRequest } from '../../src/jobs/api.js';
import { wasteOf, wasteRows, type WasteGpu, type WasteInput, type WasteRow } from '../../src/jobs/waste.js';
import { wasteInputsFromPromql } from '../../src/jobs/waste-promql.js';
import { otlpSink } from '../../src/sinks/otlp.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { configFrom } from '../helpers/config.js';
import { runCli } from '../helpers/daemon.js';
import { tempDir } from '../helpers/paths.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

const T = { lowActivity: 0.25, timeLimitFactor: 3 };
const GiB = 1024 ** 3;

function gpu(over: Partial<WasteGpu> = {}, i = 0): WasteGpu {
  return {
    node: 'n1',
    uuid: `GPU-${i}`,
    gpu_hours: 1,
    util_mean: 0.9,
    sm_active: 0.6,
    mem_peak_bytes: 40 * GiB,
    mem_total_bytes: 80 * GiB,
    ...over,
  };
}
function job(gpus: WasteGpu[], over: Partial<WasteInput> = {}): WasteInput {
  return {
    id: '1',
    user: 'alice',
    account: 'a',
    partition: 'p',
    state: 'COMPLETED',
    start: null,
    elapsed_s: 3600,
    time_limit_s: null,
    gpus,
    ...over,
  };
}
const classes = (j: WasteInput) => wasteOf(j, T).map((r) => [r.class, r.wasted_gpu_hours]);

test('each class: a case and its near miss', () => {
  assert.deepEqual(classes(job([gpu(), gpu({}, 1)])), [], 'two busy GPUs: nothing wasted');
  // unused: utilization under 1 % (and SM activity, where there is GPM)
  assert.deepEqual(classes(job([gpu(), gpu({ util_mean: 0.009, sm_active: 0 }, 1)])), [['unused-gpus', 1]]);
  assert.deepEqual(classes(job([gpu(), gpu({ util_mean: 0.01, sm_active: 0.6 }, 1)])), []);
  assert.deepEqual(
    classes(job([gpu(), gpu({ util_mean: 0.005, sm_active: 0.02 }, 1)])).map(([c]) => c),
    ['fewer-gpus'],
    'SMs at work: not unused (and 0.62 GPUs of work fit one)',
  );
  // low activity: SM activity (else utilization) of the used GPUs under 25 %: their GPU-hours x (1 - activity)
  assert.deepEqual(classes(job([gpu({ sm_active: 0.249, mem_peak_bytes: 60 * GiB })])), [['low-activity', 0.751]]);
  assert.deepEqual(classes(job([gpu({ sm_active: 0.25, mem_peak_bytes: 60 * GiB })])), []);
  assert.deepEqual(
    classes(job([gpu({ sm_active: null, util_mean: 0.2, mem_peak_bytes: 60 * GiB })])),
    [['low-activity', 0.8]],
    'without GPM: utilization',
  );
  // fewer GPUs: activity and memory add up to fewer GPUs than it used
  assert.deepEqual(
    classes(job([gpu({ sm_active: 0.5, mem_peak_bytes: 40 * GiB }), gpu({ sm_active: 0.5, mem_peak_bytes: 40 * GiB }, 1)])),
    [['fewer-gpus', 1]],
  );
  assert.deepEqual(
    classes(job([gpu({ sm_active: 0.5, mem_peak_bytes: 40 * GiB }), gpu({ sm_active: 0.51, mem_peak_bytes: 40 * GiB }, 1)])),
    [],
    'activity 1.01 GPUs',
  );
  assert.deepEqual(
    classes(job([gpu({ sm_active: 0.5, mem_peak_bytes: 40 * GiB }), gpu({ sm_active: 0.5, mem_peak_bytes: 40 * GiB + 1 }, 1)])),
    [],
    'memory just over one GPU',
  );
  // a MIG slice: one whole GPU at 1/7 of the SMs or less and 1/8 of its memory or less: 6/7 of its GPU-hours
  assert.deepEqual(classes(job([gpu({ sm_active: 1 / 7, mem_peak_bytes: 10 * GiB })])), [
    ['low-activity', 0.8571],
    ['mig-slice', 0.8571],
  ]);
  assert.deepEqual(classes(job([gpu({ sm_active: 1 / 7, mem_peak_bytes: 10 * GiB + 1 })])), [['low-activity', 0.8571]]);
  assert.deepEqual(classes(job([gpu({ sm_active: 0.143, mem_peak_bytes: 10 * GiB })])), [['low-activity', 0.857]]);
  assert.deepEqual(
    classes(job([gpu({ uuid: 'MIG-1', sm_active: 0.1, mem_peak_bytes: 1 * GiB })])),
    [['low-activity', 0.9]],
    'a MIG instance already',
  );
  // a time limit 3x the run time or more, an hour or more above it: the GPU-hours held past the end
  assert.deepEqual(classes(job([gpu(), gpu({}, 1)], { elapsed_s: 3600, time_limit_s: 3 * 3600 })), [['time-limit', 4]]);
  assert.deepEqual(classes(job([gpu(), gpu({}, 1)], { elapsed_s: 3600, time_limit_s: 3 * 3600 - 1 })), []);
  assert.deepEqual(classes(job([gpu()], { elapsed_s: 600, time_limit_s: 3600 + 599 })), [], 'less than an hour to spare');
  assert.deepEqual(classes(job([gpu()], { state: 'RUNNING', elapsed_s: 600, time_limit_s: 86400 })), [], 'still running');
  // the rows, most wasted first
  const rows = wasteRows(
    [
      job([gpu({ sm_active: 0.1, mem_peak_bytes: 60 * GiB })], { id: '7' }),
      job([gpu(), gpu({ util_mean: 0, sm_active: 0 }, 1), gpu({ util_mean: 0, sm_active: 0 }, 2)], { id: '8' }),
    ],
    T,
  );
  assert.deepEqual(
    rows.map((r) => [r.id, r.class, r.wasted_gpu_hours, r.gpus, r.gpu_hours]),
    [
      ['8', 'unused-gpus', 2, 3, 3],
      ['7', 'low-activity', 0.9, 1, 1],
    ],
  );
});

/** One hour of one-minute samples per job through the ledger, then each job ends; every batch (and the job-end points) as the sinks see it.
 * */
const JOBS = [
  {
    id: '201',
    user: 'alice',
    gpus: [
      { util: 0.9, sm: 0.6, mem: 40 },
      { util: 0, sm: 0, mem: 0.5 },
    ],
  },
  { id: '202', user: 'alice', gpus: [0, 1, 2, 3].map(() => ({ util: 0.7, sm: 0.2, mem: 10 })) },
  { id: '203', user: 'bob', gpus: [{ util: 0.5, sm: 0.1, mem: 5 }] },
  { id: '204', user: 'bob', gpus: [{ util: 0.6, sm: 0.25, mem: 10 }] },
  { id: '205', user: 'bob', gpus: [{ util: 0.5, sm: 0.1, mem: 10 + 1 / GiB }] },
  // no GPM (an A100): utilization alone
  { id: '206', user: 'carol', gpus: [{ util: 0.1, sm: undefined, mem: 60 }] },
];
const NODE = 'wastenode';
const T0 = Math.floor((Date.now() - 3 * 3_600_000) / 60_000) * 60_000;
const vm = new VictoriaMetrics();
let store: WasteInput[] = [];
let dir = '';
before(async () => {
  await vm.start();
  dir = tempDir('l9gpu-waste-');
  const db = openStore(dir);
  const ledger = new JobLedger(
    db,
    createLogger('error', () => {}),
    { seriesMs: 1e12, jobsMs: 1e12 },
  );
  const otlp = otlpSink.create({
    config: configFrom({ otlp: { endpoint: vm.otlpEndpoint } }),
    log: createLogger('error'),
    resource: { 'service.name': 'l9gpu', 'host.name': NODE },
    startTime: T0,
  });
  await otlp.start!();
  let k = 0;
  for (const j of JOBS) {
    const gpus = j.gpus.map((g) => ({ ...g, uuid: `GPU-${j.id}-${k++}`, index: k }));
    const attrs: Attributes = { 'slurm.job.id': j.id, 'slurm.user': j.user, 'slurm.account': 'acct', 'slurm.partition': 'gpu' };
    recordStart(
      db,
      { jobId: j.id, runKey: 'r0', user: j.user, account: 'acct', partition: 'gpu', startTime: T0 },
      gpus.map((g) => ({ uuid: g.uuid, shared: false })),
      'prolog',
      T0,
    );
    const tick = (minute: number, held: boolean): Batch => {
      const points: Point[] = gpus.flatMap((g) => {
        const a = {
          ...gpuAttributes({
            index: g.index,
            uuid: g.uuid,
            model: 'NVIDIA H100 80GB HBM3',
            vendor: 'nvidia',
            pciBusId: `0000:${g.index}0:00.0`,
          }),
          ...(held ? attrs : {}),
        };
        return [
          { metric: GPU.util, value: g.util, attributes: a },
          { metric: GPU.memUsed, value: g.mem * GiB, attributes: a },
          { metric: GPU.memTotal, value: 80 * GiB, attributes: a },
          ...(g.sm === undefined ? [] : [{ metric: GPU.smActive, value: g.sm, attributes: a }]),
        ];
      });
      const time = T0 + minute * 60_000;
      return {
        source: 'nvml',
        time,
        intervalMs: 60_000,
        points: points.map((p) => ({ ...p, time })),
        ...(held ? { jobs: new Map(gpus.map((g) => [g.uuid, [{ jobId: j.id, runKey: 'r0', share: 1, attributes: attrs }]])) } : {}),
      };
    };
    for (let minute = 0; minute <= 60; minute++) {
      const b = tick(minute, true);
      ledger.observe(b);
      otlp.write(b);
    }
    const last = tick(61, false);
    const ends = ledger.observe(last);
    recordEnd(
      db,
      { jobId: j.id, runKey: 'r0' },
      { endTime: T0 + 60 * 60_000, state: 'COMPLETED', exitCode: 0 },
      [],
      'epilog',
      T0 + 60 * 60_000,
    );
    otlp.write({ ...last, points: ends.map((p) => ({ ...p, time: last.time })) });
  }
  await otlp.close(Date.now() + 15_000);
  assert.equal(otlp.stats.errors, 0);
  const a = answerJobs(
    db,
    NODE,
    null,
    { name: 'root', privileged: true },
    parseJobsRequest(
      JSON.stringify({ op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 0, waste: true }),
    ),
  );
  assert.ok(a.ok && a.op === 'list');
  store = a.waste!;
  db.close();
});
after(async () => {
  await vm.stop();
});

const EXPECTED: [string, string, number][] = [
  ['202', 'low-activity', 3.2],
  ['202', 'fewer-gpus', 3],
  ['201', 'unused-gpus', 1],
  ['203', 'low-activity', 0.9],
  ['205', 'low-activity', 0.9],
  ['206', 'low-activity', 0.9],
  ['203', 'mig-slice', 0.8571],
];
const brief = (rows: readonly WasteRow[]) => rows.map((r) => [r.id, r.class, r.wasted_gpu_hours]);

test(
  'from the store: the classes and GPU-hours of each job (204 and 205 near misses: activity ' +
    "at 25 %, memory a byte over a MIG slice's)",
  () => {
    assert.equal(store.length, JOBS.length);
    assert.deepEqual(brief(wasteRows(store, T)), EXPECTED);
  },
);

test("from PromQL, the cluster's job-end summaries give the same rows; a user sees their own jobs only", async () => {
  const q = { url: vm.url, window: '1d' };
  const cluster = await waitFor(
    "every job's summaries in VictoriaMetrics",
    async () => {
      await vm.flush();
      const got = await wasteInputsFromPromql(q, { name: 'root', privileged: true });
      return got.length === JOBS.length && got.every((j) => j.gpus.every((g) => g.mem_total_bytes !== null)) ? got : undefined;
    },
    30_000,
  );
  const rows = wasteRows(cluster, T);
  assert.deepEqual(brief(rows), EXPECTED);
  // GPU by GPU, the inputs are the store's (the run time apart: the GPUs' time, not the job's)
  const gpus = (js: WasteInput[]) => js.map((j) => [j.id, j.user, j.account, j.partition, j.gpus.map(({ node: _, ...g }) => g)]).sort();
  assert.deepEqual(gpus(cluster), gpus(store));
  const bob = await wasteInputsFromPromql(q, { name: 'bob', privileged: false });
  assert.deepEqual(bob.map((j) => j.id).sort(), ['203', '204', '205']);
});

test('the CLI: text, --json and --csv from the store; --source promql from the backend', async () => {
  const cfg = join(dir, 'waste.ini');
  // this machine's sacct has no accounting to reach: the rows are the same, the time-limit class said to be missing
  writeFileSync(cfg, `[daemon]\nstate_dir = ${dir}\n[jobs]\npromql_url = ${vm.url}\n`);
  const json = await runCli(['jobs', '--waste', '--json', '--config', cfg]);
  assert.equal(json.status, 0, json.stderr);
  assert.deepEqual(brief(JSON.parse(json.stdout) as WasteRow[]), EXPECTED);
  assert.match(json.stderr, /^l9gpu: no time-limit class: .*sacct/m);
  const text = await runCli(['jobs', '--waste', '--config', cfg]);
  assert.match(
    text.stdout,
    new RegExp(
      String.raw`^JOBID +USER +ACCOUNT +PARTITION +STATE +GPUS +GPU-H +CLASS +WASTED GPU-H ` +
        String.raw`+WHY\n202 +alice +acct +gpu +COMPLETED +4 +4\.00 +low-activity +3\.20 +SM ` +
        String.raw`activity 20% on the GPUs it used \(under 25%\)\n202 .* fewer-gpus +3\.00 +4 GPUs` +
        String.raw` used, 1 would do`,
    ),
  );
  assert.match(
    text.stdout,
    /\nwasted GPU-hours by class \(a job may be in several\): low-activity 5\.90, fewer-gpus 3\.00, unused-gpus 1\.00, mig-slice 0\.86\n$/,
  );
  const csv = await runCli(['jobs', '--waste', '--csv', '--config', cfg]);
  assert.match(
    csv.stdout,
    /^id,user,account,partition,state,start,elapsed_s,gpus,gpu_hours,class,wasted_gpu_hours,detail\n202,alice,acct,gpu,COMPLETED,/,
  );
  const promql = await runCli(['jobs', '--waste', '--json', '--source', 'promql', '--since', '1d', '--config', cfg]);
  assert.equal(promql.status, 0, promql.stderr);
  assert.deepEqual(brief(JSON.parse(promql.stdout) as WasteRow[]), EXPECTED);
  // a sacct that answers without these jobs (slurmdbd not told yet, or purged): said, not silent
  const bin = join(dir, 'bin-empty-sacct');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'sacct'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  writeFileSync(join(dir, 'empty-sacct.ini'), `[daemon]\nstate_dir = ${dir}\n[slurm]\nbin_dir = ${bin}\n`);
  const unknown = await runCli(['jobs', '--waste', '--json', '--config', join(dir, 'empty-sacct.ini')]);
  assert.equal(unknown.status, 0, unknown.stderr);
  assert.deepEqual(brief(JSON.parse(unknown.stdout) as WasteRow[]), EXPECTED);
  assert.match(
    unknown.stderr,
    new RegExp(
      String.raw`^l9gpu: no time-limit class for job\(s\) 206, 205, 204, 203, 202 and 1 more: not` +
        String.raw` in Slurm accounting \(slurmdbd may not have the record yet\)$`,
      'm',
    ),
  );
  // a config that names no PromQL backend (the file exists: the refusal is about the URL, not a missing file)
  writeFileSync(join(dir, 'none.ini'), `[daemon]\nstate_dir = ${dir}\n`);
  const none = await runCli(['jobs', '--waste', '--source', 'promql', '--config', join(dir, 'none.ini')]);
  assert.equal(none.status, 2, none.stderr);
  assert.match(none.stderr, /--waste --source promql needs --url \(the PromQL API base URL\) or \[jobs\] promql_url/);
  const both = await runCli(['jobs', '--waste', '--by', 'user', '--config', cfg]);
  assert.equal(both.status, 2, 'one or the other');
});
