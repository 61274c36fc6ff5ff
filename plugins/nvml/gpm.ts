/**
 * GPU Performance Monitoring (GPM, Hopper and later): SM, graphics-engine,
 * tensor and DRAM activity between two samples NVML takes of the GPU's
 * performance counters. The only per-MIG-instance activity NVML has
 * (nvmlGpmMigSampleGet, by GPU instance), and finer than device utilization
 * on a whole GPU (which SMs were busy, not whether any kernel ran).
 *
 * One window a target (a GPU, or one GPU instance of a MIG GPU): two sample
 * handles used in turn, so a tick allocates nothing. A sample belongs to the
 * NVML session that allocated it: release() frees every one before
 * nvmlShutdown, and nothing of an earlier session is ever freed.
 */
import { performance } from 'node:perf_hooks';
import { GPM_MAX_METRICS, GPM_METRIC, GPM_METRIC_ENTRY, GPM_METRICS_GET, GPM_SUPPORT, NVML, STRUCT_VERSION } from './abi.js';
import type { Handle, NvmlGpm } from './binding.js';

/** Means over the window as NVML gives them; a metric the GPU (or GPU instance) cannot count is absent. */
export interface GpmValues {
  /** Activity, percent (0..100). */
  graphics?: number;
  sm?: number;
  smOccupancy?: number;
  tensor?: number;
  dram?: number;
  /** PCIe traffic from / to the GPU, MiB/s. */
  pcieTxMiBs?: number;
  pcieRxMiBs?: number;
}

const READ: readonly [keyof GpmValues, number][] = [
  ['graphics', GPM_METRIC.GRAPHICS_UTIL],
  ['sm', GPM_METRIC.SM_UTIL],
  ['smOccupancy', GPM_METRIC.SM_OCCUPANCY],
  ['tensor', GPM_METRIC.ANY_TENSOR_UTIL],
  ['dram', GPM_METRIC.DRAM_BW_UTIL],
  ['pcieTxMiBs', GPM_METRIC.PCIE_TX_PER_SEC],
  ['pcieRxMiBs', GPM_METRIC.PCIE_RX_PER_SEC],
];
const PERCENT = new Set<keyof GpmValues>(['graphics', 'sm', 'smOccupancy', 'tensor', 'dram']);

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

export class GpmReader {
  private readonly windows = new Map<string, Window>();
  private readonly request = Buffer.alloc(GPM_METRICS_GET.at.metrics + GPM_MAX_METRICS * GPM_METRIC_ENTRY.size);
  private readonly support = Buffer.alloc(GPM_SUPPORT.size);

  /** minWindowMs: GPM_MIN_WINDOW_MS; the benchmark sets 0 to measure a full read every call. */
  constructor(private readonly api: NvmlGpm, private readonly minWindowMs = GPM_MIN_WINDOW_MS) {}

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
    const { at } = GPM_METRICS_GET;
    const entry = (i: number): number => at.metrics + i * GPM_METRIC_ENTRY.size;
    b.fill(0, 0, entry(READ.length));
    b.writeUInt32LE(STRUCT_VERSION.NVML_GPM_METRICS_GET_VERSION, at.version);
    b.writeUInt32LE(READ.length, at.numMetrics);
    b.writeBigUInt64LE(BigInt(start), at.sample1);
    b.writeBigUInt64LE(BigInt(end), at.sample2);
    READ.forEach(([, id], i) => b.writeUInt32LE(id, entry(i) + GPM_METRIC_ENTRY.at.metricId));
    const r = this.api.metricsGet(b);
    if (r !== NVML.SUCCESS) return { r };
    const values: GpmValues = {};
    for (let i = 0; i < READ.length; i++) {
      const o = entry(i);
      const mr = b.readInt32LE(o + GPM_METRIC_ENTRY.at.nvmlReturn);
      // a lost GPU is the sampler's business; other per-metric codes (NOT_SUPPORTED on this GPU or instance) leave it out
      if (mr === NVML.GPU_IS_LOST) return { r: mr };
      const v = b.readDoubleLE(o + GPM_METRIC_ENTRY.at.value);
      const key = READ[i]![0];
      // two counter reads a hair apart can put a ratio just past 100
      if (mr === NVML.SUCCESS && Number.isFinite(v)) values[key] = PERCENT.has(key) ? Math.min(100, Math.max(0, v)) : Math.max(0, v);
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
