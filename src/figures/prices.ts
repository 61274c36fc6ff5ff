/**
 * What GPU time costs and emits, in one place for the job reports, the
 * roll-ups and the daemon's cost metrics:
 *
 *  - a GPU-hour's price where it ran, the most specific configured price
 *    first: the node's ([jobs] node_gpu_hour_prices), the partition's
 *    (partition_gpu_hour_prices), the GPU model's (gpu_hour_prices), the
 *    default (gpu_hour_price);
 *  - energy is paid and emits at the facility: the GPUs' energy times the
 *    site's PUE, at kwh_price and carbon_intensity (gCO2e/kWh).
 *
 * cost = GPU-hours x price + kWh x PUE x kwh_price; CO2e (g) = kWh x PUE x carbon_intensity.
 */
import type { GpuFigures } from './rollup.js';

/** [jobs] prices (src/jobs/prices.ts reads them, this file applies them). */
export interface Prices {
  perGpuHour: number | null;
  perModel: [string, number][];
  /** Exact partition names. */
  perPartition?: [string, number][];
  /** Node names or patterns (* for any characters). */
  perNode?: [string, number][];
  perKwh: number | null;
  /** Grid carbon intensity, gCO2e per kWh. */
  gCo2ePerKwh?: number | null;
  /** Facility energy over IT energy (>= 1); 1 when unset. */
  pue?: number;
  currency: string;
}

const J_PER_KWH = 3.6e6;

/** Where a GPU-hour was spent; null: not known (a job without a partition, a report without the node). */
export interface Place {
  model: string | null;
  partition: string | null;
  node: string | null;
}

const patterns = new Map<string, RegExp>();
function nodeMatches(pattern: string, node: string): boolean {
  if (!pattern.includes('*')) return pattern === node;
  let re = patterns.get(pattern);
  if (!re)
    patterns.set(
      pattern,
      (re = new RegExp(
        `^${pattern
          .split('*')
          .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      )),
    );
  return re.test(node);
}

/** The price of one GPU-hour at this place (node, partition, model, default: the first configured), or null when none is. */
export function gpuHourPrice(p: Prices, at: Place): number | null {
  const nodes = p.perNode ?? [];
  if (at.node !== null) {
    // an exact name before any pattern, so that gpu017=4 wins over gpu*=3 wherever they are written
    const hit = nodes.find(([k]) => k === at.node) ?? nodes.find(([k]) => nodeMatches(k, at.node!));
    if (hit) return hit[1];
  }
  const part = at.partition === null ? undefined : p.perPartition?.find(([k]) => k === at.partition);
  if (part) return part[1];
  const model = at.model === null ? undefined : p.perModel.find(([k]) => at.model!.includes(k));
  return model ? model[1] : p.perGpuHour;
}

export interface Cost {
  /** In the prices' currency; null: neither a GPU-hour nor a kWh price applies. */
  cost: number | null;
  /** Grams CO2e; null: no carbon intensity configured. */
  co2eG: number | null;
}

/** One GPU's part of a job (unrounded): its GPU-hours at the place's price, its energy (J) times PUE at the kWh price and carbon intensity.
 * */
export function gpuCost(p: Prices | null, at: Place, gpuHours: number, energyJ: number): Cost {
  if (!p) return { cost: null, co2eG: null };
  const hour = gpuHourPrice(p, at);
  const facilityKwh = (energyJ / J_PER_KWH) * (p.pue ?? 1);
  return {
    cost: hour === null && p.perKwh === null ? null : (hour ?? 0) * gpuHours + (p.perKwh ?? 0) * facilityKwh,
    co2eG: p.gCo2ePerKwh === null || p.gCo2ePerKwh === undefined ? null : p.gCo2ePerKwh * facilityKwh,
  };
}

/** A GPU's cost per hour now: an hour of it at this power draw (W; null: unknown, the GPU-hour price alone). */
export function hourlyRate(p: Prices, at: Place, powerW: number | null): number | null {
  return gpuCost(p, at, 1, (powerW ?? 0) * 3600).cost;
}

/** A job's cost and CO2e: the sum over its GPUs (each at its own node's and model's price), cost to the cent, CO2e to the milligram. */
export function jobCost(
  p: Prices | null,
  gpus: readonly { model: string | null; node: string; figures: GpuFigures }[],
  partition: string | null,
): Cost {
  let cost: number | null = null;
  let co2e: number | null = null;
  for (const g of gpus) {
    const c = gpuCost(p, { model: g.model, partition, node: g.node }, g.figures.gpuHours, g.figures.energyJ);
    if (c.cost !== null) cost = (cost ?? 0) + c.cost;
    if (c.co2eG !== null) co2e = (co2e ?? 0) + c.co2eG;
  }
  return { cost: cost === null ? null : Math.round(cost * 100) / 100, co2eG: co2e === null ? null : Math.round(co2e * 1000) / 1000 };
}

/** The cost of a million generated tokens, or null without a cost or a token. */
export function costPerMillionTokens(cost: number | null, generatedTokens: number | null): number | null {
  if (cost === null || !generatedTokens) return null;
  return Math.round((cost / generatedTokens) * 1e6 * 1e6) / 1e6;
}
