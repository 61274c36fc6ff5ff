/**
 * Prometheus text exposition (0.0.4) of the latest batches, written here
 * rather than by @opentelemetry/exporter-prometheus: loading that package
 * (the metrics SDK, semantic conventions) costs the daemon ~8 MB of heap and
 * ~15 MB at start-up for a few string joins. The output is the exporter's
 * own, line for line, under the registry's Prometheus names
 * (test/system/sinks.test.ts compares them): target_info first, then per metric
 * HELP, UNIT, TYPE and one line per point, the resource labels picked by
 * [prometheus] resource_labels after each point's own. A histogram's point is
 * the exporter's lines too: _count, _sum, then _bucket with cumulative counts,
 * le being each bound as String() writes it, then +Inf.
 *
 * The page is made of pieces so that the pull sink renders each batch once,
 * not once per scrape: a batch's lines per metric, as bytes (batchLines), and
 * the page's order around them (pagePieces). Rendering the whole page as
 * strings at every scrape cost ~8 MB of garbage a scrape for a page of 3,000
 * engine series scraped ten times a second, which V8 grew its heap to hold
 * (test/alone/hostile.test.ts, engine-at-budget).
 */
import { ByteBuffer } from '../core/byte-buffer.js';
import { isStable, type Attributes, type Batch, type HistogramValue } from '../core/metrics/model.js';
import { prometheusName, type MetricDef } from '../core/metrics/registry.js';

const SP = 32;
const NL = 10;

const escape = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

/**
 * Attribute keys as label names, each worked out once: the same few dozen
 * keys are on every point. Bounded (an engine page's label names are its
 * user's): cleared when it holds LABEL_NAMES_MAX of them. A name is
 * [a-zA-Z_][a-zA-Z0-9_]*: other characters become _, runs of _ one (no
 * name starts with the reserved __), and one that would start with a digit
 * gets the key_ prefix OpenTelemetry's Prometheus translation gives it.
 */
const LABEL_NAMES_MAX = 4096;
const labelNames = new Map<string, string>();
function labelName(k: string): string {
  let n = labelNames.get(k);
  if (n === undefined) {
    if (labelNames.size >= LABEL_NAMES_MAX) labelNames.clear();
    n = k.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_');
    if (n === '' || (n.charCodeAt(0) >= 48 && n.charCodeAt(0) <= 57)) n = `key_${n}`;
    labelNames.set(k, n);
  }
  return n;
}

/**
 * What a label value may not hold raw: the three the format escapes (\\, ",
 * newline), and the control and invisible format characters (C0 but tab, DEL,
 * C1, Unicode Cf, the line and paragraph separators), which the format has
 * no escape for: a user's engine page writing ESC or BEL there would run its
 * escape sequences in the terminal of an admin who curls the node's page.
 * They become U+FFFD, as does a lone surrogate (\p{Cs}: UTF-8 writes it as
 * U+FFFD anyway, and two values differing in one must be one series here too).
 */
const NEEDS_ESCAPE = /[\\\n"\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\p{Cs}\u2028\u2029]/u;
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\p{Cs}\u2028\u2029]/gu;
function labelValue(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  // nearly every value has none of them: no copies through the replaces
  return NEEDS_ESCAPE.test(s) ? escape(s).replace(/"/g, '\\"').replace(UNSAFE, '\ufffd') : s;
}

const valueText = (v: number): string => (v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : `${v}`);

/**
 * A point's labels, unique by name: two attributes whose names sanitize to
 * one label (an engine page's x and _x, both vllm_x) would make a series
 * Prometheus refuses, and with it the node's whole page: the later gets
 * _1, _2... A constant label (a resource attribute) the point has a label
 * of the same name for is left to the point's. `hide`: attribute keys left
 * off ([prometheus] personal_labels).
 */
function labels(a: Attributes, extra: Constant, hide?: ReadonlySet<string>): string {
  let s = '';
  let used: Set<string> | undefined;
  let first: string | undefined;
  for (const k in a) {
    if (hide?.has(k)) continue;
    let n = labelName(k);
    // le is a histogram bucket's own label
    if (n === 'le') n = 'le_1';
    // a set is made only from the second label on: most points have a handful, all distinct
    if (first === undefined) first = n;
    else {
      if (!used) used = new Set([first]);
      if (used.has(n)) {
        // no second _ after one: _ and _1 would make __1, a reserved name
        const stem = n.endsWith('_') ? n : `${n}_`;
        let i = 1;
        while (used.has(`${stem}${i}`)) i++;
        n = `${stem}${i}`;
      }
      used.add(n);
    }
    s += `${s ? ',' : ''}${n}="${labelValue(a[k])}"`;
  }
  if (extra.text) {
    if (first !== undefined && extra.names.some((n) => n === first || used?.has(n))) {
      const own = used ?? new Set([first]);
      const kept = extra.parts.filter((_, i) => !own.has(extra.names[i]!));
      if (kept.length) s += `${s ? ',' : ''}${kept.join(',')}`;
    } else s += s ? `,${extra.text}` : extra.text;
  }
  return s ? `{${s}}` : '';
}

/** The labels every series carries after its own (resource attributes): their text, and each label's name and text. */
export interface Constant {
  readonly text: string;
  readonly names: readonly string[];
  readonly parts: readonly string[];
}

const NO_CONSTANT: Constant = { text: '', names: [], parts: [] };

/**
 * A point's label set, `{...}` with the constant labels: for attributes a
 * source hands again every collection (isStable), made once and kept in
 * `cache` for as long as they live.
 */
function labelsOf(
  a: Attributes,
  constant: Constant,
  cache: WeakMap<Attributes, string> | undefined,
  hide: ReadonlySet<string> | undefined,
): string {
  if (!cache || !isStable(a)) return labels(a, constant, hide);
  let l = cache.get(a);
  if (l === undefined) cache.set(a, (l = labels(a, constant, hide)));
  return l;
}

function histogramLines(w: ByteBuffer, name: string, l: string, h: HistogramValue): void {
  w.text(`${name}_count${l} ${valueText(h.count)}\n${name}_sum${l} ${valueText(h.sum)}\n`);
  const le = l ? `${l.slice(0, -1)},le="` : '{le="';
  let cumulative = 0;
  for (let i = 0; i < h.counts.length; i++) {
    cumulative += h.counts[i]!;
    w.text(name);
    w.text('_bucket');
    w.text(le);
    w.text(i < h.bounds.length ? `${h.bounds[i]}` : '+Inf');
    w.text('"} ');
    w.text(valueText(cumulative));
    w.byte(NL);
  }
}

/** The resource attributes `keep` picks, as the labels every series carries after its own. */
export function constantLabels(resource: Attributes, keep?: RegExp): Constant {
  const names: string[] = [];
  const parts: string[] = [];
  if (keep) {
    for (const k in resource) {
      if (!keep.test(k)) continue;
      const n = labelName(k);
      if (names.includes(n)) continue;
      names.push(n);
      parts.push(`${n}="${labelValue(resource[k])}"`);
    }
  }
  return { text: parts.join(','), names, parts };
}

/** The page's first lines: the resource as target_info. */
export function targetInfo(resource: Attributes): string {
  return `# HELP target_info Target metadata\n# TYPE target_info gauge\ntarget_info${labels(resource, NO_CONSTANT)} 1\n`;
}

/** A metric's HELP, UNIT and TYPE lines. */
export function metricHeader(def: MetricDef): string {
  const name = prometheusName(def);
  return (
    `# HELP ${name} ${escape(def.description)}\n${def.unit ? `# UNIT ${name} ${escape(def.unit)}\n` : ''}# ` +
    `TYPE ${name} ${def.kind === 'sum' ? 'counter' : def.kind === 'histogram' ? 'histogram' : 'gauge'}\n`
  );
}

/** What a page without a point says after target_info (the exporter's words). */
export const NO_METRICS = '# no registered metrics';

export interface LineOptions {
  /** The label sets of stable attributes, kept across batches (labelsOf). */
  readonly cache?: WeakMap<Attributes, string>;
  /** Attribute keys left off. */
  readonly hide?: ReadonlySet<string> | undefined;
  /** A point whose metric and labels an earlier point of the batch had: left out (Prometheus would refuse the sample), counted here. */
  readonly duplicate?: () => void;
}

/**
 * One batch's lines, written into `w` (from its start), by metric in the
 * order the batch first has each: views of w's buffer, good until w is
 * written again. `constant`: constantLabels(). Every series is written
 * once: a second point of one metric with the same labels (two source
 * series whose label names sanitize alike, values that differed only in
 * replaced characters, or labels left off) is left out.
 */
export function batchLines(b: Batch, w: ByteBuffer, constant: Constant, o: LineOptions = {}): Map<MetricDef, Buffer> {
  w.reset();
  const seen = new Map<MetricDef, Set<string>>();
  // where each run of one metric's points starts and ends in w: a metric's points are mostly one run
  const runs: { def: MetricDef; start: number; end: number }[] = [];
  let def: MetricDef | undefined;
  let name = '';
  let start = 0;
  for (let i = 0; i < b.points.length; i++) {
    const p = b.points[i]!;
    const hist = p.metric.kind === 'histogram';
    // a histogram metric's point without buckets is a plugin's mistake, not a histogram: left out, as by every sink
    if (hist && !p.hist) continue;
    if (p.metric !== def) {
      if (def) runs.push({ def, start, end: w.pos });
      def = p.metric;
      name = prometheusName(def);
      start = w.pos;
    }
    const l = labelsOf(p.attributes, constant, o.cache, o.hide);
    let series = seen.get(def);
    if (!series) seen.set(def, (series = new Set()));
    if (series.has(l)) {
      o.duplicate?.();
      continue;
    }
    series.add(l);
    if (hist) histogramLines(w, name, l, p.hist!);
    else {
      w.text(name);
      w.text(l);
      w.byte(SP);
      w.text(valueText(p.value));
      w.byte(NL);
    }
  }
  if (def) runs.push({ def, start, end: w.pos });
  // views taken once written: w's buffer may have grown (been replaced) meanwhile
  const bytes = w.buf;
  const byMetric = new Map<MetricDef, Buffer>();
  for (const r of runs) {
    const had = byMetric.get(r.def);
    const part = bytes.subarray(r.start, r.end);
    byMetric.set(r.def, had ? Buffer.concat([had, part]) : part);
  }
  return byMetric;
}

/**
 * A page's pieces in order: target_info, then per metric (in the order the
 * batches first have each) its header and each batch's lines of it, in batch
 * order.
 */
export function pagePieces(
  head: Buffer,
  parts: readonly ReadonlyMap<MetricDef, Buffer>[],
  header: (def: MetricDef) => Buffer,
  none: Buffer,
): Buffer[] {
  const byMetric = new Map<MetricDef, Buffer[]>();
  for (const part of parts) {
    for (const [def, bytes] of part) {
      const l = byMetric.get(def);
      if (l) l.push(bytes);
      else byMetric.set(def, [bytes]);
    }
  }
  const out = [head];
  if (byMetric.size === 0) out.push(none);
  for (const [def, l] of byMetric) out.push(header(def), ...l);
  return out;
}

/** keep: which resource attributes every series carries as labels too. */
export function renderExposition(batches: readonly Batch[], resource: Attributes, keep?: RegExp, hide?: ReadonlySet<string>): string {
  const constant = constantLabels(resource, keep);
  const parts = batches.map((b) => batchLines(b, new ByteBuffer(), constant, { hide }));
  return Buffer.concat(
    pagePieces(Buffer.from(targetInfo(resource)), parts, (def) => Buffer.from(metricHeader(def)), Buffer.from(NO_METRICS)),
  ).toString('utf8');
}
