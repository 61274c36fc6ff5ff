/** The AdminComment summary (src/jobs/summary.ts) and the slurmctld epilog's reading of its environment (slurm/ctld-epilog.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { decodeSummary, encodeSummary, isSummary, MAX_SUMMARY_CHARS, reportFromSummary } from '../../src/jobs/summary.js';
import { emptyRollup, figures, step } from '../../src/figures/rollup.js';
import { headerOf } from '../../src/jobs/report.js';
import type { GpuRow, JobReport } from '../../src/jobs/report-model.js';
import { renderReport } from '../../src/jobs/render.js';
import { style } from '../../src/core/text-table.js';
import { epilogJob } from '../../slurm/ctld-epilog.js';

function gpu(i: number, util: number): GpuRow {
  const r = emptyRollup();
  for (let t = 0; t < 20; t++)
    step(
      r,
      { t: 1_000_000 + t * 10_000, util, memUsed: 2 ** 30 * (i + 1), memTotal: 80 * 2 ** 30, power: 300, energy: 1000 + t * 3000 },
      25_000,
    );
  return {
    node: `gpu${String(Math.floor(i / 8)).padStart(3, '0')}`,
    uuid: `GPU-${String(i).padStart(8, '0')}-aaaa-bbbb-cccc-dddddddddddd`,
    model: 'NVIDIA H100 80GB HBM3',
    index: i % 8,
    shared: false,
    figures: figures(r),
  };
}

const header = headerOf(
  {
    job_id: '42',
    run_key: '0',
    user: 'alice',
    uid: 1000,
    account: 'phys',
    partition: 'h100',
    qos: 'normal',
    name: 'train',
    cluster: 'c1',
    array_job_id: null,
    array_task_id: null,
    start_time: 1_000_000,
    end_time: 1_090_000,
    state: 'COMPLETED',
    exit_code: 0,
  },
  1,
  ['gpu000'],
);
const report = (gpus: GpuRow[], minutes = 10): JobReport => ({
  source: 'promql',
  job: header,
  gpus,
  totals: {
    gpus: 0,
    gpu_hours: 0,
    util_mean: null,
    mem_peak_bytes: null,
    energy_j: 0,
    energy_kwh: 0,
    cost: null,
    currency: null,
    co2e_g: null,
  } as JobReport['totals'],
  inference: null,
  communication: null,
  series: Array.from({ length: minutes }, (_, m) => [m * 60_000, 0.5] as [number, number]),
  notes: [],
});

test("a summary round-trips the GPU figures; the report is worked out again from them; sacctmgr's lowercasing does not matter", () => {
  const r = report([gpu(0, 0.9), gpu(1, 0)]);
  const text = encodeSummary(r, Date.parse('2026-11-23T12:00:00Z'));
  assert.match(text, /^L9G1:[0-9a-f]+$/);
  assert.ok(isSummary(text) && isSummary(text.toLowerCase()));
  const s = decodeSummary(text.toLowerCase(), 'job 42')!;
  assert.equal(s.made, '2026-11-23T12:00:00.000Z');
  assert.deepEqual(s.gpus, r.gpus);
  const back = reportFromSummary(s, header, null);
  assert.equal(back.source, 'sacct');
  assert.equal(back.totals.gpus, 2);
  assert.equal(back.totals.util_mean, 0.45);
  assert.ok(
    back.notes.some((n) => n.code === 'unused-gpus'),
    'notes from the figures: the idle GPU',
  );
});

test('not ours, damaged, or from a newer l9gpu: undefined, or an error naming the job', () => {
  assert.equal(decodeSummary('JS1:H4sIAAAA', 'job 42'), undefined);
  assert.equal(decodeSummary('', 'job 42'), undefined);
  assert.throws(
    () => decodeSummary('L9G1:zz', 'job 42'),
    /^Error: job 42: the l9gpu summary in AdminComment is damaged \(not hexadecimal\)/,
  );
  assert.throws(() => decodeSummary('L9G1:1f8b', 'job 42'), /job 42: the l9gpu summary in AdminComment is damaged/);
  const v2 = encodeSummary(report([gpu(0, 1)])).replace(/^L9G1:/, '');
  const bumped = 'L9G1:' + gzipSync(JSON.stringify({ ...JSON.parse(gunzipSync(Buffer.from(v2, 'hex')).toString()), v: 2 })).toString('hex');
  assert.throws(() => decodeSummary(bumped, 'job 42'), /not version 1 of l9gpu's/);
});

test(
  'a summary with a field of the wrong kind is damaged, named by the field (not a TypeError ' +
    'deep in the report); a gzip bomb is damaged too',
  () => {
    const good = JSON.parse(gunzipSync(Buffer.from(encodeSummary(report([gpu(0, 0.5)])).slice(5), 'hex')).toString()) as Record<
      string,
      unknown
    >;
    const spoilt = (change: (s: { gpus: Record<string, unknown>[] } & Record<string, unknown>) => void): string => {
      const s = structuredClone(good) as { gpus: Record<string, unknown>[] } & Record<string, unknown>;
      change(s);
      return 'L9G1:' + gzipSync(JSON.stringify(s)).toString('hex');
    };
    const damaged = (comment: string) => {
      try {
        decodeSummary(comment, 'job 42');
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    assert.equal(
      damaged(spoilt((s) => ((s.gpus[0]!.figures as Record<string, unknown>).energyJ = '1'))),
      'job 42: the l9gpu summary in AdminComment is damaged (gpus[0].figures.energyJ is not a number)',
    );
    assert.equal(
      damaged(spoilt((s) => (s.gpus[0]!.node = null))),
      'job 42: the l9gpu summary in AdminComment is damaged (gpus[0].node is not a string)',
    );
    assert.equal(
      damaged(spoilt((s) => ((s.gpus[0]!.figures as Record<string, unknown>).xid = { 79: 'x' }))),
      'job 42: the l9gpu summary in AdminComment is damaged (gpus[0].figures.xid is not a map of numbers)',
    );
    assert.equal(
      damaged(spoilt((s) => (s.gpus = {} as never))),
      'job 42: the l9gpu summary in AdminComment is damaged (gpus is not a list)',
    );
    assert.equal(
      damaged(spoilt((s) => (s.communication = { time_s: 1, peak_bus_bw_Bps: null, collectives: [{}], slowest_ranks: [] }))),
      'job 42: the l9gpu summary in AdminComment is damaged (communication.collectives[0].comm is not a string)',
    );
    assert.equal(
      damaged(spoilt((s) => delete s.communication)),
      'job 42: the l9gpu summary in AdminComment is damaged (communication is not an object)',
    );
    assert.equal(
      damaged('L9G1:' + gzipSync(Buffer.alloc(16 << 20, 0x20)).toString('hex')),
      'job 42: the l9gpu summary in AdminComment is damaged (Cannot create a Buffer larger than 8388608 bytes)',
    );
    assert.equal(damaged(spoilt(() => {})), 'no error');
  },
);

test(
  'a report from the summary says where its figures came from: Slurm accounting, not a PromQL ' +
    'backend; energy no GPU measured is unknown, not 0',
  () => {
    const s = decodeSummary(encodeSummary(report([gpu(0, 0.9)])), 'job 42')!;
    assert.match(
      renderReport(reportFromSummary(s, header, null), style(false)),
      /^Job 42 \(train\) {3}source: Slurm accounting \(the summary the slurmctld epilog kept in the job's AdminComment\)$/m,
    );
    // a GPU without an energy counter and with one power reading (a MIG instance has neither)
    const none = { ...gpu(1, 0.5), figures: { ...figures(emptyRollup()), samples: 1, seconds: 10 } };
    const r = reportFromSummary(decodeSummary(encodeSummary(report([none])), 'job 42')!, header, null);
    assert.deepEqual([r.totals.energy_j, r.totals.energy_kwh], [null, null]);
    const text = renderReport(r, style(false));
    assert.match(text, /energy unknown \(no energy counter or power readings\)/);
    assert.doesNotMatch(text, /\b0\.000\b/, "no 0.000 kWh, overall or in the GPU's row");
  },
);

test("a long job's plot is averaged down; a job too large for AdminComment gives up its plot first", () => {
  const long = decodeSummary(encodeSummary(report([gpu(0, 0.5)], 1000)), 'j')!;
  assert.ok(long.series.length <= 120 && long.series.length >= 100, `${long.series.length} points`);
  const big = report(
    Array.from({ length: 96 }, (_, i) => gpu(i, (i % 10) / 10)),
    1000,
  );
  const text = encodeSummary(big);
  assert.ok(text.length <= MAX_SUMMARY_CHARS, `${text.length} characters`);
  assert.equal(decodeSummary(text, 'j')!.gpus.length, 96);
  assert.throws(() => encodeSummary(report(Array.from({ length: 4000 }, (_, i) => gpu(i, (i % 97) / 97)))), /more than AdminComment holds/);
});

test("the epilog's job: the raw id for the metrics, ARRAYID_TASKID for accounting; a job that never ran is none; no id is an error", () => {
  assert.deepEqual(epilogJob({ SLURM_JOB_ID: '77', SLURM_JOB_NODELIST: 'gpu[001-002]' }), { rawId: '77', acctId: '77' });
  assert.deepEqual(epilogJob({ SLURM_JOB_ID: '81', SLURM_ARRAY_JOB_ID: '80', SLURM_ARRAY_TASK_ID: '1', SLURM_JOB_NODELIST: 'gpu001' }), {
    rawId: '81',
    acctId: '80_1',
  });
  for (const nodes of ['', '(null)', 'None assigned', undefined])
    assert.equal(epilogJob({ SLURM_JOB_ID: '9', SLURM_JOB_NODELIST: nodes }), undefined);
  assert.throws(() => epilogJob({}), /SLURM_JOB_ID is not set/);
  assert.throws(
    () => epilogJob({ SLURM_JOB_ID: 'abc', SLURM_JOB_NODELIST: 'gpu001' }),
    /^Error: SLURM_JOB_ID is "abc", not a job id: slurmctld sets it/,
  );
  assert.throws(
    () => epilogJob({ SLURM_JOB_ID: '12345678901', SLURM_JOB_NODELIST: 'gpu001' }),
    /SLURM_JOB_ID is "12345678901", not a job id/,
  );
  assert.deepEqual(
    epilogJob({ SLURM_JOB_ID: '81', SLURM_ARRAY_JOB_ID: '8'.repeat(10_000), SLURM_ARRAY_TASK_ID: '1', SLURM_JOB_NODELIST: 'gpu001' }),
    { rawId: '81', acctId: '81' },
    'an array id past uint32 is none',
  );
});
