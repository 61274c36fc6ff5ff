/**
 * Layers the configuration: flags > environment > file > defaults, validates
 * every value against the schema and records where each value came from.
 */
import { readFileSync, statSync } from 'node:fs';
import { redactUrl } from '../redact.js';
import * as ini from 'ini';
import { ConfigError, closest, defaultOf, formatValue, parseValue, type ConfigValue, type KeySpec, type SectionSpec } from './schema.js';

export const DEFAULT_CONFIG_PATH = '/etc/l9gpu/l9gpu.ini';
const MAX_CONFIG_BYTES = 1 << 20;

export type Source = 'default' | 'file' | 'env' | 'flag';
export interface Provenance {
  readonly source: Source;
  /** The file:line, variable name or flag the value came from. */
  readonly detail?: string;
}

/** A value given on the command line. */
export interface Override {
  readonly section: string;
  readonly key: string;
  readonly raw: string;
  readonly flag: string;
}

export interface LoadOptions {
  readonly sections: readonly SectionSpec[];
  /** --config; wins over L9GPU_CONFIG. */
  readonly configPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly overrides?: readonly Override[];
  readonly defaultPath?: string;
  /** Read only the given sections and pass over the others (the Slurm hooks: the daemon validates the whole file). */
  readonly partial?: boolean;
}

export class Config {
  constructor(
    readonly file: string | null,
    /** How the file was chosen: --config, L9GPU_CONFIG, the default path, or no file at all. */
    readonly fileOrigin: 'flag' | 'env' | 'default' | 'none',
    readonly sections: readonly SectionSpec[],
    private readonly values: Map<string, ConfigValue>,
    private readonly provenance: Map<string, Provenance>,
  ) {}

  /**
   * One value, untyped: for code that walks the schema (doctor, the reload
   * fingerprints). Code that reads its own settings uses readSection (read.ts),
   * typed by the section's declaration.
   */
  get(section: string, key: string): ConfigValue {
    const id = `${section}.${key}`;
    if (!this.values.has(id)) throw new Error(`config: no key ${id} in the schema`);
    return this.values.get(id)!;
  }
  /** Every key of a section with its value: used to tell whether a plugin or sink must be rebuilt on reload. */
  section(name: string): Record<string, ConfigValue> {
    const spec = this.sections.find((s) => s.name === name);
    if (!spec) throw new Error(`config: no section [${name}] in the schema`);
    return Object.fromEntries(spec.keys.map((k) => [k.key, this.get(name, k.key)]));
  }
  sourceOf(section: string, key: string): Provenance {
    return this.provenance.get(`${section}.${key}`) ?? { source: 'default' };
  }
}

function where(file: string, line: number | undefined, section: string, key?: string): string {
  return `${file}${line ? `:${line}` : ''} [${section}]${key ? ` ${key}` : ''}`;
}

/** Finds the line of a section header or of a key inside it (the ini package keeps no positions). */
function lineOf(text: string, section: string, key?: string): number | undefined {
  const lines = text.split('\n');
  let inSection = false;
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i]!.trim();
    const hdr = /^\[(.+)\]$/.exec(t);
    if (hdr) {
      inSection = hdr[1]!.trim() === section;
      if (inSection && key === undefined) return i + 1;
      continue;
    }
    if (inSection && key !== undefined && new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\[\\])?\\s*=`).test(t)) return i + 1;
  }
  return undefined;
}

/**
 * What the ini package would take silently or misread, checked on the raw
 * text with line numbers: [a.b] headers (it nests them), a key set twice (it
 * keeps the last), `key[] =` (it makes an array: l9gpu lists are
 * comma-separated), and keys it drops (__proto__, constructor).
 */
function checkRawLines(file: string, text: string, known: (section: string) => boolean, sections: string[]): void {
  let section = '';
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) return;
    const hdr = /^\[(.*)\]$/.exec(line);
    if (hdr) {
      section = hdr[1]!.trim();
      if (known(section)) return;
      const hint = closest(section, sections);
      throw new ConfigError(`${where(file, i + 1, section)}: unknown section${hint ? ` (did you mean [${hint}]?)` : ''}`, {
        file,
        section,
      });
    }
    const kv = /^([^=]*?)\s*(\[\])?\s*=/.exec(line);
    if (!kv) return;
    const key = kv[1]!;
    if (kv[2])
      throw new ConfigError(
        `${where(file, i + 1, section, key)}: "${key}[]" is INI array syntax: l9gpu lists are one line, comma-separated (${key} = a, b)`,
        { file, section, key },
      );
    if (key === '__proto__' || key === 'constructor' || key === 'prototype')
      throw new ConfigError(`${where(file, i + 1, section, key)}: unknown key`, { file, section, key });
    const id = `${section}\0${key}`;
    const first = seen.get(id);
    if (first !== undefined)
      throw new ConfigError(`${where(file, i + 1, section, key)}: set twice (first on line ${first}): say it once`, { file, section, key });
    seen.set(id, i + 1);
  });
}

function readConfigFile(path: string): string {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new ConfigError(`config file ${path}: not a regular file`, { file: path });
    size = st.size;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `config file ${path}: ${code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied' : (e as Error).message}`,
      { file: path },
    );
  }
  if (size > MAX_CONFIG_BYTES) throw new ConfigError(`config file ${path}: ${size} bytes is larger than the 1 MiB limit`, { file: path });
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new ConfigError(`config file ${path}: ${(e as Error).message}`, { file: path });
  }
  try {
    // fatal: bytes that are not UTF-8 are an error, not U+FFFD; a byte-order mark (some editors write one) is dropped
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const bad = bytes
      .toString('utf8')
      .split('\n')
      .findIndex((l) => l.includes('\uFFFD'));
    throw new ConfigError(`config file ${path}${bad >= 0 ? `:${bad + 1}` : ''}: not valid UTF-8`, { file: path });
  }
}

export function loadConfig(opts: LoadOptions): Config {
  const env = opts.env ?? process.env;
  const specs = new Map(opts.sections.map((s) => [s.name, s]));
  const values = new Map<string, ConfigValue>();
  const provenance = new Map<string, Provenance>();

  for (const s of opts.sections) for (const k of s.keys) values.set(`${s.name}.${k.key}`, defaultOf(k));

  let file: string | null = null;
  let fileOrigin: Config['fileOrigin'] = 'none';
  if (opts.configPath) [file, fileOrigin] = [opts.configPath, 'flag'];
  else if (env.L9GPU_CONFIG) [file, fileOrigin] = [env.L9GPU_CONFIG, 'env'];
  else {
    const def = opts.defaultPath ?? DEFAULT_CONFIG_PATH;
    try {
      statSync(def);
      [file, fileOrigin] = [def, 'default'];
    } catch {
      /* no file at the default path: embedded defaults */
    }
  }

  const set = (spec: SectionSpec, k: KeySpec, raw: string, prov: Provenance, at: () => string): void => {
    try {
      values.set(`${spec.name}.${k.key}`, parseValue(k, raw));
    } catch (e) {
      throw new ConfigError(`${at()}: ${(e as Error).message}`, { section: spec.name, key: k.key });
    }
    provenance.set(`${spec.name}.${k.key}`, prov);
  };

  if (file) {
    const text = readConfigFile(file);
    checkRawLines(file, text, (name) => specs.has(name) || !!opts.partial, [...specs.keys()]);
    let parsed: Record<string, unknown>;
    try {
      parsed = ini.parse(text);
    } catch (e) {
      throw new ConfigError(`config file ${file}: ${(e as Error).message}`, { file });
    }
    for (const [section, body] of Object.entries(parsed)) {
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw new ConfigError(`${file}: key "${section}" is outside any section (put it under [daemon])`, { file, key: section });
      }
      const spec = specs.get(section);
      if (!spec && opts.partial) continue;
      if (!spec) throw new ConfigError(`${where(file, lineOf(text, section), section)}: unknown section`, { file, section });
      for (const [key, v] of Object.entries(body as Record<string, unknown>)) {
        const k = spec.keys.find((x) => x.key === key);
        const line = lineOf(text, section, key);
        if (!k) {
          const hint = closest(
            key,
            spec.keys.map((x) => x.key),
          );
          throw new ConfigError(`${where(file, line, section, key)}: unknown key${hint ? ` (did you mean ${hint}?)` : ''}`, {
            file,
            section,
            key,
          });
        }
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
          throw new ConfigError(`${where(file, line, section, key)}: expected a value, found a section`, { file, section, key });
        }
        const raw = Array.isArray(v) ? v.join(',') : v === null ? '' : String(v);
        set(spec, k, raw, { source: 'file', detail: `${file}${line ? `:${line}` : ''}` }, () => where(file!, line, section, key));
      }
    }
  }

  for (const s of opts.sections) {
    for (const k of s.keys) {
      for (const e of k.env ?? []) {
        const raw = env[e.name];
        // an empty variable is unset, but for a key that must name something: there it is a mistake said as one
        if (raw === undefined || (raw === '' && !k.required)) continue;
        let mapped: string;
        try {
          mapped = e.map ? e.map(raw) : raw;
        } catch (err) {
          throw new ConfigError(`environment ${e.name} (for [${s.name}] ${k.key}): ${(err as Error).message}`, {
            env: e.name,
            section: s.name,
            key: k.key,
          });
        }
        set(s, k, mapped, { source: 'env', detail: e.name }, () => `environment ${e.name} (for [${s.name}] ${k.key})`);
        break; // the first variable present wins (the metrics-specific OTEL_* before the generic one)
      }
    }
  }

  for (const o of opts.overrides ?? []) {
    const s = specs.get(o.section);
    const k = s?.keys.find((x) => x.key === o.key);
    if (!s || !k) throw new ConfigError(`${o.flag}: no such setting [${o.section}] ${o.key}`);
    set(s, k, o.raw, { source: 'flag', detail: o.flag }, () => `${o.flag}`);
  }

  return new Config(file, fileOrigin, opts.sections, values, provenance);
}

/** The value as written in an INI file, secrets masked: for doctor. */
export function displayValue(cfg: Config, section: string, key: string): string {
  const spec = cfg.sections.find((s) => s.name === section)!.keys.find((k) => k.key === key)!;
  const v = cfg.get(section, key);
  if (spec.secret && v !== null && !(typeof v === 'object' && Object.keys(v).length === 0)) {
    return typeof v === 'object' && !Array.isArray(v)
      ? Object.keys(v)
          .map((x) => `${x}=***`)
          .join(',')
      : '***';
  }
  const shown = formatValue(spec, v);
  return spec.type === 'url' && typeof v === 'string' ? redactUrl(shown) : shown;
}
