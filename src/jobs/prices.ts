/**
 * The [jobs] prices of a configuration, as the Prices that
 * src/figures/prices.ts applies (to the job reports, the roll-ups and the
 * daemon's cost metrics).
 */
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { Prices } from '../figures/prices.js';
import { JOBS_SECTION } from './config.js';

export function pricesFrom(cfg: Config): Prices {
  // the values are numbers: the schema checks them at load (mapValues)
  const numbers = (m: Record<string, string>): [string, number][] => Object.entries(m).map(([k, v]) => [k, Number(v)]);
  const j = readSection(cfg, JOBS_SECTION);
  return {
    perGpuHour: j.gpu_hour_price,
    perModel: numbers(j.gpu_hour_prices),
    perPartition: numbers(j.partition_gpu_hour_prices),
    perNode: numbers(j.node_gpu_hour_prices),
    perKwh: j.kwh_price,
    gCo2ePerKwh: j.carbon_intensity,
    pue: j.pue,
    currency: j.currency ?? 'USD',
  };
}
