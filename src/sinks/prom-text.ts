/**
 * Prometheus text exposition (0.0.4) of the latest batches, written here
 * rather than by @opentelemetry/exporter-prometheus: loading that package
 * (the metrics SDK, semantic conventions) costs the daemon ~8 MB of heap and
 * ~15 MB at start-up for a few string joins. The output is the exporter's
 * own, line for line, under the registry's Prometheus names
 * (test/sinks.test.ts compares them): target_info first, then per metric
 * HELP, UNIT, TYPE and one line per point, the resource labels picked by
 * [prometheus] resource_labels after each point's own.
 */
import type { Attributes, Batch } from '../core/metrics/model.js';
import { prometheusName, type MetricDef } from '../core/metrics/registry.js';

const escape = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const labelName = (k: string): string => k.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_');
const labelValue = (v: unknown): string => escape(typeof v === 'string' ? v : JSON.stringify(v)).replace(/"/g, '\\"');
const valueText = (v: number): string => (v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : `${v}`);

function labels(a: Attributes, extra: string): string {
  let s = '';
  for (const k in a) s += `${s ? ',' : ''}${labelName(k)}="${labelValue(a[k])}"`;
  if (extra) s += s ? `,${extra}` : extra;
  return s ? `{${s}}` : '';
}

/** keep: which resource attributes every series carries as labels too. */
export function renderExposition(batches: readonly Batch[], resource: Attributes, keep?: RegExp): string {
  let constant = '';
  if (keep) for (const k in resource) if (keep.test(k)) constant += `${constant ? ',' : ''}${labelName(k)}="${labelValue(resource[k])}"`;
  const byMetric = new Map<MetricDef, string[]>();
  for (const b of batches) {
    for (const p of b.points) {
      let lines = byMetric.get(p.metric);
      if (!lines) byMetric.set(p.metric, (lines = []));
      lines.push(`${prometheusName(p.metric)}${labels(p.attributes, constant)} ${valueText(p.value)}\n`);
    }
  }
  let out = `# HELP target_info Target metadata\n# TYPE target_info gauge\ntarget_info${labels(resource, '')} 1\n`;
  if (byMetric.size === 0) return `${out}# no registered metrics`;
  for (const [def, lines] of byMetric) {
    const name = prometheusName(def);
    out += `# HELP ${name} ${escape(def.description)}\n`;
    if (def.unit) out += `# UNIT ${name} ${escape(def.unit)}\n`;
    out += `# TYPE ${name} ${def.kind === 'sum' ? 'counter' : 'gauge'}\n${lines.join('')}`;
  }
  return out;
}
