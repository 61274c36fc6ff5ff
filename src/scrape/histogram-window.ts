/**
 * Quantiles of an engine's latency histogram over the last scrape window:
 * from the bucket deltas between two scrapes of the same series, never from
 * the since-start buckets (which say what the engine did an hour ago as
 * loudly as what it does now). A counter that went down is a restart: the
 * window is what the new process counted. A window without observations has
 * no quantile.
 */
import type { HistogramValue } from '../core/metrics/model.js';

/** Prometheus' histogram_quantile over non-cumulative buckets: linear inside the bucket; in the +Inf bucket the last bound. */
export function quantileOf(q: number, bounds: readonly number[], counts: readonly number[]): number | undefined {
  let total = 0;
  for (const c of counts) total += c;
  if (!(total > 0)) return undefined;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i]!;
    if (below + c >= rank && c > 0) {
      if (i === bounds.length) return bounds.length ? bounds[bounds.length - 1] : undefined;
      const hi = bounds[i]!;
      // the first bucket's lower edge is 0 when its bound is positive (latencies), else the bound itself
      const lo = i === 0 ? (hi > 0 ? 0 : hi) : bounds[i - 1]!;
      return lo + (hi - lo) * ((rank - below) / c);
    }
    below += c;
  }
  return bounds.length ? bounds[bounds.length - 1] : undefined;
}

export interface WindowResult {
  /** The observations of the window, per bucket (none: the first scrape of the series). */
  readonly delta?: HistogramValue;
  /** True when the series went down since the last scrape: its source restarted. */
  readonly reset: boolean;
}

/** The previous scrape of every histogram series, by series key. */
export class HistogramWindows {
  private readonly last = new Map<string, { h: HistogramValue; seen: number; created?: number }>();
  private round = 0;

  /** Call once per scrape, before the series of that scrape. */
  beginScrape(): void {
    this.round++;
  }

  /** Forgets the series not seen in the last scrape (a model unloaded, labels gone). Call after the scrape. */
  endScrape(): void {
    for (const [k, v] of this.last) if (v.seen !== this.round) this.last.delete(k);
  }

  /** created: the series' creation time where the engine says it (_created): another one is a restart, even one that counted past the old
   * counts already. */
  observe(key: string, h: HistogramValue, created?: number): WindowResult {
    const prev = this.last.get(key);
    this.last.set(key, created === undefined ? { h, seen: this.round } : { h, seen: this.round, created });
    if (!prev) return { reset: false };
    const p = prev.h;
    const sameBounds = p.bounds.length === h.bounds.length && p.bounds.every((b, i) => b === h.bounds[i]);
    let reset = !sameBounds || h.count < p.count || (created !== undefined && prev.created !== undefined && created !== prev.created);
    const counts = new Array<number>(h.counts.length);
    if (!reset) {
      for (let i = 0; i < h.counts.length; i++) {
        const d = h.counts[i]! - p.counts[i]!;
        // a bucket that went down while the total did not: a restart between scrapes that got as far again
        if (d < 0) {
          reset = true;
          break;
        }
        counts[i] = d;
      }
    }
    if (reset) return { reset: true, delta: h };
    return { reset: false, delta: { bounds: h.bounds, counts, sum: h.sum - p.sum, count: h.count - p.count } };
  }

  get size(): number {
    return this.last.size;
  }
}
