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
 */
import type { Attributes, Emitter, HistogramValue } from '../core/metrics/model.js';
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

/** Keeps what a conversion needs from one scrape to the next: counter starts and histogram windows. */
export class ConvertState {
  readonly windows = new HistogramWindows();
  private readonly counters = new Map<string, { start: number; last: number; seen: number }>();
  private round = 0;

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
    this.counters.set(key, { start, last: value, seen: this.round });
    return start;
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
  const value = (label: string, v: string): string => {
    if (v.length <= max) return v;
    ctx.onCut?.(label);
    return boundLabel(v, max);
  };
  const attributes = (rule: SeriesRule, labels: Labels, without?: string): Attributes | undefined => {
    let a: Attributes;
    if (table.identity) {
      const id = table.identity(labels);
      if (typeof id === 'string') {
        ctx.out.unreadable(`${rule.names[0]} series`, id);
        return undefined;
      }
      a = { ...id };
      for (const l in labels) if (l !== without && Object.hasOwn(table.labels, l) && table.labels[l]) a[table.labels[l]!] = value(l, labels[l]!);
    } else {
      a = { ...ctx.base };
      for (const l in labels) {
        if (l === without) continue;
        const k = attrKey(l);
        if (k) a[k] = value(l, labels[l]!);
      }
    }
    if (rule.attributes) Object.assign(a, rule.attributes);
    return a;
  };
  let n = 0;
  for (const rule of table.rules) {
    if (table.enabled && !table.enabled(rule)) continue;
    const fam = findFamily(byName, rule);
    if (!fam) continue;
    const scale = rule.scale ?? 1;
    const kind = rule.metric.kind;
    if (kind === 'histogram') {
      n += histograms(rule, fam, byName, ctx, scale, (labels) => attributes(rule, labels, 'le'));
      continue;
    }
    const created = kind === 'sum' ? createdTimes(fam, byName) : undefined;
    for (const s of fam.samples) {
      if (!isValueSample(s, fam, kind) || table.isBlank?.(s.value)) continue;
      const v = s.value * scale;
      const a = attributes(rule, s.labels);
      if (!a) continue;
      if (kind === 'sum') {
        const key = `${fam.name}\u0002${labelKey(s.labels)}`;
        const start = ctx.state.startOf(key, v, ctx.now, created?.get(labelKey(s.labels)));
        ctx.out.add(rule.metric, v, a, start);
        if (ctx.also && rule.also) ctx.out.add(rule.also, v, { ...a, ...ctx.alsoAttributes }, start);
      } else {
        ctx.out.add(rule.metric, v, a);
        if (ctx.also && rule.also) ctx.out.add(rule.also, v, { ...a, ...ctx.alsoAttributes });
      }
      n++;
    }
  }
  return n;
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

/** The samples that carry the value: a counter's x_total or x (never x_created), a gauge's own. */
function isValueSample(s: Sample, fam: Family, kind: MetricDef['kind']): boolean {
  if (kind !== 'sum') return s.name === fam.name;
  if (s.name.endsWith('_created')) return false;
  return s.name === fam.name || s.name === `${fam.name}_total`;
}

/** A counter's creation times (ms), by label set: OpenMetrics' x_created samples, or prometheus_client's separate x_created gauge. */
function createdTimes(fam: Family, byName: Map<string, Family>): Map<string, number> | undefined {
  const base = fam.name.endsWith('_total') ? fam.name.slice(0, -6) : fam.name;
  const samples = [...fam.samples.filter((s) => s.name === `${base}_created`), ...(byName.get(`${base}_created`)?.samples ?? [])];
  if (!samples.length) return undefined;
  const m = new Map<string, number>();
  for (const s of samples) if (Number.isFinite(s.value) && s.value > 0) m.set(labelKey(s.labels), s.value * 1000);
  return m;
}

/** A histogram family's series: buckets by label set, each checked, sent, and its window's quantiles. */
function histograms(rule: SeriesRule, fam: Family, byName: Map<string, Family>, ctx: ConvertContext, scale: number, attrs: (l: Labels) => Attributes | undefined): number {
  const series = new Map<string, { labels: Labels; le: [number, number][]; sum?: number; count?: number; created?: number }>();
  const get = (labels: Labels) => {
    const k = labelKey(labels, 'le');
    let s = series.get(k);
    if (!s) series.set(k, (s = { labels, le: [] }));
    return s;
  };
  const base = fam.name;
  for (const s of fam.samples) {
    if (s.name === `${base}_bucket`) {
      // le read as Prometheus reads it (Go's ParseFloat): "", "0x10" or " 1 " are no bound
      const le = parseNumber(s.labels.le ?? '');
      if (le === undefined || Number.isNaN(le)) {
        ctx.out.unreadable(`${base}_bucket`, `le="${clip(s.labels.le ?? '', 40)}" is not a number`);
        continue;
      }
      get(s.labels).le.push([le, s.value]);
    } else if (s.name === `${base}_sum`) get(s.labels).sum = s.value;
    else if (s.name === `${base}_count`) get(s.labels).count = s.value;
    else if (s.name === `${base}_created`) get(s.labels).created = s.value * 1000;
  }
  // prometheus_client's text format writes a histogram's _created as a gauge family of its own
  for (const c of byName.get(`${base}_created`)?.samples ?? []) {
    const s = series.get(labelKey(c.labels, 'le'));
    if (s && Number.isFinite(c.value) && c.value > 0) s.created = c.value * 1000;
  }
  let n = 0;
  for (const [key, s] of series) {
    const h = toHistogram(s.le, s.sum, s.count, scale);
    if (typeof h === 'string') {
      // said once per family (a key per label set would grow with whatever the page varies)
      ctx.out.unreadable(base, `${h} (series {${clip(key.replace(/\u0000/g, '=').replace(/\u0001/g, ',').replace(/,$/, ''), 120)}})`);
      continue;
    }
    const a = attrs(s.labels);
    if (!a) continue;
    const skey = `${fam.name}\u0002${key}`;
    const start = ctx.state.startOf(skey, h.count, ctx.now, s.created);
    ctx.out.histogram(rule.metric, h, a, start);
    if (ctx.also && rule.also) ctx.out.histogram(rule.also, h, { ...a, ...ctx.alsoAttributes }, start);
    n++;
    const w = ctx.state.windows.observe(skey, h, s.created);
    if (rule.quantiles && w.delta && w.delta.count > 0) {
      for (const q of QUANTILES) {
        const v = quantileOf(q, w.delta.bounds, w.delta.counts);
        if (v !== undefined) ctx.out.add(rule.quantiles, v, { ...a, quantile: q });
      }
    }
  }
  return n;
}

/** Cumulative (le, count) pairs -> a histogram, or why it is none (a bucket that goes down, no +Inf, counts that disagree). */
export function toHistogram(le: [number, number][], sum: number | undefined, count: number | undefined, scale = 1): HistogramValue | string {
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
