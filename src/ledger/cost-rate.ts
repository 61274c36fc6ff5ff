/**
 * The daemon's cost metrics, from the attributed batch alone (as the ledger
 * it runs in): per GPU, what an hour of it costs now (gpu.cost.rate) and the
 * same while it is unused (gpu.cost.idle.rate); per job leaving a GPU, what
 * its time there cost and emitted (gpu.job.cost, gpu.job.co2e). The prices
 * are asked for at every batch, so a reload's new prices apply at once; with
 * none configured nothing is emitted.
 *
 * A MIG instance is priced as one GPU, as Slurm counts it (give MIG nodes or
 * partitions their own price), the same in the job's report; its parent GPU
 * has no rate of its own. NVML has no power per instance: an instance's rate
 * is its GPU-hour price alone.
 */
import { identityOf } from '../core/gpu-identity.js';
import { GPU } from '../core/metrics/gpu-metrics.js';
import type { Attributes, Batch, Point } from '../core/metrics/model.js';
import { metric } from '../core/metrics/registry.js';
import { gpuCost, hourlyRate, type Place, type Prices } from '../figures/prices.js';
import { UNUSED_UTIL, type GpuFigures } from '../figures/rollup.js';

const COST = {
  rate: metric('gpu.cost.rate'),
  idle: metric('gpu.cost.idle.rate'),
  job: metric('gpu.job.cost'),
  co2e: metric('gpu.job.co2e'),
};

/** Registry names of what CostRates emits (the ledger's, for docs/metrics.md). */
export const COST_METRICS = Object.values(COST).map((d) => d.name);

export interface CostSource {
  /** [jobs] prices now; null: none. */
  prices(): Prices | null;
  /** This node's name in the scheduler, for node_gpu_hour_prices. */
  node(): string;
}

/** A GPU (or MIG instance) in one batch: its identity, utilization and power draw, where the batch has them. */
interface GpuNow {
  identity: Attributes;
  util: number | null;
  powerW: number | null;
}

/** The batch's GPUs by uuid; a MIG GPU's instances stand for it (Slurm binds and counts the instances). */
function gpusOf(batch: Batch): Map<string, GpuNow> {
  const gpus = new Map<string, GpuNow>();
  const parents = new Set<string>();
  for (const p of batch.points) {
    if (p.metric !== GPU.util && p.metric !== GPU.power && p.metric !== GPU.memUsed) continue;
    const uuid = p.attributes['gpu.uuid'];
    if (typeof uuid !== 'string') continue;
    const parent = p.attributes['gpu.mig.parent_uuid'];
    if (typeof parent === 'string') parents.add(parent);
    let g = gpus.get(uuid);
    if (!g) gpus.set(uuid, (g = { identity: identityOf(p.attributes), util: null, powerW: null }));
    // a shared GPU's points come once per job, with the same value
    if (p.metric === GPU.util) g.util = p.value;
    else if (p.metric === GPU.power) g.powerW = p.value;
  }
  for (const parent of parents) gpus.delete(parent);
  return gpus;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export class CostRates {
  constructor(private readonly source: CostSource) {}

  /** The cost rate points of the batch's GPUs (none without a price). */
  observe(batch: Batch): Point[] {
    const p = this.source.prices();
    if (!p || !anyPrice(p)) return [];
    const gpus = gpusOf(batch);
    if (gpus.size === 0) return [];
    // the node's name is read from the store: only when a node price could apply
    const node = p.perNode?.length ? this.source.node() : null;
    const out: Point[] = [];
    for (const [uuid, g] of gpus) {
      const at = (partition: string | null): Place => ({ model: str(g.identity['gpu.model']), partition, node });
      const holders = batch.jobs?.get(uuid) ?? [];
      if (holders.length === 0) {
        const rate = hourlyRate(p, at(null), g.powerW);
        if (rate === null) continue;
        const a = { ...g.identity, 'cost.currency': p.currency };
        out.push(
          { metric: COST.rate, value: rate, attributes: a },
          { metric: COST.idle, value: rate, attributes: { ...a, 'cost.idle.kind': 'unallocated' } },
        );
        continue;
      }
      // a held GPU without a utilization reading is not called unused
      const unused = g.util === null ? null : g.util < UNUSED_UTIL;
      for (const job of holders) {
        const rate = hourlyRate(p, at(job.partition ?? null), g.powerW);
        if (rate === null) continue;
        const a = { ...g.identity, ...job.attributes, 'cost.currency': p.currency };
        out.push({ metric: COST.rate, value: rate * job.share, attributes: a });
        if (unused !== null)
          out.push({ metric: COST.idle, value: unused ? rate * job.share : 0, attributes: { ...a, 'cost.idle.kind': 'allocated' } });
      }
    }
    return out;
  }

  /**
   * What a job's time on one GPU cost and emitted, as it leaves the GPU: attributes are its job-end summary's (GPU identity and job),
   * partition its share's (JobShare.partition), for its price.
   */
  jobEnd(f: GpuFigures, attributes: Attributes, partition: string | null = null): Point[] {
    const p = this.source.prices();
    if (!p) return [];
    const place = {
      model: str(attributes['gpu.model']),
      partition,
      node: p.perNode?.length ? this.source.node() : null,
    };
    const c = gpuCost(p, place, f.gpuHours, f.energyJ);
    const out: Point[] = [];
    if (c.cost !== null) out.push({ metric: COST.job, value: c.cost, attributes: { ...attributes, 'cost.currency': p.currency } });
    if (c.co2eG !== null) out.push({ metric: COST.co2e, value: c.co2eG, attributes });
    return out;
  }
}

function anyPrice(p: Prices): boolean {
  return p.perGpuHour !== null || p.perKwh !== null || p.perModel.length > 0 || !!p.perPartition?.length || !!p.perNode?.length;
}
