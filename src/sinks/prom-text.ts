/**
 * Prometheus text exposition (0.0.4) of the latest batches, written here
 * rather than by @opentelemetry/exporter-prometheus: loading that package
 * (the metrics SDK, semantic conventions) costs the daemon ~8 MB of heap and
 * ~15 MB at start-up for a few string joins. The output is the exporter's
 * own, line for line, under the registry's Prometheus names
 * (test/sinks.test.ts compares them): target_info first, then per metric
 * HELP, UNIT, TYPE and one line per point, the resource labels picked by
 * [prometheus] resource_labels after each point's own. A histogram's point is
 * the exporter's lines too: _count, _sum, then _bucket with cumulative counts,
 * le being each bound as String() writes it, then +Inf.
 */
import type { Attributes, Batch, HistogramValue } from '../core/metrics/model.js';
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

function histogramLines(name: string, a: Attributes, constant: string, h: HistogramValue): string {
  const l = labels(a, constant);
  let out = `${name}_count${l} ${valueText(h.count)}\n${name}_sum${l} ${valueText(h.sum)}\n`;
  const le = l ? `${l.slice(0, -1)},le="` : '{le="';
  let cumulative = 0;
  for (let i = 0; i < h.counts.length; i++) {
    cumulative += h.counts[i]!;
    out += `${name}_bucket${le}${i < h.bounds.length ? h.bounds[i] : '+Inf'}"} ${valueText(cumulative)}\n`;
  }
  return out;
}

/** keep: which resource attributes every series carries as labels too. */
export function renderExposition(batches: readonly Batch[], resource: Attributes, keep?: RegExp): string {
  let constant = '';
  if (keep) for (const k in resource) if (keep.test(k)) constant += `${constant ? ',' : ''}${labelName(k)}="${labelValue(resource[k])}"`;
  const byMetric = new Map<MetricDef, string[]>();
  for (const b of batches) {
    for (const p of b.points) {
      const hist = p.metric.kind === 'histogram';
      // a histogram metric's point without buckets is a plugin's mistake, not a histogram: left out, as by every sink
      if (hist && !p.hist) continue;
      let lines = byMetric.get(p.metric);
      if (!lines) byMetric.set(p.metric, (lines = []));
      lines.push(hist ? histogramLines(prometheusName(p.metric), p.attributes, constant, p.hist!) : `${prometheusName(p.metric)}${labels(p.attributes, constant)} ${valueText(p.value)}\n`);
    }
  }
  let out = `# HELP target_info Target metadata\n# TYPE target_info gauge\ntarget_info${labels(resource, '')} 1\n`;
  if (byMetric.size === 0) return `${out}# no registered metrics`;
  for (const [def, lines] of byMetric) {
    const name = prometheusName(def);
    out += `# HELP ${name} ${escape(def.description)}\n`;
    if (def.unit) out += `# UNIT ${name} ${escape(def.unit)}\n`;
    out += `# TYPE ${name} ${def.kind === 'sum' ? 'counter' : def.kind === 'histogram' ? 'histogram' : 'gauge'}\n${lines.join('')}`;
  }
  return out;
}
