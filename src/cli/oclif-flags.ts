/** FlagSpecs as oclif flags. */
import { Flags, type Interfaces } from '@oclif/core';
import type { FlagSpec } from './flag-spec.js';

export function oclifFlag(f: FlagSpec) {
  const common = {
    description: f.description,
    ...(f.char ? { char: f.char as 'c' } : {}),
    ...(f.helpValue ? { helpValue: f.helpValue } : {}),
    ...(f.exclusive ? { exclusive: [...f.exclusive] } : {}),
  };
  if (f.type === 'boolean') return Flags.boolean(common);
  if (f.type === 'integer')
    return Flags.integer({
      ...common,
      ...(f.min !== undefined ? { min: f.min } : {}),
      ...(typeof f.default === 'number' ? { default: f.default } : {}),
    });
  if (f.multiple) return Flags.string({ ...common, multiple: true, ...(f.whole ? {} : { delimiter: ',' as const }) });
  const dflt = typeof f.default === 'string' ? { default: f.default } : {};
  if (f.options) return Flags.string({ ...common, ...dflt, options: [...f.options] });
  return Flags.string({ ...common, ...dflt });
}

/** A command's flag table as oclif flags. */
export function oclifFlags(specs: readonly FlagSpec[]): Interfaces.FlagInput {
  return Object.fromEntries(specs.map((f) => [f.name, oclifFlag(f)]));
}
