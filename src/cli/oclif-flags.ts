/** FlagSpecs as oclif flags. */
import { Flags } from '@oclif/core';
import { CONFIG_FLAG, type FlagSpec } from './flag-spec.js';

export function oclifFlag(f: FlagSpec) {
  const common = { description: f.description, ...(f.char ? { char: f.char as 'c' } : {}), ...(f.helpValue ? { helpValue: f.helpValue } : {}) };
  if (f.type === 'boolean') return Flags.boolean(common);
  if (f.multiple) return Flags.string({ ...common, multiple: true, delimiter: ',' });
  if (f.options) return Flags.string({ ...common, options: [...f.options] });
  return Flags.string(common);
}

export const configFlag = Flags.string({ char: 'c', helpValue: CONFIG_FLAG.helpValue!, description: CONFIG_FLAG.description });
