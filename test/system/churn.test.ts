/**
 * The churn simulator's counting (bench/churn.ts, docs/scale.md): a small run
 * in each [attribution] job_labels mode into real VictoriaMetrics, whose
 * count of the series it created is held to the series the simulator sent
 * and to what the registry and the sim plugin say a GPU and a job make.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { BudgetLedger, DEFAULT_LIMITS } from '../../src/core/limits.js';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { SUMMARY_METRICS_WITHOUT_GPM } from '../../src/ledger/ledger.js';
import { HEALTH_METRICS } from '../../src/health/tracker.js';
import { simPlugin } from '../../plugins/sim/index.js';
import { simulateChurn, type ChurnResult } from '../../bench/churn.js';
import { configFrom } from '../helpers/config.js';

/** The series one sim GPU emits (its identity alone): one collection's points per GPU. */
async function simSeriesPerGpu(): Promise<number> {
  const p = await simPlugin.create({
    config: configFrom({ sim: { gpus: '1' } }),
    log: createLogger('error', () => {}),
    hostName: 'n',
    limits: DEFAULT_LIMITS,
    budgets: new BudgetLedger(),
  });
  const out = new PointBuffer();
  await p.collect(out, AbortSignal.timeout(5000));
  return out.points.length;
}

test(
  'churn simulator: VictoriaMetrics creates exactly the series the nodes sent, and per GPU ' +
    "and GPU-job what the registry says: the GPU's series, health and the share at the start; " +
    "then per GPU-job start a copy of the GPU's series (points mode only) and a share, per end " +
    'the job-end summaries (per GPU in points mode, per job and node in info mode)',
  async () => {
    const sim = await simSeriesPerGpu();
    const perGpu = sim + HEALTH_METRICS.length + 1;
    const o = { nodes: 2, gpusPerNode: 3, hours: 0.5, tickS: 10, jobMinutes: 4, seed: 5 };
    const runs: ChurnResult[] = [];
    for (const mode of ['points', 'info'] as const) {
      const r = await simulateChurn({ ...o, mode });
      runs.push(r);
      assert.ok(r.gpuJobStarts > 10 && r.gpuJobEnds > 10, `${mode}: jobs came and went (${r.gpuJobStarts} starts, ${r.gpuJobEnds} ends)`);
      assert.equal(r.ignoredRows, 0, `${mode}: every sample stored`);
      assert.equal(r.totalSeries, r.sentSeries, `${mode}: VictoriaMetrics' series are the ones sent`);
      assert.equal(r.warmupSeries, o.nodes * o.gpusPerNode * perGpu, `${mode}: the first tick, every GPU in a job`);
      const perStart = (mode === 'points' ? sim : 0) + 1;
      // sim GPUs have no GPM: their job-end summaries are the plain ones, per GPU in points mode, per job and node in info
      const summaries = (mode === 'points' ? r.gpuJobEnds : r.jobEnds) * SUMMARY_METRICS_WITHOUT_GPM.length;
      assert.equal(r.newSeries, r.gpuJobStarts * perStart + summaries, mode);
    }
    const [points, info] = runs as [ChurnResult, ChurnResult];
    assert.ok(info.jobEnds < info.gpuJobEnds, `jobs of several GPUs ended (${info.jobEnds} jobs, ${info.gpuJobEnds} GPU-jobs)`);
    // the same jobs and samples in both modes: only their labels differ, and the summaries' grain (one sample each)
    const n = SUMMARY_METRICS_WITHOUT_GPM.length;
    assert.deepEqual(
      [info.gpuJobStarts, info.gpuJobEnds, info.jobEnds, info.totalSamples - info.jobEnds * n],
      [points.gpuJobStarts, points.gpuJobEnds, points.jobEnds, points.totalSamples - points.gpuJobEnds * n],
    );
  },
);
