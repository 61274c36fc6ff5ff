/**
 * Flags as data: the oclif commands (help, parsing) and the light daemon
 * entry (node:util, no oclif) are both built from these specs.
 */
export interface FlagSpec {
  readonly name: string;
  readonly type: 'string' | 'boolean' | 'integer';
  readonly char?: string;
  readonly multiple?: boolean;
  /** multiple: each value whole (an HTTP header may hold commas), not comma-separated */
  readonly whole?: boolean;
  readonly options?: readonly string[];
  readonly helpValue?: string;
  readonly description: string;
  readonly default?: string | number;
  /** integer: the smallest value allowed */
  readonly min?: number;
  /** flags that may not be given with this one */
  readonly exclusive?: readonly string[];
}

export type FlagValues = Record<string, string | boolean | number | string[] | undefined>;

/**
 * What a flag reads as, from its spec: a boolean or an unset flag without a
 * default is undefined when not given; a string with options is one of them.
 */
type FlagValue<F extends FlagSpec> = F['type'] extends 'boolean'
  ? boolean | undefined
  : F['type'] extends 'integer'
    ? number | (F extends { readonly default: number } ? never : undefined)
    : F extends { readonly multiple: true }
      ? string[] | undefined
      : (F extends { readonly options: readonly (infer O)[] } ? O : string) | (F extends { readonly default: string } ? never : undefined);

/**
 * A command's flags typed from its table (declared `as const satisfies readonly FlagSpec[]`): one property per flag, named as on
 * the command line, so a misspelt flag does not compile and a read needs no cast (as readSection types a config section).
 */
export type FlagsOf<T extends readonly FlagSpec[]> = string extends T[number]['name']
  ? 'declare the flag table as const (its names must stay literal)'
  : { readonly [F in T[number] as F['name']]: FlagValue<F> };

/**
 * A body that reads its flags typed, as the command table runs it (with the values checkFlags or oclif parsed from the same
 * table): the one place where the parsed values become the typed object.
 */
export function typedRun<T extends readonly FlagSpec[], R>(
  flags: T,
  run: (f: FlagsOf<T>, args: string[]) => Promise<R>,
): (f: FlagValues, args: string[]) => Promise<R> {
  return (f, args) => run(typedFlags(flags, f), args);
}

/** Values parsed from this table (by checkFlags, parseArgs or oclif), typed from it: the one cast from parsed values to FlagsOf. */
export function typedFlags<T extends readonly FlagSpec[]>(_flags: T, parsed: Record<string, unknown>): FlagsOf<T> {
  return parsed as FlagsOf<T>;
}

/** node:util parseArgs options for these flags. */
export function parseArgsOptions(
  specs: readonly FlagSpec[],
): Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> {
  return Object.fromEntries(
    specs.map((f) => [
      f.name,
      {
        type: f.type === 'boolean' ? 'boolean' : 'string',
        ...(f.char ? { short: f.char } : {}),
        ...(f.multiple ? { multiple: true } : {}),
      },
    ]),
  );
}

/**
 * parseArgs' values checked and typed as oclif would (options, integers,
 * exclusive flags, defaults, comma-separated lists); undefined when anything
 * is off, so that the caller hands the arguments to oclif for its message.
 */
export function checkFlags(specs: readonly FlagSpec[], raw: Record<string, unknown>): FlagValues | undefined {
  const out: FlagValues = {};
  for (const f of specs) {
    let v = raw[f.name] as string | boolean | string[] | undefined;
    if (v === undefined) {
      out[f.name] = f.default;
      continue;
    }
    if (f.exclusive?.some((x) => raw[x] !== undefined)) return undefined;
    if (f.multiple && !f.whole) v = (v as string[]).flatMap((x) => x.split(','));
    if (f.options && (typeof v !== 'string' || !f.options.includes(v))) return undefined;
    if (f.type === 'integer') {
      if (typeof v !== 'string' || !/^-?\d+$/.test(v) || (f.min !== undefined && Number(v) < f.min)) return undefined;
      out[f.name] = Number(v);
      continue;
    }
    out[f.name] = v;
  }
  return out;
}

/** --config, the same on every command that reads the configuration. */
export const CONFIG_FLAG = {
  name: 'config',
  type: 'string',
  char: 'c',
  helpValue: 'FILE',
  description: 'INI configuration file (default /etc/l9gpu/l9gpu.ini, or $L9GPU_CONFIG).',
} as const satisfies FlagSpec;
