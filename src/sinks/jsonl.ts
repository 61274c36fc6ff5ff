/**
 * The stdout contract, shared by the stdout, file and webhook sinks: one JSON
 * object per data point,
 *   {"time": ISO-8601, "name", "unit", "kind": "gauge"|"sum"|"histogram",
 *    ["monotonic"], "value", ["sum", "bounds", "counts"], "attributes": {...},
 *    "resource": {...}}
 * A histogram's value is its count; "counts" are per bucket, not cumulative,
 * one more than "bounds" (the last one above the last bound), as OTLP has
 * them. Resource attributes go under "resource" (not merged) so a point's own
 * attributes stay unambiguous. Built by string concatenation: the metric part
 * of each line is cached per metric.
 */
import type { Attributes, Batch } from '../core/metrics/model.js';
import type { MetricDef } from '../core/metrics/registry.js';

const heads = new WeakMap<MetricDef, string>();

function head(def: MetricDef): string {
  let h = heads.get(def);
  if (h === undefined) {
    const kind =
      def.kind === 'gauge' || def.kind === 'histogram' ? `"kind":"${def.kind}"` : `"kind":"sum","monotonic":${def.kind === 'sum'}`;
    h = `"name":${JSON.stringify(def.name)},"unit":${JSON.stringify(def.unit)},${kind},"value":`;
    heads.set(def, h);
  }
  return h;
}

/** One JSON object per point, without a trailing newline; resource omitted when undefined. */
export function pointJson(batch: Batch, resource: Attributes | undefined): string[] {
  const time = `{"time":"${new Date(batch.time).toISOString()}",`;
  const tail = resource ? `,"resource":${JSON.stringify(resource)}}` : '}';
  const out = new Array<string>(batch.points.length);
  let n = 0;
  for (let i = 0; i < batch.points.length; i++) {
    const p = batch.points[i]!;
    if (p.metric.kind !== 'histogram') out[n++] = `${time}${head(p.metric)}${p.value},"attributes":${JSON.stringify(p.attributes)}${tail}`;
    // a histogram metric's point without buckets is a plugin's mistake, not a histogram: left out, as by every sink
    else if (p.hist)
      out[n++] =
        `${time}${head(p.metric)}${p.hist.count},"sum":${p.hist.sum},"bounds":${JSON.stringify(p.hist.bounds)},` +
        `"counts":${JSON.stringify(p.hist.counts)},"attributes":${JSON.stringify(p.attributes)}${tail}`;
  }
  out.length = n;
  return out;
}

/** Newline-terminated JSON lines for a batch. */
export function jsonLines(batch: Batch, resource: Attributes | undefined): string {
  const lines = pointJson(batch, resource);
  return lines.length ? lines.join('\n') + '\n' : '';
}
