/** The `l9gpu doctor` flags as data: oclif's command and the light entry build on them; importing them loads no plugin. */
import { CONFIG_FLAG, type FlagSpec } from './flag-spec.js';

export const DOCTOR_FLAGS: readonly FlagSpec[] = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print the report as JSON.' },
  { name: 'all', type: 'boolean', description: 'List the settings of disabled plugins and sinks too.' },
];
