/**
 * The sample model every plugin emits and every sink consumes.
 * Plain objects and arrays only: a tick of 8 GPUs is ~500 points and the
 * pipeline must move 200k points/s, so no per-point classes or closures.
 */
import { validRange, type MetricDef } from './registry.js';

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

export interface Point {
  readonly metric: MetricDef;
  readonly value: number;
  readonly attributes: Attributes;
  /** Start of a cumulative series (ms since epoch); sinks fall back to the pipeline start. */
  readonly start?: number;
}

export interface Batch {
  /** Plugin that produced the points (or "self" for the agent's own metrics). */
  readonly source: string;
  /** Collection time, ms since epoch. */
  readonly time: number;
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
}

/** What a plugin's collect() writes into. */
export interface Emitter {
  add(metric: MetricDef, value: number, attributes: Attributes, start?: number): void;
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
  /** Values outside their metric's range (validRange), by metric: skipped, for the runner to say. */
  readonly rejected = new Map<string, { value: number; attributes: Attributes }>();
  /** Fields that could not be read, by field: left out, for the runner to say. */
  readonly unread = new Map<string, string>();
  unreadable(field: string, why: string): void {
    this.unread.set(field, why);
  }
  add(metric: MetricDef, value: number, attributes: Attributes, start?: number): void {
    if (!Number.isFinite(value)) return; // NaN/Inf never reach a backend
    const [lo, hi] = validRange(metric);
    if (value < lo || value > hi) {
      this.rejected.set(metric.name, { value, attributes });
      return;
    }
    this.points.push(start === undefined ? { metric, value, attributes } : { metric, value, attributes, start });
  }
}

/** The points of a source that must read whole (a recorded real output): a field left out is an error naming it. */
export function wholePoints(b: PointBuffer): Point[] {
  if (b.unread.size) throw new Error(`unreadable fields: ${[...b.unread].map(([f, why]) => `${f}: ${why}`).join('; ')}`);
  return b.points;
}
