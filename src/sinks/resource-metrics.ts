/**
 * Turns batches into the OpenTelemetry SDK's ResourceMetrics shape, which the
 * OTLP serializers and the Prometheus serializer both consume. Plain objects:
 * the SDK's MeterProvider is not involved (we already hold final values).
 */
import type { MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { HrTime } from '@opentelemetry/api';
import type { Attributes, Batch } from '../core/metrics/model.js';
import type { MetricDef } from '../core/metrics/registry.js';

// Numeric values of the SDK enums (DataPointType, AggregationTemporality, ValueType),
// inlined so that building a request does not need the SDK's runtime.
const HISTOGRAM = 0;
const GAUGE = 2;
const SUM = 3;
const CUMULATIVE = 1;
const DOUBLE = 1;

export function hrTime(ms: number): HrTime {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
}

/** The SDK's Histogram value; min and max are left out (undefined): l9gpu's sources do not give them. */
interface SdkHistogram {
  buckets: { boundaries: readonly number[]; counts: readonly number[] };
  sum: number;
  count: number;
}

interface Acc {
  def: MetricDef;
  points: { startTime: HrTime; endTime: HrTime; attributes: Attributes; value: number | SdkHistogram }[];
}

/** nameOf: the descriptor's name (the OTLP name, or the Prometheus name for the pull endpoint). */
export function toResourceMetrics(
  batches: readonly Batch[],
  resource: Attributes,
  defaultStart: number,
  scopeVersion: string,
  nameOf: (def: MetricDef) => string = (d) => d.name,
): ResourceMetrics {
  const byMetric = new Map<MetricDef, Acc>();
  const defaultStartHr = hrTime(defaultStart);
  for (const b of batches) {
    const end = hrTime(b.time);
    for (const p of b.points) {
      const h = p.hist;
      // a histogram metric's point without buckets is a plugin's mistake, not a histogram: left out, as by every sink
      if (p.metric.kind === 'histogram' && !h) continue;
      let acc = byMetric.get(p.metric);
      if (!acc) byMetric.set(p.metric, (acc = { def: p.metric, points: [] }));
      // Gauges: start = end (OTLP ignores it). Sums and histograms: the series' start.
      const start = p.metric.kind === 'gauge' ? end : p.start !== undefined ? hrTime(p.start) : defaultStartHr;
      const value =
        p.metric.kind === 'histogram' ? { buckets: { boundaries: h!.bounds, counts: h!.counts }, sum: h!.sum, count: h!.count } : p.value;
      acc.points.push({ startTime: start, endTime: end, attributes: p.attributes, value });
    }
  }
  const metrics: MetricData[] = [];
  for (const { def, points } of byMetric.values()) {
    const descriptor = { name: nameOf(def), description: def.description, unit: def.unit, valueType: DOUBLE };
    metrics.push(
      (def.kind === 'gauge'
        ? { descriptor, aggregationTemporality: CUMULATIVE, dataPointType: GAUGE, dataPoints: points }
        : def.kind === 'histogram'
          ? { descriptor, aggregationTemporality: CUMULATIVE, dataPointType: HISTOGRAM, dataPoints: points }
          : {
              descriptor,
              aggregationTemporality: CUMULATIVE,
              dataPointType: SUM,
              isMonotonic: def.kind === 'sum',
              dataPoints: points,
            }) as unknown as MetricData,
    );
  }
  return {
    resource: { attributes: resource } as unknown as ResourceMetrics['resource'],
    scopeMetrics: [{ scope: { name: 'l9gpu', version: scopeVersion }, metrics }],
  };
}
