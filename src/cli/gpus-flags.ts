/** The `l9gpu gpus` flags as data: oclif's command and the light entry build on them; importing them loads no plugin. */
import { CONFIG_FLAG, type FlagSpec } from './flag-spec.js';

export const GPUS_FLAGS: readonly FlagSpec[] = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON (stable field names, registry units: ratios 0..1, bytes, W, J, Cel).' },
  { name: 'plugin', type: 'string', multiple: true, helpValue: 'NAME', description: 'GPU plugin to sample (default: the configured ones, auto-detected).' },
];
