/**
 * Per (job run x GPU) aggregates, as a fold over the GPU's samples in time
 * order. The daemon applies step() at every tick and keeps the state in the
 * store; the PromQL report folds the same samples fetched from a backend.
 * One function for both: the two reports agree by construction.
 *
 * Rules:
 *  - covered time is the sum of gaps between consecutive samples, each gap
 *    capped (a daemon that was down does not count as covered);
 *  - a sample's state (throttled, its share) stands for the gap before it;
 *  - energy is the energy counter's delta over the binding times the job's
 *    share of the GPU (a counter reset starts a new base); without a counter,
 *    power integrated over the gaps;
 *  - Xid and ECC are counted as deltas of their cumulative counters from the
 *    binding's first sample (a code first seen later counts whole).
 */
export interface GpuSample {
  t: number;
  util?: number;
  memUtil?: number;
  memUsed?: number;
  memTotal?: number;
  power?: number;
  energy?: number;
  temp?: number;
  throttle?: Record<string, number>;
  xid?: Record<string, number>;
  eccCorrected?: number;
  eccUncorrected?: number;
  share?: number;
}

export interface GpuRollup {
  samples: number;
  coveredS: number;
  firstTs: number;
  lastTs: number;
  utilSum: number;
  utilN: number;
  utilMax: number | null;
  memUtilSum: number;
  memUtilN: number;
  memUsedMax: number | null;
  memTotal: number | null;
  energyJ: number;
  energyFromCounter: boolean;
  energyLast: number | null;
  powerSum: number;
  powerN: number;
  powerMax: number | null;
  lastPower: number | null;
  tempMax: number | null;
  throttleS: Record<string, number>;
  xid: Record<string, number>;
  xidBase: Record<string, number>;
  eccCorrected: number;
  eccUncorrected: number;
  eccBase: { c: number | null; u: number | null };
  shareSum: number;
  shareN: number;
}

export function emptyRollup(): GpuRollup {
  return {
    samples: 0, coveredS: 0, firstTs: 0, lastTs: 0, utilSum: 0, utilN: 0, utilMax: null, memUtilSum: 0, memUtilN: 0, memUsedMax: null, memTotal: null,
    energyJ: 0, energyFromCounter: false, energyLast: null, powerSum: 0, powerN: 0, powerMax: null, lastPower: null, tempMax: null,
    throttleS: {}, xid: {}, xidBase: {}, eccCorrected: 0, eccUncorrected: 0, eccBase: { c: null, u: null }, shareSum: 0, shareN: 0,
  };
}

const max = (a: number | null, b: number | undefined): number | null => (b === undefined ? a : a === null ? b : Math.max(a, b));

/** Folds one sample in. maxGapMs caps a gap (about two collection intervals). */
export function step(r: GpuRollup, s: GpuSample, maxGapMs: number): void {
  const first = r.samples === 0;
  const gapMs = first ? 0 : s.t - r.lastTs;
  if (!first && gapMs <= 0) return; // the same or an older sample: already folded
  const dt = Math.min(gapMs, maxGapMs) / 1000;
  const share = s.share ?? 1;
  if (first) r.firstTs = s.t;
  r.samples++;
  r.lastTs = s.t;
  r.coveredS += dt;
  if (s.util !== undefined) {
    r.utilSum += s.util;
    r.utilN++;
    r.utilMax = max(r.utilMax, s.util);
  }
  if (s.memUtil !== undefined) {
    r.memUtilSum += s.memUtil;
    r.memUtilN++;
  }
  r.memUsedMax = max(r.memUsedMax, s.memUsed);
  if (s.memTotal !== undefined) r.memTotal = s.memTotal;
  if (s.power !== undefined) {
    r.powerSum += s.power;
    r.powerN++;
    r.powerMax = max(r.powerMax, s.power);
  }
  r.tempMax = max(r.tempMax, s.temp);
  if (s.energy !== undefined) {
    if (r.energyLast !== null && s.energy >= r.energyLast) r.energyJ += (s.energy - r.energyLast) * share;
    r.energyLast = s.energy;
    r.energyFromCounter = true;
  } else if (!r.energyFromCounter && s.power !== undefined && r.lastPower !== null) {
    r.energyJ += ((s.power + r.lastPower) / 2) * dt * share; // trapezoid over the gap
  }
  if (s.power !== undefined) r.lastPower = s.power;
  for (const [cause, active] of Object.entries(s.throttle ?? {})) {
    r.throttleS[cause] = (r.throttleS[cause] ?? 0) + (active ? dt : 0);
  }
  for (const [code, n] of Object.entries(s.xid ?? {})) {
    if (first) r.xidBase[code] = n;
    else {
      const base = r.xidBase[code] ?? 0;
      if (n > base) r.xid[code] = n - base;
    }
  }
  if (s.eccCorrected !== undefined) {
    if (r.eccBase.c === null || s.eccCorrected < r.eccBase.c) r.eccBase.c = s.eccCorrected - r.eccCorrected;
    r.eccCorrected = s.eccCorrected - r.eccBase.c;
  }
  if (s.eccUncorrected !== undefined) {
    if (r.eccBase.u === null || s.eccUncorrected < r.eccBase.u) r.eccBase.u = s.eccUncorrected - r.eccUncorrected;
    r.eccUncorrected = s.eccUncorrected - r.eccBase.u;
  }
  r.shareSum += share;
  r.shareN++;
}

/**
 * A GPU held below this utilization is unused: the report's "did not use"
 * note (src/jobs/notes.ts) and the daemon's idle cost rate
 * (src/ledger/cost-rate.ts) draw the same line.
 */
export const UNUSED_UTIL = 0.01;

/** The figures a report shows for one GPU of a job. */
export interface GpuFigures {
  samples: number;
  seconds: number;
  gpuHours: number;
  utilMean: number | null;
  utilMax: number | null;
  memUtilMean: number | null;
  memUsedMax: number | null;
  memTotal: number | null;
  energyJ: number;
  energySource: 'counter' | 'power' | 'none';
  powerMean: number | null;
  powerMax: number | null;
  tempMax: number | null;
  throttledS: Record<string, number>;
  xid: Record<string, number>;
  eccCorrected: number;
  eccUncorrected: number;
  shareMean: number;
}

const round = (x: number | null, d = 6): number | null => (x === null ? null : Math.round(x * 10 ** d) / 10 ** d);

export function figures(r: GpuRollup): GpuFigures {
  return {
    samples: r.samples,
    seconds: round(r.coveredS, 3)!,
    gpuHours: round((r.coveredS * (r.shareN ? r.shareSum / r.shareN : 1)) / 3600)!,
    utilMean: r.utilN ? round(r.utilSum / r.utilN) : null,
    utilMax: r.utilMax,
    memUtilMean: r.memUtilN ? round(r.memUtilSum / r.memUtilN) : null,
    memUsedMax: r.memUsedMax,
    memTotal: r.memTotal,
    energyJ: round(r.energyJ, 3)!,
    energySource: r.energyFromCounter ? 'counter' : r.powerN > 1 ? 'power' : 'none',
    powerMean: r.powerN ? round(r.powerSum / r.powerN, 3) : null,
    powerMax: r.powerMax,
    tempMax: r.tempMax,
    throttledS: Object.fromEntries(Object.entries(r.throttleS).map(([k, v]) => [k, round(v, 3)!])),
    xid: { ...r.xid },
    eccCorrected: r.eccCorrected,
    eccUncorrected: r.eccUncorrected,
    shareMean: r.shareN ? round(r.shareSum / r.shareN)! : 1,
  };
}
