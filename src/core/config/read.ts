/**
 * The typed config reader: `readSection(cfg, NVML_SECTION)` answers the
 * section's values as one object whose properties are its keys, typed from
 * the key specs themselves (schema.ts declares them once, with defineSection,
 * for the loader, doctor, the docs and this). A misspelt key does not compile,
 * and a value that cannot be unset is not typed as nullable: no `!` at the
 * reads.
 */
import type { Config } from './load.js';
import { defaultOf, type ConfigValue, type KeySpec, type SectionSpec } from './schema.js';

/**
 * null where the loader can leave the key unset: a null default, or a string
 * or path written empty (`key =`) unless it is required (the loader refuses
 * that), or a URL written empty. A number, boolean or enum is never empty: the
 * loader refuses "" for them.
 */
type Unset<S extends KeySpec> = S['default'] extends null
  ? null
  : S['default'] extends () => infer R
    ? null extends R
      ? null
      : never
    : never;

/** What the loader's parseValue makes of a key of this spec (of each, for a key declared two ways: [daemon] attribution). */
type Parsed<S extends KeySpec> = S extends KeySpec ? ParsedOne<S> : never;
type ParsedOne<S extends KeySpec> = S['type'] extends 'int' | 'number' | 'duration' | 'bytes'
  ? number | Unset<S>
  : S['type'] extends 'bool'
    ? boolean | Unset<S>
    : S['type'] extends 'list'
      ? string[]
      : S['type'] extends 'map'
        ? Record<string, string>
        : S['type'] extends 'enum'
          ? (S['values'] extends readonly (infer V)[] ? V : string) | Unset<S>
          : S['type'] extends 'string' | 'path'
            ? S['required'] extends true
              ? string | Unset<S>
              : string | null
            : string | null;

/** The values of a section: one property per key, named as in the INI file. */
export type SectionValues<S extends Pick<SectionSpec, 'keys'>> = { readonly [K in S['keys'][number] as K['key']]: Parsed<K> };

/** A spec whose keys were widened to string (declared `: SectionSpec`, not through defineSection) would type nothing: refused. */
type Literal<S extends Pick<SectionSpec, 'keys'>> = string extends S['keys'][number]['key']
  ? 'declare the section with defineSection (its key names must stay literal)'
  : S;

/** A list or map the loader left unset reads as empty, as every caller would write it. */
function normalized(k: KeySpec, v: ConfigValue): ConfigValue {
  if (v !== null) return v;
  return k.type === 'list' ? [] : k.type === 'map' ? {} : null;
}

/** The one place where values become the typed object: keyed by the spec's keys, so the type's properties are the object's. */
function valuesOf<S extends Pick<SectionSpec, 'keys'>>(spec: S, value: (k: KeySpec) => ConfigValue): SectionValues<S> {
  return Object.fromEntries(spec.keys.map((k) => [k.key, normalized(k, value(k))])) as SectionValues<S>;
}

/**
 * The section's values from a loaded configuration. The spec gives the keys;
 * the values are the configuration's (flags > environment > file > defaults),
 * so a spec built again from the same declaration (daemonSection() without the
 * composition root's names) reads the same.
 */
export function readSection<S extends Pick<SectionSpec, 'name' | 'keys'>>(cfg: Config, spec: Literal<S>): SectionValues<S> {
  const s = spec as S;
  return valuesOf(s, (k) => cfg.get(s.name, k.key));
}

/** The section's defaults, typed alike: for code run without a configuration (tests, the CLI's own tools). */
export function sectionDefaults<S extends Pick<SectionSpec, 'keys'>>(spec: Literal<S>): SectionValues<S> {
  return valuesOf(spec as S, defaultOf);
}
