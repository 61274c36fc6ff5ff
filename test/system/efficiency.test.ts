/**
 * A job's efficiency figures from the GPU's own counters (issue 33): GPM
 * windows from the fake libnvidia-ml.so.1 through the production sampler and
 * converter, folded by the job ledger into the store, sent over OTLP to real
 * VictoriaMetrics (both namings; job labels on the GPU series, or on the
 * share series alone), and kept in an AdminComment summary. The
 * fake's patterns are known (SM activity alternating 0.2 and 0.8 each second,
 * DRAM constant, FP64 only on one GPU, an A100 without GPM), so each source's
 * means are the exact values, and the three reports agree.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { createLogger } from '../../src/core/log.js';
import type { Attributes, Batch, JobShare, Point } from '../../src/core/metrics/model.js';
import { JobLedger } from '../../src/ledger/ledger.js';
import { identityOf } from '../../src/core/gpu-identity.js';
import { metric } from '../../src/core/metrics/registry.js';
import { otlpSink } from '../../src/sinks/otlp.js';
import { reportFromPromql } from '../../src/jobs/promql.js';
import { findJob, reportFromStore } from '../../src/jobs/report.js';
import type { JobReport } from '../../src/jobs/report-model.js';
import { decodeSummary, encodeSummary, reportFromSummary } from '../../src/jobs/summary.js';
import { finishReport, reportSettings } from '../../src/jobs/show.js';
import { recordStart } from '../../src/store/jobs.js';
import { openStore, STORE_FILE } from '../../src/store/open.js';
import { MIGRATIONS } from '../../src/store/schema.js';
import { emptyRollup, figures, loadRollup, step, type GpuSample } from '../../src/figures/rollup.js';
import { samplesFromPoints } from '../../src/figures/samples.js';
import { configFrom } from '../helpers/config.js';
import { FakeNvml, h100, type FakeNvmlDescription } from '../helpers/fake-nvml.js';
import { gpmWindows, type GpmWindow } from '../helpers/gpm-windows.js';
import { tempDir } from '../helpers/paths.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

const MIB = 1024 * 1024;
const NODE = 'effnode';
const JOB = '4242';
/** GPU 0: SM activity alternating 20 % and 80 % each second, the rest constant, no FP64. */
const busy = {
  graphics: 85,
  sm_occupancy: 35,
  tensor: 40,
  dram: 55,
  hmma: 30,
  integer: 12,
  fp32: 30,
  fp16: 10,
  pcie_tx_mibs: 12,
  pcie_rx_mibs: 30,
  nvlink_rx_mibs: 100,
  nvlink_tx_mibs: 200,
  bursts: { sm: { on_ms: 1000, off_ms: 1000, on: 20, off: 80 } },
};
/** GPU 1: FP64 (counted on this GPU only). */
const fp64 = { graphics: 90, sm: 60, sm_occupancy: 25, tensor: 50, dram: 20, fp64: 25, dfma: 15, fp32: 5 };
const desc: FakeNvmlDescription = {
  driver_version: '595.0.0',
  devices: [h100(0, { gpm: busy }), h100(1, { gpm: fp64 }), { ...h100(2, { name: 'NVIDIA A100-SXM4-80GB' }), gpm: undefined }],
};
const uuid = (i: number) => h100(i).uuid;
const slurm: Attributes = { 'slurm.job.id': JOB, 'slurm.user': 'alice', 'slurm.account': 'physics', 'slurm.partition': 'gpu' };
const held: JobShare[] = [{ jobId: JOB, runKey: 'r0', share: 1, attributes: slurm }];
const SHARE = metric('gpu.job.share');

const fake = new FakeNvml(desc);
const vm = new VictoriaMetrics();
const vmProm = new VictoriaMetrics();
before(async () => {
  process.env.FAKE_NVML_CONFIG = fake.path;
  process.env.FAKE_NVML_GPM_REFRESH_US = '1000000';
  await Promise.all([vm.start(), vmProm.start({ prometheusNaming: true })]);
});
after(async () => {
  await Promise.all([vm.stop(), vmProm.stop()]);
});

/**
 * A window as the attribution stage hands it on (src/pipeline/bound-attribution.ts): one gpu.job.share point per
 * GPU and job with the job's attributes, the batch its holders; with job_labels = points the GPU points carry the
 * job's attributes too, with info they keep the GPU's identity alone.
 */
function attributed(w: GpmWindow, jobs: readonly JobShare[], mode: 'points' | 'info' = 'points'): Batch {
  const labelled = w.points.map((p): Point =>
    mode === 'points' && jobs.length && typeof p.attributes['gpu.uuid'] === 'string'
      ? { ...p, attributes: { ...p.attributes, ...slurm } }
      : p,
  );
  const shares = [0, 1, 2].flatMap((i): Point[] => {
    const util = w.points.find((p) => p.metric.name === 'gpu.utilization' && p.attributes['gpu.uuid'] === uuid(i))!;
    return jobs.map((j) => ({ metric: SHARE, value: j.share, attributes: { ...identityOf(util.attributes), ...j.attributes } }));
  });
  return {
    source: 'nvml',
    time: w.second,
    intervalMs: 1000,
    points: [...labelled, ...shares].map((p) => ({ ...p, time: w.second })),
    ...(jobs.length ? { jobs: new Map([0, 1, 2].map((i) => [uuid(i), jobs])) } : {}),
  };
}

let store: JobReport;
let summary: JobReport;
const promql: JobReport[] = [];
let ends: Point[] = [];

test(
  'the ledger folds the GPM windows of a job into exact time-weighted means: SM 0.5 of ' +
    '0.2/0.8, DRAM 0.55, FP64 on GPU 1 only, NVLink and PCIe bytes; the A100 has none',
  async () => {
    // 7 windows: the binding's first sample starts its covered time, the 6 after it are its seconds (3 at 0.2, 3 at 0.8)
    const ws = await gpmWindows(fake, desc, 8);
    const db = openStore(tempDir());
    const t0 = ws[0]!.second;
    recordStart(
      db,
      { jobId: JOB, runKey: 'r0', user: 'alice', account: 'physics', partition: 'gpu', startTime: t0 },
      [0, 1, 2].map((i) => ({ uuid: uuid(i), shared: false })),
      'prolog',
      t0,
    );
    const ledger = new JobLedger(
      db,
      createLogger('error', () => {}),
      { seriesMs: 86_400_000, jobsMs: 86_400_000 },
    );
    const batches = ws.slice(0, 7).map((w) => attributed(w, held));
    for (const b of batches) assert.deepEqual(ledger.observe(b), []);
    // job_labels = info: the GPU series without the job, joined through its shares
    const infoBatches = ws.slice(0, 7).map((w) => attributed(w, held, 'info'));
    ends = ledger.observe(attributed(ws[7]!, []));
    const found = findJob(db, JOB)!;
    store = reportFromStore(db, found.row, found.runs, NODE, null);
    db.close();

    const g = (i: number) => store.gpus.find((x) => x.uuid === uuid(i))!.figures;
    assert.equal(g(0).seconds, 6);
    assert.deepEqual(g(0).gpm, {
      seconds: 6,
      smActive: 0.5,
      smOccupancy: 0.35,
      tensorActive: 0.4,
      dramActive: 0.55,
      fp64Active: null,
      fp32Active: 0.3,
      fp16Active: 0.1,
      nvlinkBytes: 300 * MIB * 6,
      pcieBytes: 42 * MIB * 6,
    });
    // GPU 1 counts no NVLink (none, not 0) and no GPM PCIe: the plugin's PCIe figure is then nvmlDeviceGetPcieThroughput's (1000 + 2000
    // KiB/s)
    assert.deepEqual(g(1).gpm, {
      seconds: 6,
      smActive: 0.6,
      smOccupancy: 0.25,
      tensorActive: 0.5,
      dramActive: 0.2,
      fp64Active: 0.25,
      fp32Active: 0.05,
      fp16Active: null,
      nvlinkBytes: null,
      pcieBytes: 3000 * 1024 * 6,
    });
    assert.equal(g(2).gpm, null, 'an A100: no GPM');
    assert.deepEqual(g(0).idle, { basis: 'sm', seconds: 0, longestS: 0, longestFrom: null });
    assert.deepEqual(g(2).idle, { basis: 'util', seconds: 0, longestS: 0, longestFrom: null }, 'without GPM, idleness by utilization');

    // the job-end summary metrics: the same means, once per GPU; none of them for the A100
    const end = (name: string, i: number, pipe?: string) =>
      ends
        .filter(
          (p) =>
            p.metric.name === name && p.attributes['gpu.uuid'] === uuid(i) && (pipe === undefined || p.attributes['gpu.pipe'] === pipe),
        )
        .map((p) => p.value);
    assert.deepEqual(end('gpu.job.sm.active', 0), [0.5]);
    assert.deepEqual(end('gpu.job.dram.active', 0), [0.55]);
    assert.deepEqual(end('gpu.job.pipe.active', 1, 'fp64'), [0.25]);
    assert.deepEqual(end('gpu.job.pipe.active', 0, 'fp64'), [], 'FP64 not counted on GPU 0: no point, not 0');
    assert.deepEqual(end('gpu.job.nvlink.io', 0), [300 * MIB * 6]);
    assert.deepEqual(end('gpu.job.pcie.io', 0), [42 * MIB * 6]);
    assert.deepEqual(
      ends.filter((p) => p.attributes['gpu.uuid'] === uuid(2) && /^gpu\.job\.(sm|tensor|dram|pipe|nvlink|pcie)\./.test(p.metric.name)),
      [],
    );
    assert.equal(end('gpu.job.sm.active', 0)[0], g(0).gpm!.smActive);

    // the AdminComment summary carries the figures whole
    summary = reportFromSummary(decodeSummary(encodeSummary(store), `job ${JOB}`)!, store.job, null);

    // OTLP into VictoriaMetrics, both namings (the second fed as job_labels = info sends): the PromQL report folds the
    // same samples with the same step()
    for (const [backend, sent] of [
      [vm, batches],
      [vmProm, infoBatches],
    ] as const) {
      const otlp = otlpSink.create({
        config: configFrom({ otlp: { endpoint: backend.otlpEndpoint } }),
        log: createLogger('error'),
        resource: { 'service.name': 'l9gpu', 'host.name': NODE },
        startTime: t0,
      });
      await otlp.start!();
      for (const b of sent) otlp.write(b);
      await otlp.close(Date.now() + 15_000);
      assert.equal(otlp.stats.errors, 0);
      const report = await waitFor(
        'the job in VictoriaMetrics',
        async () => {
          await backend.flush();
          const r = await reportFromPromql({ url: backend.url, window: '1h' }, JOB, null);
          return r && r.gpus.length === 3 && r.gpus.every((x) => x.figures.samples === 7) ? r : undefined;
        },
        30_000,
      );
      promql.push(report);
    }
  },
);

test(
  'the store, the AdminComment summary and PromQL (both namings, both job_labels modes) give ' +
    'the same GPM figures and idleness, GPU by GPU',
  () => {
    const gpm = (r: JobReport) => r.gpus.map((g) => [g.uuid, g.figures.gpm, g.figures.idle]);
    assert.deepEqual(gpm(summary), gpm(store));
    assert.equal(promql.length, 2, 'both namings (the second fed as job_labels = info sends)');
    for (const r of promql) assert.deepEqual(gpm(r), gpm(store), r.source);
  },
);

test(
  "the Efficiency section, as `jobs show` lays it on (the reader's [jobs] thresholds), is the " +
    "same from the store, the summary and PromQL; the job's means are exact",
  () => {
    const settings = reportSettings(configFrom({}));
    // the job's owner reads it: the access rule passes every source
    const finished = (r: JobReport) => {
      const done = finishReport(r, undefined, settings, { name: 'alice', privileged: false });
      assert.ok('report' in done, JSON.stringify(done));
      return done.report;
    };
    const fromStore = finished(store);
    const e = fromStore.efficiency!;
    assert.deepEqual(finished(summary).efficiency, e);
    for (const r of promql) assert.deepEqual(finished(r).efficiency, e, r.source);
    // GPU 0 0.5 and GPU 1 0.6 over 6 s each; FP64 GPU 1's alone; bytes added up
    assert.deepEqual(e.job.means, {
      gpm_s: 12,
      sm_active: 0.55,
      sm_occupancy: 0.3,
      tensor_active: 0.45,
      dram_active: 0.375,
      fp64_active: 0.25,
      fp32_active: 0.175,
      fp16_active: 0.1,
      nvlink_bytes: 300 * MIB * 6,
      pcie_bytes: 42 * MIB * 6 + 3000 * 1024 * 6,
    });
    assert.equal(e.gpus_with_gpm, 2);
    // GPU 0: DRAM 55 %; GPU 1: tensor 50 %; the A100: no counters
    assert.deepEqual(
      e.gpus.map((g) => g.class),
      ['memory-bound', 'tensor-bound', 'no-gpm'],
    );
    assert.deepEqual(e.job.imbalance, { max: 0.6, min: 0.5, ratio: 1.2, max_gpu: uuid(1), min_gpu: uuid(0) });
    // over the job DRAM 37.5 % and tensor 45 %: neither at its threshold, occupancy 30 % not low
    assert.equal(e.job.class, 'mixed');
    assert.equal(e.job.score, Math.round((((0.5 + 0.55) / 2 + (0.6 + 0.5) / 2) / 2) * 1e4) / 1e4);
  },
);

test(
  'idle stretches: gaps with SM activity below 1 % (by utilization where the GPU has no GPM), ' +
    'the total, the longest and when it began; a gap past the cap counts only the cap',
  () => {
    const r = emptyRollup();
    const t0 = 1_800_000_000_000;
    // 10 s apart: busy, 3 idle gaps, busy, 1 idle gap, then a 60 s gap (daemon down) idle: capped at 25 s
    const sm = [0.5, 0, 0.005, 0, 0.5, 0, 0.3];
    sm.forEach((v, i) => step(r, { t: t0 + i * 10_000, util: 1, gpm: { smActive: v } }, 25_000));
    step(r, { t: t0 + 60_000 + 60_000, util: 1, gpm: { smActive: 0 } }, 25_000);
    assert.deepEqual(figures(r).idle, { basis: 'sm', seconds: 65, longestS: 30, longestFrom: t0 });
    assert.equal(figures(r).gpm!.seconds, 85);
    assert.equal(
      figures(r).gpm!.smActive,
      Math.round((((0 + 0.005 + 0 + 0.5 + 0 + 0.3) * 10) / 85) * 1e6) / 1e6,
      'each window weighted by its (capped) gap',
    );
    // without GPM: utilization judges, and a near miss (1 %) is not idle
    const u = emptyRollup();
    [0.5, 0.009, 0.01, 0].forEach((v, i) => step(u, { t: t0 + i * 10_000, util: v }, 25_000));
    assert.deepEqual(figures(u).idle, { basis: 'util', seconds: 20, longestS: 10, longestFrom: t0 });
    assert.equal(figures(u).gpm, null);
  },
);

test('a rollup an older daemon stored (no GPM sums) goes on from its figures, and an existing store gains the GPM columns', () => {
  const dir = tempDir();
  const old = new Database(join(dir, STORE_FILE));
  for (const m of MIGRATIONS.slice(0, 5)) old.exec(m);
  old.pragma('user_version = 5');
  const r = emptyRollup();
  step(r, { t: 1000, util: 0.5 }, 25_000);
  step(r, { t: 11_000, util: 0.5 }, 25_000);
  const before = Object.fromEntries(Object.entries(r).filter(([k]) => !/^(gpm|idle)/.test(k)));
  old
    .prepare(
      `INSERT INTO job_gpu (job_id, run_key, gpu_uuid, samples, covered_s, gpu_hours, energy_j, ` +
        `state, updated_at) VALUES ('1', 'r0', 'GPU-a', 2, 10, 0, 0, ?, 0)`,
    )
    .run(JSON.stringify(before));
  old.close();
  const db = openStore(dir);
  const row = db.prepare('SELECT state, sm_active, idle_s FROM job_gpu').get() as {
    state: string;
    sm_active: number | null;
    idle_s: number | null;
  };
  assert.deepEqual([row.sm_active, row.idle_s], [null, null], 'rows of before: unknown, not 0');
  db.close();
  const again = loadRollup(row.state);
  assert.equal(figures(again).gpm, null);
  const next: GpuSample = { t: 21_000, util: 0.5, gpm: { smActive: 0.4 } };
  step(again, next, 25_000);
  assert.deepEqual(
    [figures(again).seconds, figures(again).utilMean, figures(again).gpm!.smActive, figures(again).gpm!.seconds],
    [20, 0.5, 0.4, 10],
  );
});

test(
  'a GPU shared by two jobs has each point twice in a batch (one per job): its NVLink and ' +
    'PCIe rates are each direction once, not twice',
  () => {
    const id = { 'gpu.uuid': 'GPU-a' };
    const rate = (name: string, direction: string, value: number, job: string) => ({
      name,
      value,
      attributes: { ...id, 'network.io.direction': direction, 'slurm.job.id': job },
    });
    const points = ['1', '2'].flatMap((job) => [
      rate('gpu.pcie.throughput', 'transmit', 12 * MIB, job),
      rate('gpu.pcie.throughput', 'receive', 30 * MIB, job),
      rate('gpu.nvlink.throughput', 'transmit', 200 * MIB, job),
      rate('gpu.nvlink.throughput', 'receive', 100 * MIB, job),
      { name: 'gpu.sm.active', value: 0.5, attributes: { ...id, 'slurm.job.id': job } },
    ]);
    const s = samplesFromPoints(points, 1000, (p) => p.name).get('GPU-a')!;
    assert.deepEqual([s.gpm!.pcieBps, s.gpm!.nvlinkBps, s.gpm!.smActive], [42 * MIB, 300 * MIB, 0.5]);
  },
);
