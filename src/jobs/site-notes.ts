/**
 * Site-defined report notes: a small ini file ([jobs] site_notes) of named
 * notes, each a condition over the report's figures, a text and a link.
 * Conditions are a tiny expression language parsed here (never eval): field
 * comparisons joined by and/or/not and parentheses. Every error (syntax,
 * unknown field, a string compared with a number) is found when the file is
 * read and names the file, line and column.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { JOBS_SECTION } from './config.js';
import { ConfigError, closest } from '../core/config/schema.js';
import type { GpuRow, JobHeader, Note, Totals } from './report-model.js';

const GiB = 1024 ** 3;
const MAX_FILE_BYTES = 1 << 20;

type Value = number | string | null;
interface Ctx {
  job: JobHeader;
  gpus: readonly GpuRow[];
  totals: Totals;
}
interface FieldSpec {
  type: 'number' | 'string';
  of: (c: Ctx) => Value;
  /** How {field} reads in a note's text. */
  show?: (v: number) => string;
  doc: string;
}

const r2 = (v: number) => String(Math.round(v * 100) / 100);
const pct = (v: number) => `${Math.round(v * 100)}%`;

/** The fields a condition (and a text's {placeholders}) may name. */
export const SITE_FIELDS: Readonly<Record<string, FieldSpec>> = {
  util_mean: { type: 'number', of: (c) => c.totals.util_mean, show: pct, doc: 'mean GPU utilization, 0..1 (20% is 0.2)' },
  gpus: { type: 'number', of: (c) => c.totals.gpus, doc: 'GPUs in the report' },
  gpu_hours: { type: 'number', of: (c) => c.totals.gpu_hours, doc: 'GPU-hours' },
  mem_peak_gib: {
    type: 'number',
    of: (c) => (c.totals.mem_peak_bytes === null ? null : c.totals.mem_peak_bytes / GiB),
    doc: 'peak GPU memory of any GPU, GiB',
  },
  energy_kwh: { type: 'number', of: (c) => c.totals.energy_kwh, doc: 'GPU energy, kWh' },
  elapsed_h: { type: 'number', of: (c) => (c.job.elapsed_s === null ? null : c.job.elapsed_s / 3600), doc: 'run time, hours' },
  time_limit_h: { type: 'number', of: (c) => (c.job.time_limit_s === null ? null : c.job.time_limit_s / 3600), doc: 'time limit, hours' },
  time_efficiency: { type: 'number', of: (c) => c.job.time_efficiency, show: pct, doc: 'run time over time limit, 0..1' },
  cpus: { type: 'number', of: (c) => c.job.cpus, doc: 'CPU cores allocated' },
  mem_req_gib: {
    type: 'number',
    of: (c) => (c.job.mem_req_bytes === null ? null : c.job.mem_req_bytes / GiB),
    doc: 'CPU memory requested, GiB (whole job)',
  },
  mem_max_rss_gib: {
    type: 'number',
    of: (c) => (c.job.mem_max_rss_bytes === null ? null : c.job.mem_max_rss_bytes / GiB),
    doc: 'largest task RSS (sacct MaxRSS), GiB',
  },
  exit_code: { type: 'number', of: (c) => c.job.exit_code, doc: 'exit code' },
  restarts: { type: 'number', of: (c) => c.job.earlier_runs, doc: 'earlier runs (requeued)' },
  cost: { type: 'number', of: (c) => c.totals.cost, doc: 'cost, in the configured currency' },
  state: { type: 'string', of: (c) => c.job.state, doc: 'Slurm state: COMPLETED, TIMEOUT, OUT_OF_MEMORY...' },
  partition: { type: 'string', of: (c) => c.job.partition, doc: 'partition' },
  account: { type: 'string', of: (c) => c.job.account, doc: 'account' },
  user: { type: 'string', of: (c) => c.job.user, doc: 'user name' },
  qos: { type: 'string', of: (c) => c.job.qos, doc: 'QOS' },
  cluster: { type: 'string', of: (c) => c.job.cluster, doc: 'cluster' },
  gpu_model: { type: 'string', of: (c) => c.gpus.find((g) => g.model)?.model ?? null, doc: 'model of the first GPU' },
};
const FIELD_NAMES = Object.keys(SITE_FIELDS);

export type Expr = { k: 'or' | 'and'; a: Expr; b: Expr } | { k: 'not'; a: Expr } | { k: 'cmp'; op: Op; l: Operand; r: Operand };
type Op = '<' | '<=' | '>' | '>=' | '==' | '!=';
type Operand = { k: 'field'; name: string } | { k: 'num'; v: number } | { k: 'str'; v: string };

/** A parse error at a 1-based column of the expression. */
export class ExprError extends Error {
  constructor(
    message: string,
    readonly column: number,
  ) {
    super(`column ${column}: ${message}`);
  }
}

interface Tok {
  t: 'num' | 'str' | 'word' | 'op' | '(' | ')' | 'end';
  v: string;
  at: number;
}

function tokens(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const at = i + 1;
    if (ch === '(' || ch === ')') {
      out.push({ t: ch, v: ch, at });
      i++;
      continue;
    }
    const rest = src.slice(i);
    let m: RegExpExecArray | null;
    if ((m = /^(?:\d+(?:\.\d+)?|\.\d+)(?:e[+-]?\d+)?%?/i.exec(rest))) out.push({ t: 'num', v: m[0], at });
    else if ((m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest))) out.push({ t: 'word', v: m[0], at });
    else if ((m = /^(?:<=|>=|==|!=|<|>)/.exec(rest))) out.push({ t: 'op', v: m[0], at });
    else if (ch === '"' || ch === "'") {
      const end = src.indexOf(ch, i + 1);
      if (end < 0) throw new ExprError(`string not closed (no ${ch} after it)`, at);
      out.push({ t: 'str', v: src.slice(i + 1, end), at });
      i = end + 1;
      continue;
    } else if (ch === '=') throw new ExprError('"=" is not an operator: write ==', at);
    else throw new ExprError(`unexpected "${ch}"`, at);
    i += m![0].length;
  }
  out.push({ t: 'end', v: '', at: src.length + 1 });
  return out;
}

const KEYWORDS = new Set(['and', 'or', 'not']);

/** Parses a condition; field names and types are checked here, not when a report is judged. */
export function parseCondition(src: string): Expr {
  const toks = tokens(src);
  let p = 0;
  const peek = () => toks[p]!;
  const word = (w: string) => peek().t === 'word' && peek().v === w;
  const what = (t: Tok) => (t.t === 'end' ? 'the end' : `"${t.v}"`);
  const or = (): Expr => {
    let a = and();
    while (word('or')) {
      p++;
      a = { k: 'or', a, b: and() };
    }
    return a;
  };
  const and = (): Expr => {
    let a = not();
    while (word('and')) {
      p++;
      a = { k: 'and', a, b: not() };
    }
    return a;
  };
  const not = (): Expr => {
    if (word('not')) {
      p++;
      return { k: 'not', a: not() };
    }
    if (peek().t === '(') {
      p++;
      const e = or();
      if (peek().t !== ')') throw new ExprError(`expected ) but found ${what(peek())}`, peek().at);
      p++;
      return e;
    }
    return comparison();
  };
  const operand = (): Operand & { at: number; type: 'number' | 'string' } => {
    const t = peek();
    p++;
    if (t.t === 'num') return { k: 'num', v: t.v.endsWith('%') ? Number(t.v.slice(0, -1)) / 100 : Number(t.v), at: t.at, type: 'number' };
    if (t.t === 'str') return { k: 'str', v: t.v, at: t.at, type: 'string' };
    if (t.t === 'word' && !KEYWORDS.has(t.v)) {
      const f = SITE_FIELDS[t.v];
      if (!f) {
        const near = closest(t.v, FIELD_NAMES);
        throw new ExprError(`unknown field "${t.v}"${near ? ` (did you mean ${near}?)` : ''}; fields: ${FIELD_NAMES.join(', ')}`, t.at);
      }
      return { k: 'field', name: t.v, at: t.at, type: f.type };
    }
    throw new ExprError(`expected a field, a number or a quoted string but found ${what(t)}`, t.at);
  };
  const comparison = (): Expr => {
    const l = operand();
    const o = peek();
    if (o.t !== 'op')
      throw new ExprError(
        `expected a comparison (< <= > >= == !=) after ${l.k === 'field' ? l.name : 'the value'} but found ${what(o)}`,
        o.at,
      );
    p++;
    const r = operand();
    if (l.k !== 'field' && r.k !== 'field') throw new ExprError('a comparison needs a field on one side', l.at);
    if (l.type !== r.type) throw new ExprError(`cannot compare a ${l.type} with a ${r.type}`, o.at);
    if (l.type === 'string' && o.v !== '==' && o.v !== '!=') throw new ExprError(`strings compare with == or != only, not ${o.v}`, o.at);
    const strip = (x: typeof l): Operand =>
      x.k === 'field' ? { k: 'field', name: x.name } : x.k === 'num' ? { k: 'num', v: x.v } : { k: 'str', v: x.v };
    return { k: 'cmp', op: o.v as Op, l: strip(l), r: strip(r) };
  };
  if (peek().t === 'end') throw new ExprError('empty condition', 1);
  const e = or();
  if (peek().t !== 'end') throw new ExprError(`expected and, or or the end but found ${what(peek())}`, peek().at);
  return e;
}

/**
 * The condition's truth for a report. A comparison with a figure the report
 * lacks (no sacct: no time limit; no samples: no utilization) is false.
 */
export function evaluate(e: Expr, c: Ctx): boolean {
  switch (e.k) {
    case 'or':
      return evaluate(e.a, c) || evaluate(e.b, c);
    case 'and':
      return evaluate(e.a, c) && evaluate(e.b, c);
    case 'not':
      return !evaluate(e.a, c);
    case 'cmp': {
      const v = (o: Operand): Value => (o.k === 'field' ? SITE_FIELDS[o.name]!.of(c) : o.v);
      const l = v(e.l);
      const r = v(e.r);
      if (l === null || r === null) return false;
      switch (e.op) {
        case '<':
          return l < r;
        case '<=':
          return l <= r;
        case '>':
          return l > r;
        case '>=':
          return l >= r;
        case '==':
          return l === r;
        case '!=':
          return l !== r;
      }
    }
  }
}

export interface SiteNote {
  /** The section name: the note's code is site:<name>. */
  name: string;
  level: 'info' | 'warn';
  when: Expr;
  text: string;
  link: string | null;
}

const NOTE_KEYS = ['when', 'text', 'level', 'link'];

/** The notes file: one [name] section per note with when, text, and optional level and link. */
export function parseSiteNotes(text: string, file: string): SiteNote[] {
  const notes: SiteNote[] = [];
  const fail = (line: number, msg: string): never => {
    throw new ConfigError(`${file}:${line}: ${msg}`, { file });
  };
  let cur: { name: string; line: number; keys: Map<string, { v: string; line: number }> } | null = null;
  const close = (): void => {
    if (!cur) return;
    const need = (k: string) => cur!.keys.get(k) ?? fail(cur!.line, `[${cur!.name}] has no ${k} =`);
    const when = need('when');
    let expr: Expr;
    try {
      expr = parseCondition(when.v);
    } catch (e) {
      return fail(when.line, `[${cur.name}] when: ${(e as Error).message}`);
    }
    const t = need('text');
    for (const m of t.v.matchAll(/\{([^}]*)\}/g)) {
      if (!SITE_FIELDS[m[1]!]) fail(t.line, `[${cur.name}] text: unknown field {${m[1]}}; fields: ${FIELD_NAMES.join(', ')}`);
    }
    const level = cur.keys.get('level');
    if (level && level.v !== 'info' && level.v !== 'warn') fail(level.line, `[${cur.name}] level: "${level.v}" is not info or warn`);
    const link = cur.keys.get('link');
    if (link && !/^https?:\/\/\S+$/.test(link.v)) fail(link.line, `[${cur.name}] link: "${link.v.slice(0, 60)}" is not an http(s) URL`);
    notes.push({
      name: cur.name,
      level: (level?.v as 'info' | 'warn' | undefined) ?? 'info',
      when: expr,
      text: t.v,
      link: link?.v ?? null,
    });
  };
  text.split('\n').forEach((raw, i) => {
    const n = i + 1;
    const s = raw.trim();
    if (s === '' || s.startsWith('#') || s.startsWith(';')) return;
    const sec = /^\[(.*)\]$/.exec(s);
    if (sec) {
      close();
      const name = sec[1]!.trim();
      if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) fail(n, `[${name.slice(0, 40)}]: a note's name is lowercase letters, digits, - and _`);
      if (notes.some((x) => x.name === name)) fail(n, `[${name}] is defined twice`);
      cur = { name, line: n, keys: new Map() };
      return;
    }
    const eq = s.indexOf('=');
    // "==" in a condition is not the key's "="
    if (eq <= 0) fail(n, `expected [name] or key = value, found "${s.slice(0, 40)}"`);
    if (!cur) return fail(n, 'key = value before any [name] section');
    const key = s.slice(0, eq).trim();
    const value = s.slice(eq + 1).trim();
    if (!NOTE_KEYS.includes(key)) {
      const near = closest(key, NOTE_KEYS);
      fail(n, `[${cur.name}] unknown key ${key.slice(0, 40)}${near ? ` (did you mean ${near}?)` : ''}; keys: ${NOTE_KEYS.join(', ')}`);
    }
    if (cur.keys.has(key)) fail(n, `[${cur.name}] ${key} is set twice (line ${cur.keys.get(key)!.line})`);
    if (value === '') fail(n, `[${cur.name}] ${key} is empty`);
    cur.keys.set(key, { v: value, line: n });
  });
  close();
  return notes;
}

/** [jobs] site_notes, read and checked; [] when unset. A missing or broken file is a ConfigError (exit 2). */
export function siteNotesFrom(cfg: Config): SiteNote[] {
  const file = readSection(cfg, JOBS_SECTION).site_notes;
  if (!file) return [];
  let text: string;
  try {
    if (statSync(file).size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(
      `[jobs] site_notes: ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
      { file, section: 'jobs', key: 'site_notes' },
    );
  }
  return parseSiteNotes(text, file);
}

/** The site notes whose condition holds for this report, {field} placeholders filled in. */
export function siteNotes(site: readonly SiteNote[], job: JobHeader, gpus: readonly GpuRow[], totals: Totals): Note[] {
  const c: Ctx = { job, gpus, totals };
  return site
    .filter((s) => evaluate(s.when, c))
    .map((s) => {
      const text = s.text.replace(/\{([^}]*)\}/g, (_, name: string) => {
        const f = SITE_FIELDS[name]!;
        const v = f.of(c);
        return v === null ? '-' : typeof v === 'number' ? (f.show ?? r2)(v) : v;
      });
      return { level: s.level, code: `site:${s.name}`, text: s.link ? `${text} (${s.link})` : text };
    });
}
