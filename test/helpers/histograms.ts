/**
 * Histogram metrics and values for the sink tests. The sinks must carry any
 * histogram metric, whether or not the registry holds one yet, so the tests
 * make their own MetricDefs (the shape registry.ts's m() gives).
 */
import { histogramFault, type HistogramValue } from '../../src/core/metrics/model.js';
import type { MetricDef } from '../../src/core/metrics/registry.js';

export function histogramDef(name: string, unit: string, attributes: readonly string[] = []): MetricDef {
  return Object.freeze({
    name,
    unit,
    kind: 'histogram',
    scope: 'agent',
    description: `Test histogram (${unit || 'no unit'}).`,
    attributes: Object.freeze([...attributes]),
  });
}

/**
 * Shapes an encoder could get wrong: latency bounds, empty buckets, a count
 * past 2^32 (the high word of a fixed64), negative and extreme bounds, a
 * negative sum, no bounds at all (one bucket), nothing observed.
 */
export const HISTOGRAM_SHAPES: readonly HistogramValue[] = [
  { bounds: [0.005, 0.01, 0.1, 1, 2.5, 10], counts: [3, 0, 7, 2, 0, 1, 4], sum: 61.25, count: 17 },
  { bounds: [-1, 0, 1e-7, 1e21], counts: [1, 5_000_000_000, 0, 2, 1], sum: -3.5, count: 5_000_000_004 },
  { bounds: [], counts: [5], sum: 9, count: 5 },
  { bounds: [1, 2], counts: [0, 0, 0], sum: 0, count: 0 },
];
for (const h of HISTOGRAM_SHAPES) {
  const why = histogramFault(h);
  if (why) throw new Error(`test histogram ${JSON.stringify(h)} is malformed: ${why}`);
}

/** Cumulative bucket counts, one per bound and the last for +Inf: what Prometheus' _bucket series hold. */
export function cumulative(h: HistogramValue): number[] {
  let n = 0;
  return h.counts.map((c) => (n += c));
}
