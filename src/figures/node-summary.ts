/**
 * The grain of the job-end summaries. Per GPU (job_labels = points): one set
 * per run and GPU, the GPU's identity on it. Per node (job_labels = info): one
 * set per run and node, `gpu.count` on it and no GPU identity, so that a job
 * start makes its shares (one per GPU) and one set of summaries whatever its
 * GPU count (docs/scale.md). The per-GPU figures stay in the store and the
 * AdminComment either way; `jobs show --source promql` rebuilds them from the
 * GPU series and the share.
 *
 * A run's figures on the node fold as the report's totals fold a job's GPUs
 * (src/jobs/report.ts totalsOf): GPU-seconds, energy, cost and CO2e summed,
 * utilization and SM activity means weighted by the seconds each GPU's
 * readings covered, the memory peak the highest GPU's.
 */
import type { GpuFigures } from './rollup.js';

export { GPU_COUNT_ATTRIBUTE } from '../core/metrics/registry.js';

export type SummaryGrain = 'gpu' | 'node';

export interface NodeFigures {
  gpus: number;
  energyJ: number;
  /** Covered seconds times the share, summed (gpu.job.duration of each GPU, added up). */
  gpuSeconds: number;
  utilMean: number | null;
  smActive: number | null;
  memUsedMax: number | null;
}

/**
 * Sum of x / sum of weights; where the readings weigh nothing (bindings of one sample cover no seconds, yet read the
 * GPU once) their plain mean, so that the node's summary has every figure its GPUs' have. Null when nothing was read.
 */
function weighted(pairs: readonly (readonly [x: number | null, w: number])[]): number | null {
  let sum = 0;
  let weight = 0;
  let plain = 0;
  let n = 0;
  for (const [x, w] of pairs) {
    if (x === null) continue;
    sum += x * w;
    weight += w;
    plain += x;
    n++;
  }
  return weight > 0 ? sum / weight : n > 0 ? plain / n : null;
}

/** The node's fold of a run's figures on each of its GPUs there. */
export function nodeFigures(gpus: readonly GpuFigures[]): NodeFigures {
  const peaks = gpus.map((f) => f.memUsedMax).filter((x): x is number => x !== null);
  return {
    gpus: gpus.length,
    energyJ: gpus.reduce((s, f) => s + f.energyJ, 0),
    gpuSeconds: gpus.reduce((s, f) => s + f.seconds * f.shareMean, 0),
    utilMean: weighted(gpus.map((f) => [f.utilMean, f.seconds])),
    smActive: weighted(gpus.map((f) => [f.gpm?.smActive ?? null, f.gpm?.seconds ?? 0])),
    memUsedMax: peaks.length ? Math.max(...peaks) : null,
  };
}
