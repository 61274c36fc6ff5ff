/**
 * The [jobs] prices of a configuration, as the Prices that
 * src/figures/prices.ts applies (to the job reports, the roll-ups and the
 * daemon's cost metrics).
 */
import type { Config } from '../core/config/load.js';
import type { Prices } from '../figures/prices.js';

export function pricesFrom(cfg: Config): Prices {
  // the values are numbers: the schema checks them at load (mapValues)
  const numbers = (key: string): [string, number][] => Object.entries(cfg.map('jobs', key)).map(([k, v]) => [k, Number(v)]);
  return {
    perGpuHour: cfg.num('jobs', 'gpu_hour_price'),
    perModel: numbers('gpu_hour_prices'),
    perPartition: numbers('partition_gpu_hour_prices'),
    perNode: numbers('node_gpu_hour_prices'),
    perKwh: cfg.num('jobs', 'kwh_price'),
    gCo2ePerKwh: cfg.num('jobs', 'carbon_intensity'),
    pue: cfg.num('jobs', 'pue') ?? 1,
    currency: cfg.str('jobs', 'currency') ?? 'USD',
  };
}
