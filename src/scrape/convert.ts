/**
 * A parsed /metrics page -> registry points, by a table of rules (one per
 * metric of an engine). Every series of a mapped family goes out (every
 * model, every label); a family the table does not name is left alone.
 *
 * - Renames across versions: a rule lists the current name first, then the
 *   older ones; the first one present on the page wins (vLLM 0.9-0.11 expose
 *   both gpu_cache_usage_perc and kv_cache_usage_perc: one series, not two).
 * - Counters are read as x_total or x (TGI and Triton write no _total), as
 *   monotonic sums whose start is the engine's own x_created when it has one,
 *   else the first scrape, and the scrape that saw the counter go down.
 * - Histograms go out as histograms, plus a gauge of their p50/p95/p99 over
 *   the scrape window (HistogramWindows: bucket deltas, reset-aware).
 * - Source labels become attributes: the shared ones by the engine's table
 *   (model_name -> gen_ai.request.model), the rest as <engine>.<label>.
 * - A series whose Labels are frozen (a LabelSets' of exposition.ts: the same
 *   object page after page) keeps what was made of it in ConvertState: its
 *   attributes are made once and handed again, stable (model.ts), so the
 *   sinks keep what they make of them too. A page of 3,000 series then makes
 *   its points and little else.
 */
import { stableAttributes, type Attributes, type Emitter, type HistogramValue } from '../core/metrics/model.js';
import type { MetricDef } from '../core/metrics/registry.js';
import { parseNumber, type Family, type Labels, type Sample } from './exposition.js';
import { clip } from '../core/printable.js';
import { boundLabel } from '../core/bound-label.js';
import { HistogramWindows, quantileOf } from './histogram-window.js';

export const QUANTILES = [0.5, 0.95, 0.99] as const;

export interface SeriesRule {
  /** Family names on the page, the current one first, then older ones. A counter's without _total. */
  readonly names: readonly string[];
  readonly metric: MetricDef;
  /** Source unit -> the metric's unit (a histogram's bounds and sum too): Triton's microseconds 1e-6, MiB 1048576. */
  readonly scale?: number;
  /** A histogram rule's window quantiles gauge (p50, p95, p99 over the last scrape window). */
  readonly quantiles?: MetricDef;
  /** Attributes every point of this rule carries (a temperature's sensor, a direction). */
  readonly attributes?: Attributes;
  /** The same series again under another metric (the gen_ai.* dual namespace), when enabled. */
  readonly also?: MetricDef;
}

export interface EngineTable {
  /** The engine's name: the prefix of its metrics and of the attributes made of unnamed labels. */
  readonly engine: string;
  readonly rules: readonly SeriesRule[];
  /** Source label -> attribute key, for labels with a shared meaning. A label mapped to '' is dropped. */
  readonly labels: Readonly<Record<string, string>>;
  /**
   * A series' identity from its labels, when the engine's labels name a GPU
   * (dcgm-exporter): those attributes replace the endpoint's, and the labels
   * `labels` does not map are dropped. A string: why the series has none (skipped).
   */
  readonly identity?: (labels: Labels) => Attributes | string;
  /** A value that means "no data" (DCGM's blank sentinels): skipped. */
  readonly isBlank?: (value: number) => boolean;
  /** Rules that run only when this says so (dcgm's gpu.* fields, off while nvml runs). */
  readonly enabled?: (rule: SeriesRule) => boolean;
}

/** An engine's points name it (gen_ai.provider.name, which the GenAI conventions require); dcgm's GPU points do not. */
export function providerAttributes(table: EngineTable): Attributes {
  return table.rules.some((r) => r.metric.scope === 'engine') ? { 'gen_ai.provider.name': table.engine } : {};
}

/** What was made of one series by one rule, kept by its frozen Labels. */
interface Made {
  /** Its attributes, or why it has none (its identity: dcgm's UUID). */
  readonly attributes: Attributes | string;
  /** Label names dropped and values cut for their length: told again each page, as the first time (counted per page). */
  readonly names?: readonly string[];
  readonly values?: readonly string[];
  /** Its key among the counters and histogram windows, and the family it was made with. */
  key?: string;
  keyFamily?: string;
  /** The attributes of its `also` points, and of its quantile points (by QUANTILES' order). */
  also?: Attributes;
  quantiles?: Attributes[];
}

/** What `made` was made with: another base (the engine restarted, another pid) or bound makes everything again. */
interface MadeWith {
  readonly base: Attributes;
  readonly labelLength: number;
  readonly alsoAttributes: Attributes | undefined;
}

const sameAttributes = (a: Attributes | undefined, b: Attributes | undefined): boolean => {
  if (a === b) return true;
  if (!a || !b) return false;
  let n = 0;
  for (const k in a) {
    if (a[k] !== b[k]) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
};

/** Keeps what a conversion needs from one scrape to the next: counter starts, histogram windows, what was made of each series. */
export class ConvertState {
  readonly windows = new HistogramWindows();
  private readonly counters = new Map<string, { start: number; last: number; seen: number }>();
  private round = 0;
  /** By rule, then by the series' frozen Labels: gone with the Labels (a series no longer on the page). */
  private made = new Map<SeriesRule, WeakMap<Labels, Made>>();
  private madeWith: MadeWith | undefined;
  /** labelKey() of frozen Labels, with and without le. */
  private readonly keys = new WeakMap<Labels, string>();
  private readonly keysLe = new WeakMap<Labels, string>();

  begin(): void {
    this.round++;
    this.windows.beginScrape();
  }

  end(): void {
    this.windows.endScrape();
    for (const [k, v] of this.counters) if (v.seen !== this.round) this.counters.delete(k);
  }

  /** The start of a cumulative series: its created time, else when it was first seen or last went down. */
  startOf(key: string, value: number, now: number, created: number | undefined): number {
    const c = this.counters.get(key);
    let start = c?.start ?? now;
    if (c && value < c.last) start = now; // the engine restarted: a new series from here
    if (created !== undefined && created <= now && (!c || value >= c.last)) start = created;
    if (c) {
      c.start = start;
      c.last = value;
      c.seen = this.round;
    } else this.counters.set(key, { start, last: value, seen: this.round });
    return start;
  }

  /** What was made by `rule` of the series of each frozen Labels, in this context (another context: nothing). */
  madeBy(rule: SeriesRule, w: MadeWith): WeakMap<Labels, Made> {
    const had = this.madeWith;
    // one context a page: compared at its first series
    if (had !== w) {
      if (
        !had ||
        had.labelLength !== w.labelLength ||
        !sameAttributes(had.base, w.base) ||
        !sameAttributes(had.alsoAttributes, w.alsoAttributes)
      )
        this.made = new Map();
      this.madeWith = w;
    }
    let m = this.made.get(rule);
    if (!m) this.made.set(rule, (m = new WeakMap()));
    return m;
  }

  /** labelKey(), kept for frozen Labels. */
  keyOf(labels: Labels, without?: 'le'): string {
    if (!Object.isFrozen(labels)) return labelKey(labels, without);
    const keys = without ? this.keysLe : this.keys;
    let k = keys.get(labels);
    if (k === undefined) keys.set(labels, (k = labelKey(labels, without)));
    return k;
  }
}

/** A series' identity from its labels (sorted: the same series on any page), without the ones named. */
function labelKey(labels: Labels, without?: string): string {
  const keys = Object.keys(labels);
  if (keys.length > 1) keys.sort();
  let k = '';
  for (const key of keys) if (key !== without) k += `${key}\u0000${labels[key]}\u0001`;
  return k;
}

export interface ConvertContext {
  readonly out: Emitter;
  readonly state: ConvertState;
  /** Identity every point carries (the endpoint, the process). */
  readonly base: Attributes;
  readonly now: number;
  /** Emit the rules' `also` metrics (the gen_ai.* namespace). */
  readonly also?: boolean;
  /** Attributes added to the `also` points ({gen_ai.provider.name}). */
  readonly alsoAttributes?: Attributes;
  /**
   * Longest label value taken from the page ([limits] label_length): the page
   * is the engine's user's, and a model name of 100 kB would ride on every
   * point. A longer value is cut (boundLabel), a longer label name dropped.
   */
  readonly labelLength?: number;
  /** Told of each value cut or label name dropped (the ledger counts them against the page's owner). */
  readonly onCut?: (label: string) => void;
}

/** Converts one page; returns how many series went out. */
export function convertPage(table: EngineTable, families: readonly Family[], ctx: ConvertContext): number {
  const byName = new Map<string, Family>();
  for (const f of families) byName.set(f.name, f);
  const attrCache = new Map<string, string>();
  const max = ctx.labelLength ?? Infinity;
  const attrKey = (label: string): string => {
    let k = attrCache.get(label);
    if (k === undefined) {
      // own keys only: a label named constructor or __proto__ is no entry of the table
      k = Object.hasOwn(table.labels, label) ? table.labels[label]! : label.length > max ? '' : `${table.engine}.${label}`;
      if (!k && label.length > max) ctx.onCut?.(label);
      attrCache.set(label, k);
    }
    return k;
  };
  const withs: MadeWith = { base: ctx.base, labelLength: max, alsoAttributes: ctx.alsoAttributes };
  /** What a series is made of: its attributes (or why none), and what of its labels was too long. */
  const make = (rule: SeriesRule, labels: Labels, without: string | undefined): Made => {
    let names: string[] | undefined;
    let values: string[] | undefined;
    const value = (label: string, v: string): string => {
      if (v.length <= max) return v;
      ctx.onCut?.(label);
      (values ??= []).push(label);
      return boundLabel(v, max);
    };
    let a: Attributes;
    if (table.identity) {
      const id = table.identity(labels);
      if (typeof id === 'string') return { attributes: id };
      a = { ...id };
      for (const l in labels)
        if (l !== without && Object.hasOwn(table.labels, l) && table.labels[l]) a[table.labels[l]!] = value(l, labels[l]!);
    } else {
      a = { ...ctx.base };
      for (const l in labels) {
        if (l === without) continue;
        const k = attrKey(l);
        if (k) a[k] = value(l, labels[l]!);
        else if (l.length > max && !Object.hasOwn(table.labels, l)) (names ??= []).push(l);
      }
    }
    if (rule.attributes) Object.assign(a, rule.attributes);
    return { attributes: a, ...(names ? { names } : {}), ...(values ? { values } : {}) };
  };
  /** What was made of a series: kept by its Labels when they are frozen (the same page after page), else made now. */
  const made = (rule: SeriesRule, labels: Labels, without?: string): Made | undefined => {
    let m: Made | undefined;
    if (Object.isFrozen(labels)) {
      const kept = ctx.state.madeBy(rule, withs);
      m = kept.get(labels);
      if (m) {
        // the page's budget is told of the series' long labels as it would have been making them
        if (m.names) for (const l of m.names) attrKey(l);
        if (m.values) for (const l of m.values) ctx.onCut?.(l);
      } else {
        m = make(rule, labels, without);
        if (typeof m.attributes !== 'string') stableAttributes(m.attributes);
        kept.set(labels, m);
      }
    } else m = make(rule, labels, without);
    if (typeof m.attributes === 'string') {
      ctx.out.unreadable(`${rule.names[0]} series`, m.attributes);
      return undefined;
    }
    return m;
  };
  let n = 0;
  for (const rule of table.rules) {
    if (table.enabled && !table.enabled(rule)) continue;
    const fam = findFamily(byName, rule);
    if (!fam) continue;
    const scale = rule.scale ?? 1;
    const kind = rule.metric.kind;
    if (kind === 'histogram') {
      n += histograms(rule, fam, byName, ctx, scale, (labels) => made(rule, labels, 'le'));
      continue;
    }
    const created = kind === 'sum' ? createdTimes(fam, byName, ctx.state) : undefined;
    // indexed loops over a page's samples (thousands): an unoptimized for-of makes an object a sample
    const samples = fam.samples;
    const total = `${fam.name}_total`;
    for (let i = 0; i < samples.length; i++) {
      const s = samples[i]!;
      if (!isValueSample(s, fam, kind, total) || table.isBlank?.(s.value)) continue;
      const v = s.value * scale;
      const m = made(rule, s.labels);
      if (!m) continue;
      const a = m.attributes as Attributes;
      if (kind === 'sum') {
        const start = ctx.state.startOf(seriesKey(m, fam, s.labels, ctx.state), v, ctx.now, created?.get(ctx.state.keyOf(s.labels)));
        ctx.out.add(rule.metric, v, a, start);
        if (ctx.also && rule.also) ctx.out.add(rule.also, v, alsoOf(m, a, ctx), start);
      } else {
        ctx.out.add(rule.metric, v, a);
        if (ctx.also && rule.also) ctx.out.add(rule.also, v, alsoOf(m, a, ctx));
      }
      n++;
    }
  }
  return n;
}

/** A series' key among the counters and histogram windows: its family's name and its labels' key (le aside). */
function seriesKey(m: Made, fam: Family, labels: Labels, state: ConvertState, without?: 'le'): string {
  if (m.keyFamily === fam.name) return m.key!;
  const key = `${fam.name}\u0002${state.keyOf(labels, without)}`;
  // kept only with attributes that are (a Made the conversion keeps): a fresh one is gone after this point
  if (Object.isFrozen(m.attributes)) {
    m.key = key;
    m.keyFamily = fam.name;
  }
  return key;
}

/** The attributes of a series' `also` point: its own and the `also` ones. */
function alsoOf(m: Made, a: Attributes, ctx: ConvertContext): Attributes {
  if (m.also) return m.also;
  const also = { ...a, ...ctx.alsoAttributes };
  if (Object.isFrozen(a)) m.also = stableAttributes(also);
  return also;
}

/** The attributes of a series' window quantile point `i` (QUANTILES[i]). */
function quantileAttributes(m: Made, a: Attributes, i: number): Attributes {
  const had = m.quantiles?.[i];
  if (had) return had;
  const q = { ...a, quantile: QUANTILES[i]! };
  if (Object.isFrozen(a)) (m.quantiles ??= [])[i] = stableAttributes(q);
  return q;
}

/**
 * Why a page gave the table nothing although it is the engine's: the names of
 * the table's families the page declares (# TYPE, # HELP) when none of them
 * has a sample, else undefined (a page without them is not this engine's; one
 * with samples gave points or said why not). `renamed`: a sample of the page
 * named like one of them with its colons made underscores, the mark of a
 * server that escaped the sample names and not the metadata (prometheus_client
 * 0.23 and later under `escaping=underscores`, client_python#1177).
 */
export function familiesWithoutSamples(table: EngineTable, families: readonly Family[]): { names: string[]; renamed?: string } | undefined {
  const byName = new Map<string, Family>();
  for (const f of families) byName.set(f.name, f);
  const names: string[] = [];
  for (const rule of table.rules) {
    if (table.enabled && !table.enabled(rule)) continue;
    for (const name of rule.names) {
      const f = byName.get(name) ?? (rule.metric.kind === 'sum' ? byName.get(`${name}_total`) : undefined);
      if (!f) continue;
      if (f.samples.length) return undefined;
      names.push(f.name);
    }
  }
  if (!names.length) return undefined;
  const escaped = names.filter((n) => n.includes(':')).map((n) => n.replace(/:/g, '_'));
  const renamed = families.find((f) => f.samples.length && escaped.some((x) => f.name === x || f.name.startsWith(`${x}_`)))?.name;
  return renamed ? { names, renamed } : { names };
}

/** The family a rule reads: its first name present (a counter's also with _total, as Prometheus text names it). */
function findFamily(byName: Map<string, Family>, rule: SeriesRule): Family | undefined {
  for (const name of rule.names) {
    const f = byName.get(name) ?? (rule.metric.kind === 'sum' ? byName.get(`${name}_total`) : undefined);
    if (f && f.samples.length) return f;
  }
  return undefined;
}

/** The samples that carry the value: a counter's x_total (`total`) or x (never x_created), a gauge's own. */
function isValueSample(s: Sample, fam: Family, kind: MetricDef['kind'], total: string): boolean {
  if (kind !== 'sum') return s.name === fam.name;
  if (s.name.endsWith('_created')) return false;
  return s.name === fam.name || s.name === total;
}

/** A counter's creation times (ms), by label set: OpenMetrics' x_created samples, or prometheus_client's separate x_created gauge. */
function createdTimes(fam: Family, byName: Map<string, Family>, state: ConvertState): Map<string, number> | undefined {
  const base = fam.name.endsWith('_total') ? fam.name.slice(0, -6) : fam.name;
  const own = `${base}_created`;
  const separate = byName.get(own)?.samples;
  let m: Map<string, number> | undefined;
  for (const samples of [fam.samples, separate ?? []]) {
    for (const s of samples) {
      if (samples === fam.samples && s.name !== own) continue;
      if (!(Number.isFinite(s.value) && s.value > 0)) continue;
      (m ??= new Map()).set(state.keyOf(s.labels), s.value * 1000);
    }
  }
  return m;
}

/** A histogram family's series: buckets by label set, each checked, sent, and its window's quantiles. */
function histograms(
  rule: SeriesRule,
  fam: Family,
  byName: Map<string, Family>,
  ctx: ConvertContext,
  scale: number,
  made: (l: Labels) => Made | undefined,
): number {
  const series = new Map<string, { labels: Labels; le: [number, number][]; sum?: number; count?: number; created?: number }>();
  const get = (labels: Labels) => {
    const k = ctx.state.keyOf(labels, 'le');
    let s = series.get(k);
    if (!s) series.set(k, (s = { labels, le: [] }));
    return s;
  };
  const base = fam.name;
  const [bucket, sum, count, created] = [`${base}_bucket`, `${base}_sum`, `${base}_count`, `${base}_created`];
  const samples = fam.samples;
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    if (s.name === bucket) {
      // le read as Prometheus reads it (Go's ParseFloat): "", "0x10" or " 1 " are no bound
      const le = parseNumber(s.labels.le ?? '');
      if (le === undefined || Number.isNaN(le)) {
        ctx.out.unreadable(bucket, `le="${clip(s.labels.le ?? '', 40)}" is not a number`);
        continue;
      }
      get(s.labels).le.push([le, s.value]);
    } else if (s.name === sum) get(s.labels).sum = s.value;
    else if (s.name === count) get(s.labels).count = s.value;
    else if (s.name === created) get(s.labels).created = s.value * 1000;
  }
  // prometheus_client's text format writes a histogram's _created as a gauge family of its own
  for (const c of byName.get(created)?.samples ?? []) {
    const s = series.get(ctx.state.keyOf(c.labels, 'le'));
    if (s && Number.isFinite(c.value) && c.value > 0) s.created = c.value * 1000;
  }
  let n = 0;
  for (const [key, s] of series) {
    const h = toHistogram(s.le, s.sum, s.count, scale);
    if (typeof h === 'string') {
      // said once per family (a key per label set would grow with whatever the page varies)
      ctx.out.unreadable(
        base,
        `${h} (series {${clip(
          key
            .replace(/\u0000/g, '=')
            .replace(/\u0001/g, ',')
            .replace(/,$/, ''),
          120,
        )}})`,
      );
      continue;
    }
    const m = made(s.labels);
    if (!m) continue;
    const a = m.attributes as Attributes;
    const skey = seriesKey(m, fam, s.labels, ctx.state, 'le');
    const start = ctx.state.startOf(skey, h.count, ctx.now, s.created);
    ctx.out.histogram(rule.metric, h, a, start);
    if (ctx.also && rule.also) ctx.out.histogram(rule.also, h, alsoOf(m, a, ctx), start);
    n++;
    const w = ctx.state.windows.observe(skey, h, s.created);
    if (rule.quantiles && w.delta && w.delta.count > 0) {
      for (let i = 0; i < QUANTILES.length; i++) {
        const v = quantileOf(QUANTILES[i]!, w.delta.bounds, w.delta.counts);
        if (v !== undefined) ctx.out.add(rule.quantiles, v, quantileAttributes(m, a, i));
      }
    }
  }
  return n;
}

/** Cumulative (le, count) pairs -> a histogram, or why it is none (a bucket that goes down, no +Inf, counts that disagree). */
export function toHistogram(
  le: [number, number][],
  sum: number | undefined,
  count: number | undefined,
  scale = 1,
): HistogramValue | string {
  if (le.length === 0) return 'no buckets';
  le.sort((a, b) => a[0] - b[0]);
  const last = le[le.length - 1]!;
  if (last[0] !== Infinity) return 'no le="+Inf" bucket';
  const bounds: number[] = [];
  const counts: number[] = [];
  let prev = 0;
  for (let i = 0; i < le.length; i++) {
    const [b, c] = le[i]!;
    if (i > 0 && b === le[i - 1]![0]) return `bucket le=${b} twice`;
    if (!(c >= prev)) return `bucket le=${b} counts ${c}, fewer than the bucket below (${prev})`;
    if (b !== Infinity) bounds.push(b * scale);
    counts.push(c - prev);
    prev = c;
  }
  const total = last[1];
  if (count !== undefined && count !== total) return `_count ${count} is not the +Inf bucket's ${total}`;
  return { bounds, counts, sum: (sum ?? 0) * scale, count: total };
}

/** A row of an engine's table: registry suffix, the page's names (current first), options. */
export type RuleRow = readonly [suffix: string, names: readonly string[], options?: Pick<SeriesRule, 'scale' | 'attributes' | 'also'>];

/**
 * An engine's rules from rows: each metric is <engine>.<suffix> of the
 * registry, a histogram's window quantiles its .quantile companion when the
 * registry has one.
 */
export function engineRules(engine: string, rows: readonly RuleRow[], lookup: (name: string) => MetricDef | undefined): SeriesRule[] {
  return rows.map(([suffix, names, o]) => {
    const name = `${engine}.${suffix}`;
    const def = lookup(name);
    if (!def) throw new Error(`${engine} table: no registry metric ${name}`);
    const quantiles = def.kind === 'histogram' ? lookup(`${name}.quantile`) : undefined;
    return { names, metric: def, ...o, ...(quantiles ? { quantiles } : {}) };
  });
}

/** Every registry metric a table emits (its rules', their quantiles', their gen_ai ones'): the manifest's list. */
export function tableMetrics(table: EngineTable): string[] {
  const s = new Set<string>();
  for (const r of table.rules) {
    s.add(r.metric.name);
    if (r.quantiles) s.add(r.quantiles.name);
    if (r.also) s.add(r.also.name);
  }
  return [...s];
}
