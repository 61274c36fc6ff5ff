/**
 * The Efficiency section's rules (docs/jobs.md, src/jobs/efficiency.ts): each
 * class with a case and its near miss at the default [jobs] thresholds, the
 * thresholds read from [jobs], the job's means over its GPUs, imbalance, idle
 * stretches, the score, the notes, and the text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_IDLE, type GpmFigures, type GpuFigures } from '../../src/figures/rollup.js';
import { classify, efficiencyNotes, efficiencyOf, efficiencyThresholds } from '../../src/jobs/efficiency.js';
import type { EfficiencyMeans, GpuRow, JobReport } from '../../src/jobs/report-model.js';
import { renderReport } from '../../src/jobs/render.js';
import { style } from '../../src/core/text-table.js';
import { configFrom } from '../helpers/config.js';

const T = efficiencyThresholds(configFrom({}));

function means(over: Partial<EfficiencyMeans> = {}): EfficiencyMeans {
  return {
    gpm_s: 3600,
    sm_active: 0.6,
    sm_occupancy: 0.4,
    tensor_active: 0.1,
    dram_active: 0.2,
    fp64_active: null,
    fp32_active: 0.2,
    fp16_active: null,
    nvlink_bytes: null,
    pcie_bytes: null,
    ...over,
  };
}
const cls = (m: Partial<EfficiencyMeans> | null, util: number | null = 0.9) => classify(m && means(m), util, T).class;

test("the default thresholds are [jobs]' defaults, and [jobs] sets them", () => {
  assert.deepEqual(T, {
    idleSmActive: 0.05,
    inputBoundUtil: 0.5,
    inputBoundSmActive: 0.3,
    memoryBoundDram: 0.5,
    computeBoundPipe: 0.5,
    lowOccupancy: 0.2,
    imbalance: 1.5,
  });
  const set = efficiencyThresholds(
    configFrom({ jobs: { efficiency_idle_sm_active: '0.1', efficiency_memory_bound_dram: '0.7', efficiency_imbalance: '3' } }),
  );
  assert.deepEqual([set.idleSmActive, set.memoryBoundDram, set.imbalance], [0.1, 0.7, 3]);
  assert.throws(() => configFrom({ jobs: { efficiency_compute_bound_pipe: '1.5' } }), /efficiency_compute_bound_pipe/);
});

test('each class: a case and its near miss', () => {
  // idle: SM active below 5 %
  assert.equal(cls({ sm_active: 0.049 }), 'idle');
  assert.notEqual(cls({ sm_active: 0.05 }), 'idle');
  // input-bound: utilization >= 50 % and SM active < 30 %
  assert.equal(cls({ sm_active: 0.29 }, 0.5), 'input-bound');
  assert.notEqual(cls({ sm_active: 0.3 }, 0.5), 'input-bound', 'SMs at the threshold');
  assert.notEqual(cls({ sm_active: 0.29 }, 0.49), 'input-bound', 'utilization short of it');
  // memory-bound: DRAM >= 50 %
  assert.equal(cls({ dram_active: 0.5 }), 'memory-bound');
  assert.notEqual(cls({ dram_active: 0.499 }), 'memory-bound');
  // compute-bound, by pipe: >= 50 %
  assert.equal(cls({ tensor_active: 0.5 }), 'tensor-bound');
  assert.notEqual(cls({ tensor_active: 0.499 }), 'tensor-bound');
  assert.equal(cls({ fp64_active: 0.5 }), 'fp64-bound');
  assert.notEqual(cls({ fp64_active: 0.499 }), 'fp64-bound');
  assert.equal(cls({ fp32_active: 0.5 }), 'fp32-bound');
  assert.notEqual(cls({ fp32_active: 0.499 }), 'fp32-bound');
  // two at their thresholds: the higher names the class, and the rule says the other
  assert.equal(cls({ dram_active: 0.6, tensor_active: 0.7 }), 'tensor-bound');
  assert.match(classify(means({ dram_active: 0.6, tensor_active: 0.7 }), 0.9, T).rule, /tensor active 70% >= 50%, above DRAM 60%/);
  // low occupancy: < 20 %, nothing at its limit
  assert.equal(cls({ sm_occupancy: 0.19 }), 'low-occupancy');
  assert.equal(cls({ sm_occupancy: 0.2 }), 'mixed');
  assert.equal(cls({ sm_occupancy: 0.19, dram_active: 0.5 }), 'memory-bound', 'a limit reached comes before occupancy');
  // no GPM: utilization alone
  assert.equal(cls(null, 0.04), 'idle');
  assert.equal(cls(null, 0.05), 'no-gpm');
  assert.equal(cls(null, null), 'no-gpm');
  assert.equal(cls({ sm_active: null }), 'no-gpm', 'a GPM GPU without SM activity has no verdict of its own');
});

test('the score: the mean of SM activity and the highest of DRAM, tensor and FP pipe activity; none without GPM', () => {
  assert.equal(classify(means({ sm_active: 0.8, dram_active: 0.3, tensor_active: 0.6 }), 0.9, T).score, 0.7);
  assert.equal(classify(means({ sm_active: 0.8, dram_active: null, tensor_active: null, fp32_active: null }), 0.9, T).score, 0.4);
  assert.equal(classify(null, 0.9, T).score, null);
});

const G = 1024 ** 3;
function gpu(uuid: string, index: number, gpm: Partial<GpmFigures> | null, over: Partial<GpuFigures> = {}): GpuRow {
  return {
    node: 'n1',
    uuid,
    model: 'NVIDIA H100 80GB HBM3',
    index,
    shared: false,
    figures: {
      samples: 361,
      seconds: 3600,
      gpuHours: 1,
      utilMean: 0.9,
      utilMax: 1,
      memUtilMean: 0.5,
      memUsedMax: 60 * G,
      memTotal: 80 * G,
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
      gpm: gpm && {
        seconds: 3600,
        smActive: 0.6,
        smOccupancy: 0.4,
        tensorActive: 0.1,
        dramActive: 0.2,
        fp64Active: null,
        fp32Active: 0.2,
        fp16Active: null,
        nvlinkBytes: 1e9,
        pcieBytes: 2e9,
        ...gpm,
      },
      idle: { basis: gpm ? 'sm' : 'util', seconds: 0, longestS: 0, longestFrom: null },
      ...over,
    },
  };
}

test(
  'the job: means over the GPUs with GPM weighted by their GPM seconds, bytes added up; ' +
    'imbalance; the longest idle stretch; an A100 said to have no GPM',
  () => {
    const t0 = Date.parse('2026-11-27T10:00:00Z');
    const gpus = [
      gpu('GPU-aaaaaaaaaaaa', 0, { smActive: 0.8, dramActive: 0.6, seconds: 3600 }),
      gpu(
        'GPU-bbbbbbbbbbbb',
        1,
        { smActive: 0.2, dramActive: 0.3, fp64Active: 0.1, seconds: 1200 },
        { idle: { basis: 'sm', seconds: 1500, longestS: 900, longestFrom: t0 } },
      ),
      { ...gpu('GPU-cccccccccccc', 2, null, { utilMean: 0.7 }), model: 'NVIDIA A100-SXM4-80GB' },
    ];
    const e = efficiencyOf(gpus, T)!;
    assert.equal(e.gpus_with_gpm, 2);
    assert.deepEqual(
      e.gpus.map((g) => g.class),
      ['memory-bound', 'input-bound', 'no-gpm'],
    );
    assert.deepEqual(e.job.means, {
      gpm_s: 4800,
      sm_active: 0.65,
      sm_occupancy: 0.4,
      tensor_active: 0.1,
      dram_active: 0.525,
      fp64_active: 0.1,
      fp32_active: 0.2,
      fp16_active: null,
      nvlink_bytes: 2e9,
      pcie_bytes: 4e9,
    });
    assert.equal(e.job.util_mean, 0.9, 'over the GPUs of the means');
    assert.equal(e.job.class, 'memory-bound');
    assert.deepEqual(e.job.imbalance, { max: 0.8, min: 0.2, ratio: 4, max_gpu: 'GPU-aaaaaaaaaaaa', min_gpu: 'GPU-bbbbbbbbbbbb' });
    assert.deepEqual(e.job.idle, {
      basis: 'sm',
      seconds: 1500,
      longest_s: 900,
      longest_start: '2026-11-27T10:00:00.000Z',
      longest_gpu: 'GPU-bbbbbbbbbbbb',
    });
    // the scores: (0.8 + 0.6) / 2 and (0.2 + 0.3) / 2, one GPU-hour each
    assert.deepEqual(
      e.gpus.map((g) => g.score),
      [0.7, 0.25, null],
    );
    assert.equal(e.job.score, 0.475);
    const codes = efficiencyNotes(e, gpus, false, T).map((n) => n.code);
    assert.deepEqual(codes, ['no-gpm', 'memory-bound', 'sm-imbalance', 'idle-stretch']);
    assert.deepEqual(efficiencyNotes(e, gpus, true, T), [], 'too short to judge: no advice');
  },
);

test("notes' near misses: imbalance under the factor, a short idle stretch, FP32 with the tensor cores already busy", () => {
  const even = [
    gpu('GPU-a', 0, { smActive: 0.6 }),
    gpu('GPU-b', 1, { smActive: 0.401 }, { idle: { basis: 'sm', seconds: 299, longestS: 299, longestFrom: 0 } }),
  ];
  assert.deepEqual(
    efficiencyNotes(efficiencyOf(even, T), even, false, T).map((n) => n.code),
    [],
    '1.496x; a 299 s stretch',
  );
  const fp32 = [gpu('GPU-a', 0, { fp32Active: 0.6, tensorActive: 0.24 })];
  assert.deepEqual(
    efficiencyNotes(efficiencyOf(fp32, T), fp32, false, T).map((n) => n.code),
    ['fp32-not-tensor'],
  );
  const mixed = [gpu('GPU-a', 0, { fp32Active: 0.6, tensorActive: 0.25 })];
  assert.deepEqual(
    efficiencyNotes(efficiencyOf(mixed, T), mixed, false, T).map((n) => n.code),
    [],
  );
  const noGpm = [gpu('GPU-a', 0, null, { utilMean: 0.02 })];
  const e = efficiencyOf(noGpm, T)!;
  assert.deepEqual([e.gpus_with_gpm, e.job.class, e.job.means, e.job.score], [0, 'idle', null, null]);
});

test(
  "the text: one row per GPU and the job's, the class and its rule, imbalance and the longest " + 'idle stretch; a job without GPM says so',
  () => {
    const gpus = [
      gpu('GPU-aaaaaaaaaaaa', 0, { smActive: 0.8, dramActive: 0.6 }),
      gpu(
        'GPU-bbbbbbbbbbbb',
        1,
        { smActive: 0.4 },
        { idle: { basis: 'sm', seconds: 600, longestS: 600, longestFrom: Date.parse('2026-11-27T10:00:00Z') } },
      ),
    ];
    const report = {
      source: 'store',
      gpus,
      inference: null,
      communication: null,
      series: [],
      notes: [],
      job: {
        id: '7',
        job_id: '7',
        run: 'r0',
        user: 'alice',
        uid: 1,
        account: 'a',
        partition: 'p',
        qos: null,
        name: null,
        cluster: null,
        state: 'COMPLETED',
        start: null,
        end: null,
        elapsed_s: 3600,
        exit_code: 0,
        nodes: ['n1'],
        earlier_runs: 0,
        cpus: null,
        mem_req_bytes: null,
        mem_max_rss_bytes: null,
        time_limit_s: null,
        time_efficiency: null,
        gpus_alloc: null,
        exit_signal: null,
      },
      totals: {
        gpus: 2,
        gpu_hours: 2,
        util_mean: 0.9,
        mem_peak_bytes: 60 * G,
        energy_j: 4e6,
        energy_kwh: 1.1,
        cost: null,
        currency: null,
        co2e_g: null,
      },
      efficiency: efficiencyOf(gpus, T),
    } satisfies JobReport;
    const text = renderReport(report, style(false));
    assert.match(text, /Efficiency \(GPU counters, GPM: 2 of 2 GPUs\)/);
    assert.match(
      text,
      /job +mixed +score 0\.50 +SMs busy; no pipe or DRAM at its threshold/,
      'DRAM 40 % over the job: no class of its own',
    );
    assert.match(text, /^ +job +60% +40% +10% +40% +- +20% +- +2\.0 +4\.0 +00:10:00 +mixed +0\.50$/m);
    assert.match(text, /^ +n1 +0 +80% +40% +10% +60% +- +20% +- +1\.0 +2\.0 +00:00:00 +memory-bound +0\.70$/m);
    assert.match(text, /imbalance +SM active 80% \(GPU-aaaaaaaa\) \/ 40% \(GPU-bbbbbbbb\) = 2\.00x/);
    assert.match(text, /idle +00:10:00 GPU-time \(SM active < 1%\); longest 00:10:00 on GPU-bbbbbbbb from 2026-11-27T10:00:00\.000Z/);
    const old = renderReport(
      { ...report, gpus: [gpu('GPU-c', 0, null)], efficiency: efficiencyOf([gpu('GPU-c', 0, null)], T) },
      style(false),
    );
    assert.match(old, /Efficiency \(no GPU of the job has GPM counters: utilization only\)/);
    assert.match(old, /job +no-gpm/);
  },
);

test('a GPU row written before GPM (no gpm, idleness not judged) has a section all the same', () => {
  const e = efficiencyOf([gpu('GPU-a', 0, null, { gpm: null, idle: NO_IDLE })], T)!;
  assert.deepEqual([e.gpus_with_gpm, e.job.idle.basis, e.gpus[0]!.class], [0, 'none', 'no-gpm']);
});
