/**
 * GPU Performance Monitoring (GPM, Hopper and later): SM, graphics-engine,
 * tensor, FP and integer pipe, DRAM, PCIe and NVLink activity between two
 * samples NVML takes of the GPU's performance counters, all in one
 * nvmlGpmMetricsGet call a window (and, from NVML v595, the cumulative cycle
 * counters the means come from). The only per-MIG-instance activity NVML has
 * (nvmlGpmMigSampleGet, by GPU instance), and finer than device utilization
 * on a whole GPU (which SMs were busy, not whether any kernel ran).
 *
 * One window a target (a GPU, or one GPU instance of a MIG GPU): two sample
 * handles used in turn, so a tick allocates nothing. A sample belongs to the
 * NVML session that allocated it: release() frees every one before
 * nvmlShutdown, and nothing of an earlier session is ever freed.
 */
import { GPM_MAX_METRICS, GPM_METRIC, GPM_METRIC_ENTRY, GPM_METRICS_GET, GPM_SUPPORT, NVML, STRUCT_VERSION } from './abi.js';
import type { Handle, NvmlGpm } from './binding.js';

/**
 * What one window gives, as NVML gives it; a metric the GPU (or GPU instance) does not count, or that this driver's
 * nvml.h lacks, is absent (never 0).
 */
export interface GpmValues {
  /** Activity over the window, percent (0..100): engine, SMs, occupancy, DRAM bandwidth. */
  graphics?: number;
  sm?: number;
  smOccupancy?: number;
  dram?: number;
  /** Share of the window the SMs spent in a kind of math, percent: any tensor op, each tensor op, non-tensor pipes. */
  tensor?: number;
  dfma?: number;
  hmma?: number;
  dmma?: number;
  imma?: number;
  integer?: number;
  fp64?: number;
  fp32?: number;
  fp16?: number;
  /** Traffic over the window, MiB/s: PCIe from / to the GPU, NVLink all links. */
  pcieTxMiBs?: number;
  pcieRxMiBs?: number;
  nvlinkTxMiBs?: number;
  nvlinkRxMiBs?: number;
  /** Cumulative since the GPU's last reset, at the window's end (NVML v595 and later): SM cycles, and bytes for PCIe. */
  smCyclesElapsed?: number;
  smCyclesActive?: number;
  mmaCyclesActive?: number;
  dfmaCyclesActive?: number;
  hmmaCyclesActive?: number;
  dmmaCyclesActive?: number;
  immaCyclesActive?: number;
  integerCyclesActive?: number;
  fp64CyclesActive?: number;
  fp32CyclesActive?: number;
  fp16CyclesActive?: number;
  pcieTxBytes?: number;
  pcieRxBytes?: number;
}

/** How NVML gives a metric: percent of the window, MiB/s over it, or a cumulative count. */
export type GpmKind = 'percent' | 'MiB/s' | 'count';

const M = GPM_METRIC;
/**
 * Every metric read, in the one nvmlGpmMetricsGet call a window: [value, id, kind, the NVML version whose header
 * first has the id]. A driver older than that is not asked for it: R550 rejects ids above 97 entry by entry, but id 8
 * lies inside the range it computes (its table has no counters for it), and what it would answer is not documented.
 */
export const GPM_READ: readonly (readonly [keyof GpmValues, number, GpmKind, number?])[] = [
  ['graphics', M.GRAPHICS_UTIL, 'percent'],
  ['sm', M.SM_UTIL, 'percent'],
  ['smOccupancy', M.SM_OCCUPANCY, 'percent'],
  ['integer', M.INTEGER_UTIL, 'percent'],
  ['tensor', M.ANY_TENSOR_UTIL, 'percent'],
  ['dfma', M.DFMA_TENSOR_UTIL, 'percent'],
  ['hmma', M.HMMA_TENSOR_UTIL, 'percent'],
  ['dmma', M.DMMA_TENSOR_UTIL, 'percent', 595],
  ['imma', M.IMMA_TENSOR_UTIL, 'percent'],
  ['dram', M.DRAM_BW_UTIL, 'percent'],
  ['fp64', M.FP64_UTIL, 'percent'],
  ['fp32', M.FP32_UTIL, 'percent'],
  ['fp16', M.FP16_UTIL, 'percent'],
  ['pcieTxMiBs', M.PCIE_TX_PER_SEC, 'MiB/s'],
  ['pcieRxMiBs', M.PCIE_RX_PER_SEC, 'MiB/s'],
  ['nvlinkRxMiBs', M.NVLINK_TOTAL_RX_PER_SEC, 'MiB/s'],
  ['nvlinkTxMiBs', M.NVLINK_TOTAL_TX_PER_SEC, 'MiB/s'],
  ['smCyclesElapsed', M.SM_CYCLES_ELAPSED, 'count', 595],
  ['smCyclesActive', M.SM_CYCLES_ACTIVE, 'count', 595],
  ['mmaCyclesActive', M.MMA_CYCLES_ACTIVE, 'count', 595],
  ['dmmaCyclesActive', M.DMMA_CYCLES_ACTIVE, 'count', 595],
  ['hmmaCyclesActive', M.HMMA_CYCLES_ACTIVE, 'count', 595],
  ['immaCyclesActive', M.IMMA_CYCLES_ACTIVE, 'count', 595],
  ['dfmaCyclesActive', M.DFMA_CYCLES_ACTIVE, 'count', 595],
  ['pcieTxBytes', M.PCIE_TX, 'count', 595],
  ['pcieRxBytes', M.PCIE_RX, 'count', 595],
  ['integerCyclesActive', M.INTEGER_CYCLES_ACTIVE, 'count', 595],
  ['fp64CyclesActive', M.FP64_CYCLES_ACTIVE, 'count', 595],
  ['fp32CyclesActive', M.FP32_CYCLES_ACTIVE, 'count', 595],
  ['fp16CyclesActive', M.FP16_CYCLES_ACTIVE, 'count', 595],
];

/** The metrics a driver's nvml.h has, by its version ("550.54.15": branch 550); an unknown version: the oldest set. */
export function gpmRequest(driverVersion: string): (typeof GPM_READ)[number][] {
  const branch = Number.parseInt(driverVersion, 10);
  return GPM_READ.filter(([, , , since]) => since === undefined || (Number.isFinite(branch) && branch >= since));
}

/**
 * NVML refreshes the counters about every 100 ms: a read sooner than this
 * after the last (two collections close together) keeps the last figures
 * instead of measuring a window of one or two refreshes. Far below any
 * collection interval, so that a tick landing a few ms early is never taken
 * for one of those.
 */
export const GPM_MIN_WINDOW_MS = 250;

interface Window {
  /** Holds the window's start sample once filled. */
  prev: Handle;
  spare: Handle;
  filled: boolean;
  taken: number;
  /** What the target is (a GI's member MIG devices): a GI id reused by a new GI is not one window. */
  fingerprint: string;
  last?: GpmValues;
}

export type GpmRead = { r: number; values?: GpmValues };

/** Where entry 0's nvmlReturn and value sit in the request's Int32 and Float64 views, and the step to the next entry. */
const RET_AT = (GPM_METRICS_GET.at.metrics + GPM_METRIC_ENTRY.at.nvmlReturn) / 4;
const VALUE_AT = (GPM_METRICS_GET.at.metrics + GPM_METRIC_ENTRY.at.value) / 8;
const RET_STRIDE = GPM_METRIC_ENTRY.size / 4;
const VALUE_STRIDE = GPM_METRIC_ENTRY.size / 8;

export class GpmReader {
  private readonly windows = new Map<string, Window>();
  /** One nvmlGpmMetricsGet_t, sized for the largest header; its metric ids are written once per driver. */
  private readonly request = Buffer.alloc(GPM_METRICS_GET.at.metrics + GPM_MAX_METRICS * GPM_METRIC_ENTRY.size);
  /**
   * The entries' nvmlReturn and value through typed views (the struct is the host's byte order, as NVML writes it):
   * an indexed access each, so that reading 30 metrics costs about what 7 did (issue 33's benchmark).
   */
  private readonly i32 = new Int32Array(this.request.buffer, this.request.byteOffset, this.request.length >> 2);
  private readonly f64 = new Float64Array(this.request.buffer, this.request.byteOffset, this.request.length >> 3);
  private asked: ReturnType<typeof gpmRequest> = [];
  private readonly support = Buffer.alloc(GPM_SUPPORT.size);

  /**
   * minWindowMs: GPM_MIN_WINDOW_MS; the benchmark sets 0 to measure a full read every call.
   * only: the metrics to read of those the driver has (default: all; the benchmark's baseline asks for fewer).
   */
  constructor(
    private readonly api: NvmlGpm,
    private readonly minWindowMs = GPM_MIN_WINDOW_MS,
    private readonly only?: readonly (keyof GpmValues)[],
  ) {
    this.setDriver('');
  }

  /** Asks for what this driver's nvml.h has (after each NVML init: the driver may have been replaced). */
  setDriver(driverVersion: string): void {
    const only = this.only;
    this.asked = gpmRequest(driverVersion).filter(([key]) => !only || only.includes(key));
    const b = this.request;
    const { at } = GPM_METRICS_GET;
    b.fill(0);
    b.writeUInt32LE(STRUCT_VERSION.NVML_GPM_METRICS_GET_VERSION, at.version);
    b.writeUInt32LE(this.asked.length, at.numMetrics);
    this.asked.forEach(([, id], i) => b.writeUInt32LE(id, at.metrics + i * GPM_METRIC_ENTRY.size + GPM_METRIC_ENTRY.at.metricId));
  }

  /** NVML's answer and whether the GPU has GPM (pre-Hopper: success with isSupportedDevice = 0). */
  async supported(h: Handle): Promise<{ r: number; supported: boolean }> {
    this.support.fill(0);
    this.support.writeUInt32LE(STRUCT_VERSION.NVML_GPM_SUPPORT_VERSION, GPM_SUPPORT.at.version);
    const r = await this.api.querySupport(h, this.support);
    return { r, supported: r === NVML.SUCCESS && this.support.readUInt32LE(GPM_SUPPORT.at.isSupportedDevice) !== 0 };
  }

  /**
   * Activity of one target since its previous read. The first read of a
   * target (or after a reset) only takes the start sample: no values yet.
   * take() fills a sample handle (nvmlGpmSampleGet or nvmlGpmMigSampleGet).
   * now: a monotonic clock (ms), so that a wall-clock step changes no window.
   */
  async read(key: string, fingerprint: string, take: (sample: Handle) => Promise<number>, now = performance.now()): Promise<GpmRead> {
    let w = this.windows.get(key);
    // a GPU instance destroyed and made again under the same id is another window
    if (w && w.fingerprint !== fingerprint) w.filled = false;
    if (w?.filled && now - w.taken < this.minWindowMs) return { r: NVML.SUCCESS, values: w.last };
    if (!w) {
      const a: [Handle | null] = [null];
      const b: [Handle | null] = [null];
      let r = await this.api.sampleAlloc(a);
      if (r !== NVML.SUCCESS) return { r };
      r = await this.api.sampleAlloc(b);
      if (r !== NVML.SUCCESS) {
        await this.api.sampleFree(a[0]!);
        return { r };
      }
      this.windows.set(key, (w = { prev: a[0]!, spare: b[0]!, filled: false, taken: 0, fingerprint }));
    }
    const r = await take(w.spare);
    if (r !== NVML.SUCCESS) return { r };
    let out: GpmRead = { r: NVML.SUCCESS };
    if (w.filled) {
      out = await this.metrics(w.prev, w.spare);
      if (out.r !== NVML.SUCCESS) return out;
    }
    [w.prev, w.spare] = [w.spare, w.prev];
    w.filled = true;
    w.taken = now;
    w.fingerprint = fingerprint;
    w.last = out.values;
    return out;
  }

  private async metrics(start: Handle, end: Handle): Promise<GpmRead> {
    const b = this.request;
    const { i32, f64 } = this;
    const asked = this.asked;
    b.writeBigUInt64LE(BigInt(start), GPM_METRICS_GET.at.sample1);
    b.writeBigUInt64LE(BigInt(end), GPM_METRICS_GET.at.sample2);
    // every entry's answer reset: an entry NVML leaves alone reads NaN (absent), never the last window's figure
    for (let i = 0, r = RET_AT, v = VALUE_AT; i < asked.length; i++, r += RET_STRIDE, v += VALUE_STRIDE) {
      i32[r] = NVML.SUCCESS;
      f64[v] = Number.NaN;
    }
    const r = this.api.metricsGet(b);
    if (r !== NVML.SUCCESS) return { r };
    const values: GpmValues = {};
    for (let i = 0, ri = RET_AT, vi = VALUE_AT; i < asked.length; i++, ri += RET_STRIDE, vi += VALUE_STRIDE) {
      const mr = i32[ri]!;
      // a lost GPU is the sampler's business; other per-metric codes (NOT_SUPPORTED on this GPU or instance) leave it out
      if (mr === NVML.GPU_IS_LOST) return { r: mr };
      const v = f64[vi]!;
      if (mr !== NVML.SUCCESS || !Number.isFinite(v)) continue;
      const [key, , kind] = asked[i]!;
      // two counter reads a hair apart can put a ratio just past 100
      values[key] = kind === 'percent' ? Math.min(100, Math.max(0, v)) : Math.max(0, v);
    }
    return { r: NVML.SUCCESS, values };
  }

  /** Frees the windows under a GPU (key prefix) that this tick did not read: GPU instances that are gone. */
  async sweep(prefix: string, seen: ReadonlySet<string>): Promise<void> {
    for (const [key, w] of [...this.windows]) {
      if ((key === prefix || key.startsWith(`${prefix}/`)) && !seen.has(key)) await this.free(key, w);
    }
  }

  /** Frees every sample: before nvmlShutdown, while the session that allocated them is alive. */
  async release(): Promise<void> {
    for (const [key, w] of [...this.windows]) await this.free(key, w);
  }

  private async free(key: string, w: Window): Promise<void> {
    // out of the map first: a sample is never freed twice
    this.windows.delete(key);
    await this.api.sampleFree(w.prev);
    await this.api.sampleFree(w.spare);
  }
}
