/**
 * Which metric names a PromQL expression reads, and which names the project
 * exports under Prometheus naming: dashboards and alert rules are checked
 * against the registry with these, so a renamed metric breaks a test rather
 * than a panel. Both namings of a sink (`semantic_conventions = l9gpu | hw`):
 * the hardware conventions' names of CONVENTION_ROWS are exported names too,
 * and namingGaps says where an expression reads one naming of such a metric
 * and not the other.
 */
import { CONVENTION_ROWS } from '../../src/core/metrics/conventions.js';
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

/**
 * Every name the pull endpoint (and a backend with Prometheus naming) can carry for the registry's metrics, in
 * either naming: the registry's, and the conventions' names a sink with `semantic_conventions = hw` sends instead.
 */
export function exportedPrometheusNames(): Set<string> {
  const out = new Set<string>(['target_info']);
  for (const def of [...METRICS, ...CONVENTION_ROWS.map((r) => r.to)]) {
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

/** Grafana's template variables replaced by harmless values: $__rate_interval and the like by a duration. */
const withoutVariables = (expr: string): string => expr.replace(/\$\{?__\w+\}?/g, '5m').replace(/\$\{\w+(:\w+)?\}|\$\w+/g, 'x');

/**
 * An expression with what names no metric taken out: template variables
 * replaced by harmless values, strings emptied, label matchers, grouping
 * lists and range selectors removed. Grafana's variable queries
 * label_values(selector, label) and label_values(label) keep only the
 * selector: their last argument is a label, not a metric.
 */
export function promqlSkeleton(expr: string): string {
  let s = withoutVariables(expr).replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
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
 * A `__name__` matcher adds the names it selects: `{__name__="a"}` a, and
 * `{__name__=~"a|b"}` a and b (any other regex is returned as it is, which
 * names no metric). Grafana's template variables ($__rate_interval, $job,
 * ${gpu}) are replaced by harmless values before parsing.
 */
export function metricNamesIn(expr: string): string[] {
  const s = promqlSkeleton(expr);
  const names = new Set<string>();
  for (const sel of selectorsIn(expr)) for (const n of namesOfMatchers(sel.matchers)) names.add(n);
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

// ---------------------------------------------------------------- selectors

export interface LabelMatcher {
  readonly label: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
}

/** One series selector of an expression: `name{matchers}`, `name` or `{matchers}`. */
export interface Selector {
  /** As written, template variables replaced. */
  readonly text: string;
  /** The metric names it selects: its name, or those of its `__name__` matcher. */
  readonly names: readonly string[];
  readonly matchers: readonly LabelMatcher[];
}

const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** The names a `__name__` matcher selects: `=` one, `=~` an alternation of names (another regex: itself). */
function namesOfMatchers(matchers: readonly LabelMatcher[]): string[] {
  const m = matchers.find((x) => x.label === '__name__');
  if (!m || m.op === '!=' || m.op === '!~') return [];
  if (m.op === '=' || !/^[A-Za-z_:][\w:]*(\|[A-Za-z_:][\w:]*)*$/.test(m.value)) return [m.value];
  return m.value.split('|');
}

function unquote(s: string): string {
  if (s.startsWith('"')) return JSON.parse(s) as string;
  return s.startsWith('`') ? s.slice(1, -1) : s.slice(1, -1).replace(/\\(.)/g, '$1');
}

const TOKEN = new RegExp(
  [
    /\s+/,
    /("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)/, // 1: a string
    // 2: a range, duration, number
    /(\[[^\]]*\]|\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*(?![\w.])|(?:0x[0-9a-fA-F]+|\d*\.?\d+(?:[eE][+-]?\d+)?)(?![\w.]))/,
    /([A-Za-z_:][\w:]*)/, // 3: an identifier
    /(=~|!~|!=|==|>=|<=|[^])/, // 4: an operator or punctuation
  ]
    .map((r) => r.source)
    .join('|'),
  'y',
);

/**
 * The series selectors of an expression (Grafana's label_values(selector, label): its selector), with their label
 * matchers: a small PromQL tokenizer, enough for the dashboards' and rules' expressions. A brace that holds no
 * label matchers (a template's %q in an annotation's query) gives a selector without them.
 */
export function selectorsIn(expr: string): Selector[] {
  const s = withoutVariables(expr)
    .replace(/^\s*label_values\s*\(([^]*?),\s*[A-Za-z_]\w*\s*\)\s*$/, '$1')
    .replace(/^\s*label_values\s*\(\s*[A-Za-z_]\w*\s*\)\s*$/, '');
  const tokens: { kind: 'str' | 'skip' | 'id' | 'op'; text: string; at: number }[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < s.length) {
    const m = TOKEN.exec(s)!;
    const kind = m[1] ? 'str' : m[2] ? 'skip' : m[3] ? 'id' : m[4] ? 'op' : undefined;
    if (kind) tokens.push({ kind, text: m[0], at: m.index });
  }
  /** The matchers from tokens[i] (the token after `{`) to the closing `}`, whose index it returns. */
  const matchersFrom = (i: number, into: LabelMatcher[]): number => {
    while (i < tokens.length && tokens[i]!.text !== '}') {
      const [label, op, value] = [tokens[i], tokens[i + 1], tokens[i + 2]];
      if (label?.kind === 'id' && op && ['=', '!=', '=~', '!~'].includes(op.text) && value?.kind === 'str') {
        into.push({ label: label.text, op: op.text as LabelMatcher['op'], value: unquote(value.text) });
        i += 3;
      } else i++;
      if (tokens[i]?.text === ',') i++;
    }
    return Math.min(i, tokens.length - 1);
  };
  const out: Selector[] = [];
  const selector = (from: number, to: number, names: string[], matchers: LabelMatcher[]) =>
    out.push({ text: s.slice(tokens[from]!.at, tokens[to]!.at + tokens[to]!.text.length), names, matchers });
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (t.kind === 'id') {
      const word = t.text.toLowerCase();
      if (GROUPING.has(word) && next?.text === '(') {
        while (i < tokens.length && tokens[i]!.text !== ')') i++;
        continue;
      }
      // a function call, or an aggregation with its grouping first: sum by (a) (...)
      if (next?.text === '(' || (next?.kind === 'id' && ['by', 'without'].includes(next.text.toLowerCase()))) continue;
      if (KEYWORDS.has(word)) continue;
      const matchers: LabelMatcher[] = [];
      const end = next?.text === '{' ? matchersFrom(i + 2, matchers) : i;
      selector(i, end, [t.text], matchers);
      i = end;
    } else if (t.text === '{') {
      const matchers: LabelMatcher[] = [];
      const end = matchersFrom(i + 1, matchers);
      selector(i, end, namesOfMatchers(matchers), matchers);
      i = end;
    }
  }
  return out;
}

// ---------------------------------------------------------------- both namings

/** A metric the conventions rename, under its two Prometheus names (CONVENTION_ROWS). */
export interface NamingPair {
  readonly l9gpu: string;
  readonly hw: string;
  /** Labels the conventions' series carry with a fixed value (hw_type="gpu", hw_gpu_task="general"). */
  readonly set: Readonly<Record<string, string>>;
  /** One l9gpu point as several (gpu_health as hw_status, one series per hw_state): not one selector for both. */
  readonly expand: boolean;
}

const sanitize = (k: string): string => k.replace(/[^A-Za-z0-9_]/g, '_');

export const NAMING_PAIRS: readonly NamingPair[] = CONVENTION_ROWS.map((r) => ({
  l9gpu: prometheusName(r.from),
  hw: prometheusName(r.to),
  set: Object.fromEntries(Object.entries(r.set).map(([k, v]) => [sanitize(k), String(v)])),
  expand: r.expand !== undefined,
}));

/** A name of either naming as the registry's Prometheus name: hw_power_watts -> gpu_power_draw_watts. */
export function l9gpuName(name: string): string {
  return NAMING_PAIRS.find((p) => p.hw === name)?.l9gpu ?? name;
}

/**
 * Where an expression fails a site whose nodes send either naming, or both: for every metric of CONVENTION_ROWS
 * it reads, it must read the other name too, and
 * - a selector of the registry's name also selects the conventions' name (`{__name__=~"gpu_power_draw_watts|
 *   hw_power_watts", ...}`), except for gpu_health, whose hw_status is one series per state (its own selectors);
 * - a selector of the conventions' name fixes the labels the conventions set (hw_type, hw_gpu_task) to their value,
 *   so that another component's series (a PSU's hw_power_watts) is not read, and lets them be absent (`=~"|gpu"`)
 *   where it also selects the registry's name, whose series do not have them.
 * Empty when it has none of these gaps.
 */
export function namingGaps(expr: string): string[] {
  const gaps: string[] = [];
  const names = new Set(metricNamesIn(expr));
  const selectors = selectorsIn(expr);
  for (const p of NAMING_PAIRS) {
    if (names.has(p.l9gpu) !== names.has(p.hw))
      gaps.push(`reads ${names.has(p.l9gpu) ? `${p.l9gpu}, not ${p.hw}` : `${p.hw}, not ${p.l9gpu}`}`);
    for (const sel of selectors) {
      const both = sel.names.includes(p.l9gpu) && sel.names.includes(p.hw);
      if (sel.names.includes(p.l9gpu) && !both && !p.expand) gaps.push(`${sel.text} selects ${p.l9gpu} without ${p.hw}`);
      if (!sel.names.includes(p.hw)) continue;
      for (const [label, value] of Object.entries(p.set)) {
        const m = sel.matchers.find((x) => x.label === label);
        const ok = both
          ? m?.op === '=~' && (m.value === `|${value}` || m.value === `${value}|`)
          : (m?.op === '=' || m?.op === '=~') && m.value === value;
        if (!ok) gaps.push(`${sel.text} selects ${p.hw} without ${label}${both ? `=~"|${value}"` : `="${value}"`}`);
      }
    }
  }
  return gaps;
}
