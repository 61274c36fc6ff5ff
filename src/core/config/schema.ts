/**
 * Config schema: every section and key l9gpu accepts, with its type, default,
 * environment variables and description. The loader validates against it, the
 * example config (docs/l9gpu.example.ini) is generated from it, and doctor
 * reports provenance per key.
 */
/** RFC 9110 token, and field value characters (Node's http refuses others at send time). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/**
 * What the HTTP client writes itself: the message's framing and the
 * connection's management (RFC 9110 7.6.1, 8.6, 6.1), and the body's type and
 * encoding that the sink sets. Configured, they would be replaced without a
 * word, or would contradict the client's own (Transfer-Encoding beside its
 * Content-Length: a request the server refuses, every export).
 */
const CLIENT_HEADERS = [
  'connection',
  'content-encoding',
  'content-length',
  'content-type',
  'expect',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/** A header a request can carry and that is not the client's own: throws a message naming what is wrong (never the value: it may be a
 * secret). */
export function checkHeader(name: string, value: string): void {
  if (!HEADER_NAME.test(name))
    throw new Error(`header name "${name.slice(0, 40)}" is not an HTTP token (letters, digits and !#$%&'*+-.^_\`|~)`);
  if (!HEADER_VALUE.test(value))
    throw new Error(`the value of ${name} has a character an HTTP header cannot carry (a control character, or beyond Latin-1)`);
  if (CLIENT_HEADERS.includes(name.toLowerCase()))
    throw new Error(`header ${name} is not one to set: the HTTP client writes it itself (${CLIENT_HEADERS.join(', ')} are its own)`);
}

/** KeySpec.check of a map of request headers: none the client writes itself. */
export function checkRequestHeaders(v: ConfigValue): void {
  for (const name of Object.keys(v as Record<string, string>)) {
    if (CLIENT_HEADERS.includes(name.toLowerCase()))
      throw new Error(`header ${name} is not one to set: the HTTP client writes it itself (${CLIENT_HEADERS.join(', ')} are its own)`);
  }
}

export type ConfigValue = string | number | boolean | string[] | Record<string, string> | null;

export type KeyType = 'string' | 'path' | 'int' | 'number' | 'duration' | 'bytes' | 'bool' | 'list' | 'enum' | 'url' | 'map';

export interface EnvSource {
  readonly name: string;
  /** Converts the raw variable to the key's INI spelling (e.g. ms -> "250ms"). */
  readonly map?: (raw: string) => string;
}

export interface KeySpec {
  readonly key: string;
  readonly type: KeyType;
  /** Parsed default; null means unset (the consumer decides). A function is evaluated at load. */
  readonly default: ConfigValue | (() => ConfigValue);
  readonly description: string;
  readonly values?: readonly string[];
  readonly min?: number;
  readonly max?: number;
  readonly env?: readonly EnvSource[];
  /** Masked in doctor output. */
  readonly secret?: boolean;
  /** What an unset (null) value means, for doctor's text ("[daemon] interval"). */
  readonly unset?: string;
  /** Shown in the example config instead of the default. */
  readonly example?: string;
  /** A map whose every value is a number (within min/max), checked at load rather than misread later. */
  readonly mapValues?: 'number';
  /** A string or path that must name something: empty (in the file or a variable) is an error, not "unset". */
  readonly required?: boolean;
  /** Rules of the key's own beyond its type, on the parsed value: throws a message naming what is wrong. */
  readonly check?: (value: ConfigValue) => void;
}

/** K: the keys as declared (a tuple of literal specs through defineSection), from which read.ts types a section's values. */
export interface SectionSpec<K extends readonly KeySpec[] = readonly KeySpec[]> {
  readonly name: string;
  readonly description: string;
  readonly keys: K;
}

/**
 * A section as data, its keys' names, types and defaults kept literal (the
 * `const` type parameter): readSection (read.ts) answers an object typed by
 * them, where a misspelt key does not compile. The value is the one given:
 * the loader, doctor and the docs read it as any other SectionSpec.
 */
export function defineSection<const K extends readonly KeySpec[]>(spec: SectionSpec<K>): SectionSpec<K> {
  return spec;
}

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly where?: { file?: string; section?: string; key?: string; env?: string },
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

const UNITS_DURATION: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
const UNITS_BYTES: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};

/** Parses one raw value to the key's type; throws a plain message naming what was expected. */
export function parseValue(spec: KeySpec, raw: string): ConfigValue {
  const s = raw.trim();
  const v = parseTyped(spec, s);
  if (v !== null) spec.check?.(v);
  return v;
}

function parseTyped(spec: KeySpec, s: string): ConfigValue {
  const range = (n: number, unit = ''): number => {
    if (spec.min !== undefined && n < spec.min) throw new Error(`${s} is below the minimum ${spec.min}${unit}`);
    if (spec.max !== undefined && n > spec.max) throw new Error(`${s} is above the maximum ${spec.max}${unit}`);
    return n;
  };
  switch (spec.type) {
    case 'string':
    case 'path':
      // a value left empty (`state_dir =`, L9GPU_STATE_DIR=$UNSET) is a mistake where the key cannot mean "none"
      if (s === '' && spec.required)
        throw new Error(`empty: it needs a value${spec.type === 'path' ? ' (an absolute path)' : ''}; leave the key out for the default`);
      if (spec.type === 'path' && s !== '' && !s.startsWith('/')) throw new Error(`"${s}" is not an absolute path`);
      return s === '' ? null : s;
    case 'int': {
      if (!/^-?\d+$/.test(s)) throw new Error(`"${s}" is not an integer`);
      return range(Number(s));
    }
    case 'number': {
      const n = Number(s);
      if (s === '' || !Number.isFinite(n)) throw new Error(`"${s}" is not a number`);
      return range(n);
    }
    case 'duration': {
      const mt = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i.exec(s);
      if (!mt) throw new Error(`"${s}" is not a duration (examples: 10, 10s, 500ms, 2m)`);
      return range(Number(mt[1]) * UNITS_DURATION[(mt[2] ?? 's').toLowerCase()]!, 's');
    }
    case 'bytes': {
      const mt = /^(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?$/i.exec(s);
      if (!mt) throw new Error(`"${s}" is not a size (examples: 1048576, 64MiB, 100MB)`);
      return range(Math.floor(Number(mt[1]) * UNITS_BYTES[(mt[2] ?? '').toLowerCase()]!), ' bytes');
    }
    case 'bool': {
      const v = s.toLowerCase();
      if (['true', 'yes', 'on', '1'].includes(v)) return true;
      if (['false', 'no', 'off', '0'].includes(v)) return false;
      throw new Error(`"${s}" is not a boolean (true/false)`);
    }
    case 'list':
      return s.split(/[\s,]+/).filter(Boolean);
    case 'enum':
      if (!spec.values!.includes(s)) throw new Error(`"${s}" is not one of ${spec.values!.join(', ')}`);
      return s;
    case 'url': {
      if (s === '') return null;
      let u: URL;
      try {
        u = new URL(s);
      } catch {
        throw new Error(`"${s}" is not a URL`);
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`"${s}" is not an http(s) URL`);
      return s;
    }
    case 'map': {
      // OTEL_EXPORTER_OTLP_HEADERS syntax: k=v,k2=v2 with percent-encoded values.
      const out: Record<string, string> = {};
      for (const part of s.split(',')) {
        if (part.trim() === '') continue;
        const eq = part.indexOf('=');
        // the names only: a value may be a secret, never echoed
        if (eq <= 0) throw new Error(`"${part.trim().slice(0, 40)}" is not key=value`);
        const name = part.slice(0, eq).trim();
        // what an HTTP request could not carry would fail every export: refused here, at load
        if (!HEADER_NAME.test(name))
          throw new Error(`header name "${name.slice(0, 40)}" is not an HTTP token (letters, digits and !#$%&'*+-.^_\`|~)`);
        let v: string;
        try {
          v = decodeURIComponent(part.slice(eq + 1).trim());
        } catch {
          throw new Error(`the value of ${name} is not percent-encoded correctly (write %25 for a literal %)`);
        }
        if (!HEADER_VALUE.test(v))
          throw new Error(`the value of ${name} has a character an HTTP header cannot carry (a control character, or beyond Latin-1)`);
        if (spec.mapValues === 'number') {
          const n = Number(v);
          if (v === '' || !Number.isFinite(n)) throw new Error(`the value of ${name}, "${v.slice(0, 40)}", is not a number`);
          if (spec.min !== undefined && n < spec.min) throw new Error(`the value of ${name}, ${v}, is below the minimum ${spec.min}`);
        }
        out[name] = v;
      }
      return out;
    }
  }
}

export function defaultOf(spec: KeySpec): ConfigValue {
  return typeof spec.default === 'function' ? spec.default() : spec.default;
}

/** Renders a value the way it would be written in the INI file. */
export function formatValue(spec: KeySpec, v: ConfigValue): string {
  if (v === null) return '';
  if (Array.isArray(v)) return v.join(', ');
  if (typeof v === 'object')
    return Object.entries(v)
      .map(([k, x]) => `${k}=${encodeURIComponent(x)}`)
      .join(',');
  if (spec.type === 'duration' && typeof v === 'number')
    return v < 1 ? `${Math.round(v * 1000)}ms` : v >= 86400 && v % 86400 === 0 ? `${v / 86400}d` : `${v}s`;
  return String(v);
}

/** Closest known name for "did you mean" hints. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}
