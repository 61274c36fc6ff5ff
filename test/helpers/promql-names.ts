/**
 * Which metric names a PromQL expression reads, and which names the project
 * exports under Prometheus naming: dashboards and alert rules are checked
 * against the registry with these, so a renamed metric breaks a test rather
 * than a panel.
 */
import { METRICS, prometheusName } from '../../src/core/metrics/registry.js';

/** Series Prometheus itself makes for every scrape target or rule evaluation, not the daemon. */
export const PROMETHEUS_OWN = new Set([
  'up',
  'scrape_duration_seconds',
  'scrape_samples_scraped',
  'scrape_samples_post_metric_relabeling',
  'scrape_series_added',
  'ALERTS',
  'ALERTS_FOR_STATE',
]);

/** Every name the pull endpoint (and a backend with Prometheus naming) can carry for the registry's metrics. */
export function exportedPrometheusNames(): Set<string> {
  const out = new Set<string>(['target_info']);
  for (const def of METRICS) {
    const name = prometheusName(def);
    if (def.kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    else out.add(name);
  }
  return out;
}

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/**
 * An expression with what names no metric taken out: template variables
 * replaced by harmless values, strings emptied, label matchers, grouping
 * lists and range selectors removed. Grafana's variable queries
 * label_values(selector, label) and label_values(label) keep only the
 * selector: their last argument is a label, not a metric.
 */
export function promqlSkeleton(expr: string): string {
  let s = expr
    .replace(/\$\{?__\w+\}?/g, '5m')
    .replace(/\$\{\w+(:\w+)?\}|\$\w+/g, 'x')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  // label matchers {a="b"} and grouping lists by (a, b) / on(a) / group_left(a)
  s = s.replace(/\{[^}]*\}/g, ' ').replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  // range and subquery selectors [5m], [1h:1m]
  s = s.replace(/\[[^\]]*\]/g, ' ');
  return s
    .replace(/^\s*label_values\s*\(([^]*?),\s*[A-Za-z_]\w*\s*\)\s*$/, '($1)')
    .replace(/^\s*label_values\s*\(\s*[A-Za-z_]\w*\s*\)\s*$/, '');
}

/**
 * The metric names an expression selects. Strings, label matchers and grouping
 * lists are removed first; what is left that is not a function call, keyword,
 * duration or number is a metric name (PromQL's own grammar for identifiers).
 * Grafana's template variables ($__rate_interval, $job, ${gpu}) are replaced by
 * harmless values before parsing.
 */
export function metricNamesIn(expr: string): string[] {
  const s = promqlSkeleton(expr);
  const names = new Set<string>();
  const re = /[A-Za-z_:][A-Za-z0-9_:]*/g;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    const word = m[0];
    if (KEYWORDS.has(word.toLowerCase())) continue;
    // a number in exponent form or a duration like 5m already left; a function call is followed by (
    if (/^\s*\(/.test(s.slice(m.index + word.length))) continue;
    const before = s[m.index - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue;
    names.add(word);
  }
  return [...names];
}

/** The names an expression reads that neither the registry nor Prometheus itself has. */
export function unknownMetricNames(expr: string, known = exportedPrometheusNames()): string[] {
  return metricNamesIn(expr).filter((n) => !known.has(n) && !PROMETHEUS_OWN.has(n));
}
