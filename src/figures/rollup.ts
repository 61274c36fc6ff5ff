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
 *    binding's first sample (a code first seen later counts whole);
 *  - a GPM figure (SM, tensor, DRAM, pipe activity; NVLink and PCIe rates) is
 *    the GPU's own mean over the window since the previous sample, so it too
 *    stands for the gap before it: its run mean is weighted by the gaps, over
 *    the seconds that had the figure (a figure the GPU does not count is
 *    absent, and its seconds are not in its mean); bytes are rate x gap, PCIe
 *    only over gaps with GPM (without it the PCIe figure is one short reading);
 *  - a gap is idle when the GPU's SM activity (GPM), else its utilization, is
 *    below UNUSED_UTIL; consecutive idle gaps make a stretch.
 */
import { bootId, gapMs } from '../core/clock.js';

export interface GpuSample {
  /** Wall clock, ms: when it was read, as reports and plots say it. */
  t: number;
  /** The same moment on the monotonic clock (ms), where the sample has it: the gaps between samples are taken from it. */
  m?: number;
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
  /** GPM interval means (0..1) and rates (By/s) of the window ending at t (src/figures/samples.ts). */
  gpm?: Partial<Record<GpmKey, number>>;
  /** The NVLink and PCIe rates by direction, whose sum is their gpm figure (src/figures/samples.ts). */
  rateDirs?: Partial<Record<GpmKey, Record<string, number>>>;
}

/** The GPM figures a job's report keeps: activities (0..1) and the NVLink and PCIe rates (By/s, both directions). */
export const GPM_KEYS = [
  'smActive',
  'smOccupancy',
  'tensorActive',
  'dramActive',
  'fp64Active',
  'fp32Active',
  'fp16Active',
  'nvlinkBps',
  'pcieBps',
] as const;
export type GpmKey = (typeof GPM_KEYS)[number];

export interface GpuRollup {
  samples: number;
  coveredS: number;
  firstTs: number;
  lastTs: number;
  /** The last sample's monotonic time and its boot (src/core/clock.ts): null for a rollup an older daemon wrote. */
  lastMono?: number | null;
  lastBoot?: string;
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
  /** Per GPM figure: the seconds that had it, and it integrated over them. */
  gpmS: Partial<Record<GpmKey, number>>;
  gpmInt: Partial<Record<GpmKey, number>>;
  /** Idle seconds; the open idle stretch (its start, ms, and length) and the longest one. */
  idleS: number;
  idleFrom: number | null;
  idleRunS: number;
  idleLongestS: number;
  idleLongestFrom: number | null;
  /** What idleness was judged by: SM activity on some gap, else utilization, else nothing yet. */
  idleBasis: IdleBasis;
}

export type IdleBasis = 'sm' | 'util' | 'none';

/** What rollups written before the GPM figures lack (a store's state from an older daemon goes on from them). */
const GPM_STATE = (): Pick<
  GpuRollup,
  'gpmS' | 'gpmInt' | 'idleS' | 'idleFrom' | 'idleRunS' | 'idleLongestS' | 'idleLongestFrom' | 'idleBasis'
> => ({
  gpmS: {},
  gpmInt: {},
  idleS: 0,
  idleFrom: null,
  idleRunS: 0,
  idleLongestS: 0,
  idleLongestFrom: null,
  idleBasis: 'none',
});

export function emptyRollup(): GpuRollup {
  return {
    samples: 0,
    coveredS: 0,
    firstTs: 0,
    lastTs: 0,
    utilSum: 0,
    utilN: 0,
    utilMax: null,
    memUtilSum: 0,
    memUtilN: 0,
    memUsedMax: null,
    memTotal: null,
    energyJ: 0,
    energyFromCounter: false,
    energyLast: null,
    powerSum: 0,
    powerN: 0,
    powerMax: null,
    lastPower: null,
    tempMax: null,
    throttleS: {},
    xid: {},
    xidBase: {},
    eccCorrected: 0,
    eccUncorrected: 0,
    eccBase: { c: null, u: null },
    shareSum: 0,
    shareN: 0,
    ...GPM_STATE(),
  };
}

/** A rollup read back from the store: one an older daemon wrote gets the GPM fields it lacks. */
export function loadRollup(json: string): GpuRollup {
  return { ...GPM_STATE(), ...(JSON.parse(json) as GpuRollup) };
}

const max = (a: number | null, b: number | undefined): number | null => (b === undefined ? a : a === null ? b : Math.max(a, b));

/** Folds one sample in. maxGapMs caps a gap (about two collection intervals). */
export function step(r: GpuRollup, s: GpuSample, maxGapMs: number): void {
  const first = r.samples === 0;
  const boot = s.m === undefined ? '' : bootId();
  // the gap by the samples' wall times (what PromQL over the exported points computes too), unless the wall clock
  // stepped between them: then by the monotonic clock (src/core/clock.ts)
  const gap = first ? 0 : gapMs(r.lastTs, s.t, r.lastMono, s.m, boot !== '' && r.lastBoot === boot);
  if (!first && gap <= 0) return; // the same or an older sample: already folded
  const dt = Math.min(gap, maxGapMs) / 1000;
  const share = s.share ?? 1;
  if (first) r.firstTs = s.t;
  r.samples++;
  r.lastTs = s.t;
  r.lastMono = s.m ?? null;
  r.lastBoot = boot;
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
  if (dt > 0) stepGpm(r, s, dt);
}

/** The GPM figures and idleness of the gap of dt seconds before s. */
function stepGpm(r: GpuRollup, s: GpuSample, dt: number): void {
  const sm = s.gpm?.smActive;
  for (const k of GPM_KEYS) {
    const v = s.gpm?.[k];
    // without GPM the PCIe figure is a 20 ms reading (nvmlDeviceGetPcieThroughput), not the window's
    if (v === undefined || (k === 'pcieBps' && sm === undefined)) continue;
    r.gpmS[k] = (r.gpmS[k] ?? 0) + dt;
    r.gpmInt[k] = (r.gpmInt[k] ?? 0) + v * dt;
  }
  const busy = sm ?? s.util;
  if (busy === undefined) return;
  if (sm !== undefined) r.idleBasis = 'sm';
  else if (r.idleBasis === 'none') r.idleBasis = 'util';
  if (busy >= UNUSED_UTIL) {
    r.idleFrom = null;
    r.idleRunS = 0;
    return;
  }
  r.idleS += dt;
  if (r.idleFrom === null) r.idleFrom = s.t - dt * 1000;
  r.idleRunS += dt;
  if (r.idleRunS > r.idleLongestS) {
    r.idleLongestS = r.idleRunS;
    r.idleLongestFrom = r.idleFrom;
  }
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
  /** The GPU's own counters (GPM, Hopper and later): null where no sample of the job had any. */
  gpm: GpmFigures | null;
  idle: IdleFigures;
}

/** Means over the seconds each figure covered (null: the GPU does not count it); bytes over the run, both directions. */
export interface GpmFigures {
  /** Seconds with SM activity (the GPM figure every GPM GPU counts). */
  seconds: number;
  smActive: number | null;
  smOccupancy: number | null;
  tensorActive: number | null;
  dramActive: number | null;
  fp64Active: number | null;
  fp32Active: number | null;
  fp16Active: number | null;
  nvlinkBytes: number | null;
  pcieBytes: number | null;
}

export interface IdleFigures {
  /** sm: judged by SM activity (GPM); util: by utilization (no GPM); none: no reading. */
  basis: IdleBasis;
  seconds: number;
  longestS: number;
  /** When the longest idle stretch began (ms), null without one. */
  longestFrom: number | null;
}

/** No idleness judged: no reading (or a report from before idleness was kept). */
export const NO_IDLE: IdleFigures = { basis: 'none', seconds: 0, longestS: 0, longestFrom: null };

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
    gpm: gpmFigures(r),
    idle: {
      basis: r.idleBasis,
      seconds: round(r.idleS, 3)!,
      longestS: round(r.idleLongestS, 3)!,
      longestFrom: r.idleLongestFrom === null ? null : Math.round(r.idleLongestFrom),
    },
  };
}

function gpmFigures(r: GpuRollup): GpmFigures | null {
  if (!GPM_KEYS.some((k) => r.gpmS[k])) return null;
  const mean = (k: GpmKey) => (r.gpmS[k] ? round(r.gpmInt[k]! / r.gpmS[k]!) : null);
  const bytes = (k: GpmKey) => (r.gpmS[k] ? Math.round(r.gpmInt[k]!) : null);
  return {
    seconds: round(r.gpmS.smActive ?? 0, 3)!,
    smActive: mean('smActive'),
    smOccupancy: mean('smOccupancy'),
    tensorActive: mean('tensorActive'),
    dramActive: mean('dramActive'),
    fp64Active: mean('fp64Active'),
    fp32Active: mean('fp32Active'),
    fp16Active: mean('fp16Active'),
    nvlinkBytes: bytes('nvlinkBps'),
    pcieBytes: bytes('pcieBps'),
  };
}
