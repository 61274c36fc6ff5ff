/**
 * Points of one collection -> one GpuSample per GPU UUID: the rollup's input,
 * built the same way from the daemon's batches and from series a PromQL
 * backend returns (see promql.ts).
 */
import type { Attributes } from '../core/metrics/model.js';
import type { GpmKey, GpuSample } from './rollup.js';

/** GPM activities by metric name (gpu.pipe.active by its gpu.pipe); the NVLink and PCIe rates add up their directions. */
const GPM_MEANS: Record<string, GpmKey> = {
  'gpu.sm.active': 'smActive',
  'gpu.sm.occupancy': 'smOccupancy',
  'gpu.tensor.active': 'tensorActive',
  'gpu.dram.active': 'dramActive',
};
const PIPES: Record<string, GpmKey> = { fp64: 'fp64Active', fp32: 'fp32Active', fp16: 'fp16Active' };
const RATES: Record<string, GpmKey> = { 'gpu.nvlink.throughput': 'nvlinkBps', 'gpu.pcie.throughput': 'pcieBps' };

export interface SamplePoint {
  name: string;
  value: number;
  attributes: Attributes;
}

/** Adds one point to the sample of its GPU; false for points the rollup does not use. */
export function addToSample(s: GpuSample, p: SamplePoint): boolean {
  const a = p.attributes;
  switch (p.name) {
    case 'gpu.utilization':
      s.util = p.value;
      return true;
    case 'gpu.memory.controller.utilization':
      s.memUtil = p.value;
      return true;
    case 'gpu.memory.used':
      s.memUsed = p.value;
      return true;
    case 'gpu.memory.total':
      s.memTotal = p.value;
      return true;
    case 'gpu.power.draw':
      s.power = p.value;
      return true;
    case 'gpu.energy.consumption':
      s.energy = p.value;
      return true;
    case 'gpu.temperature':
      s.temp = s.temp === undefined ? p.value : Math.max(s.temp, p.value);
      return true;
    case 'gpu.throttle.active':
      (s.throttle ??= {})[String(a['gpu.throttle.cause'])] = p.value;
      return true;
    case 'gpu.xid.errors':
      (s.xid ??= {})[String(a['gpu.xid.code'])] = p.value;
      return true;
    case 'gpu.ecc.errors':
      if (a['gpu.ecc.scope'] !== 'volatile') return false;
      if (a['error.type'] === 'corrected') s.eccCorrected = p.value;
      else if (a['error.type'] === 'uncorrected') s.eccUncorrected = p.value;
      return true;
    case 'gpu.pipe.active': {
      const k = PIPES[String(a['gpu.pipe'])];
      if (k) (s.gpm ??= {})[k] = p.value;
      return k !== undefined;
    }
    default: {
      const mean = GPM_MEANS[p.name];
      if (mean) {
        (s.gpm ??= {})[mean] = p.value;
        return true;
      }
      const rate = RATES[p.name];
      if (!rate) return false;
      // by direction, each once: a GPU shared by two jobs has each of its points twice in a batch (one per job's attributes)
      const dirs = ((s.rateDirs ??= {})[rate] ??= {});
      dirs[String(a['network.io.direction'])] = p.value;
      (s.gpm ??= {})[rate] = Object.values(dirs).reduce((x, y) => x + y, 0);
      return true;
    }
  }
}

/** GPU samples of one collection, keyed by UUID (MIG instances by their MIG UUID). */
export function samplesFromPoints<P extends { value: number; attributes: Attributes }>(
  points: readonly P[],
  t: number,
  nameOf: (p: P) => string,
  mono?: number,
): Map<string, GpuSample> {
  const out = new Map<string, GpuSample>();
  for (const p of points) {
    const uuid = p.attributes['gpu.uuid'];
    if (typeof uuid !== 'string') continue;
    let s = out.get(uuid);
    if (!s) out.set(uuid, (s = mono === undefined ? { t } : { t, m: mono }));
    addToSample(s, { name: nameOf(p), value: p.value, attributes: p.attributes });
  }
  return out;
}
