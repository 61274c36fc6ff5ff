/**
 * The sample model every plugin emits and every sink consumes.
 * Plain objects and arrays only: a tick of 8 GPUs is ~500 points and the
 * pipeline must move 200k points/s, so no per-point classes or closures.
 */
import { validRange, type MetricDef } from './registry.js';

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

/**
 * A cumulative explicit-bucket histogram, as OTLP carries it: counts[i] is the
 * number of observations in (bounds[i-1], bounds[i]] (not cumulative), the
 * last one above the last bound; counts.length === bounds.length + 1.
 */
export interface HistogramValue {
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/**
 * Attributes objects a source hands again, unchanged, for the same series at
 * every collection (an engine page's series: src/scrape/convert.ts; and what
 * attribution makes of them): a stage or sink may keep what it derives from
 * one (its encoded labels, the job's attributes added) for as long as the
 * object lives, in a WeakMap. Objects made afresh per point are not in the
 * set, and a sink's lookup of one costs nothing. One in the set is frozen:
 * what was derived from it stays true.
 */
const stable = new WeakSet<Attributes>();

/** Freezes `a` and marks it as handed again every collection (see `stable`). */
export function stableAttributes(a: Attributes): Attributes {
  stable.add(Object.freeze(a));
  return a;
}

export function isStable(a: Attributes): boolean {
  return stable.has(a);
}

export interface Point {
  readonly metric: MetricDef;
  /** A histogram's point: its count. */
  readonly value: number;
  readonly attributes: Attributes;
  /** Start of a cumulative series (ms since epoch); sinks fall back to the pipeline start. */
  readonly start?: number;
  /** The buckets of a histogram metric's point (kind 'histogram'), and only there. */
  readonly hist?: HistogramValue;
  /**
   * Set by attribution on a point of a process's own series (an engine's, an NCCL rank's): the run it belongs to.
   * Internal: sinks encode the attributes alone, never this.
   */
  readonly job?: PointJob;
}

/**
 * The provider-neutral run key attribution stamps on a point for the job ledger: whichever scheduler (Slurm,
 * Kubernetes, a later one), the ledger reads this and no scheduler's attribute keys.
 */
export interface PointJob {
  /** The job id as the store keys its runs (a Slurm job id, a pod's "namespace/name"). */
  readonly id: string;
  /** The attribute keys attribution added to the point: none of them is part of the source's own series. */
  readonly added: readonly string[];
}

export interface Batch {
  /** Plugin that produced the points (or "self" for the agent's own metrics). */
  readonly source: string;
  /** Collection time, ms since epoch (wall clock: what is exported). */
  readonly time: number;
  /** The same moment on the monotonic clock (src/core/clock.ts): what durations between batches are taken from. */
  readonly mono?: number;
  /** The source's collection interval in ms; sinks use it to age out series. */
  readonly intervalMs: number;
  readonly points: readonly Point[];
  /** Set by attribution: the jobs holding each GPU of the batch (by UUID), with their shares. */
  readonly jobs?: ReadonlyMap<string, readonly JobShare[]>;
}

/** One job's hold on one GPU: a provider-neutral key (job id + run) for the ledger, and the attributes its points carry. */
export interface JobShare {
  readonly jobId: string;
  /** Tells apart runs of one job id (a requeued Slurm job, a recreated pod). */
  readonly runKey: string;
  /** How much of the GPU the job gets, 0..1 (1 for an exclusive GPU). */
  readonly share: number;
  readonly attributes: Attributes;
  /** The partition (or queue) the scheduler runs the job in, for its prices ([jobs] partition_gpu_hour_prices); null: none. */
  readonly partition?: string | null;
}

/** What a plugin's collect() writes into. */
export interface Emitter {
  /** The collection's time (the batch's), where the caller set it: a cumulative series that starts now starts then, not after its first
   * point. */
  readonly time?: number;
  add(metric: MetricDef, value: number, attributes: Attributes, start?: number): void;
  /** A histogram metric's point (kind 'histogram'). */
  histogram(metric: MetricDef, h: HistogramValue, attributes: Attributes, start?: number): void;
  /**
   * A field of the source that could not be read (a cell that is no number,
   * an unknown unit): the field alone is left out, the rest goes on. `field`
   * names the source and place ("hl-smi device 0 power.draw"), said once.
   */
  unreadable(field: string, why: string): void;
}

/** Collects points into an array; the one Emitter implementation. */
export class PointBuffer implements Emitter {
  readonly points: Point[] = [];
  time?: number;
  /** Values outside their metric's range (validRange), by metric: skipped, for the runner to say. */
  readonly rejected = new Map<string, { value: number; attributes: Attributes }>();
  /** Fields that could not be read, by field: left out, for the runner to say. */
  readonly unread = new Map<string, string>();
  unreadable(field: string, why: string): void {
    this.unread.set(field, why);
  }
  add(metric: MetricDef, value: number, attributes: Attributes, start?: number): void {
    if (!Number.isFinite(value)) return; // NaN/Inf never reach a backend
    if (metric.kind === 'histogram') {
      // a histogram's point without buckets is no point: histogram() carries them
      this.rejected.set(metric.name, { value, attributes });
      return;
    }
    // indexed, not destructured: a point each, and destructuring goes through an iterator
    const range = validRange(metric);
    if (value < range[0] || value > range[1]) {
      this.rejected.set(metric.name, { value, attributes });
      return;
    }
    this.points.push(start === undefined ? { metric, value, attributes } : { metric, value, attributes, start });
  }
  histogram(metric: MetricDef, h: HistogramValue, attributes: Attributes, start?: number): void {
    const why = histogramFault(h);
    if (why) {
      this.rejected.set(metric.name, { value: h.count, attributes });
      return;
    }
    this.points.push(
      start === undefined ? { metric, value: h.count, attributes, hist: h } : { metric, value: h.count, attributes, start, hist: h },
    );
  }
}

/** Why a histogram cannot be sent as it is (a backend would reject or misread it), or undefined. */
export function histogramFault(h: HistogramValue): string | undefined {
  if (h.counts.length !== h.bounds.length + 1) return `${h.counts.length} bucket counts for ${h.bounds.length} bounds`;
  for (let i = 0; i < h.bounds.length; i++) {
    if (!Number.isFinite(h.bounds[i]!)) return `bound ${h.bounds[i]} is not finite`;
    if (i > 0 && !(h.bounds[i]! > h.bounds[i - 1]!)) return 'bounds not increasing';
  }
  let n = 0;
  for (const c of h.counts) {
    // OTLP's counts are whole numbers (fixed64): a fraction would be cut there and kept elsewhere
    if (!(c >= 0) || !Number.isSafeInteger(c)) return `bucket count ${c}`;
    n += c;
  }
  if (!Number.isFinite(h.sum)) return `sum ${h.sum}`;
  if (Math.abs(n - h.count) > 1e-9 * Math.max(1, h.count)) return `bucket counts add to ${n}, count is ${h.count}`;
  return undefined;
}

/** The points of a source that must read whole (a recorded real output): a field left out is an error naming it. */
export function wholePoints(b: PointBuffer): Point[] {
  if (b.unread.size) throw new Error(`unreadable fields: ${[...b.unread].map(([f, why]) => `${f}: ${why}`).join('; ')}`);
  return b.points;
}
