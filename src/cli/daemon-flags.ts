/**
 * The `l9gpu daemon` flags, defined once: the oclif command (help, --help
 * output) and the light entry that starts the daemon without loading oclif
 * are both built from this table; the name lists come from the composition root.
 */
import { ATTRIBUTION_NAMES, PLUGIN_NAMES, SINK_NAMES } from '../../daemon/schema.js';
import type { Override } from '../core/config/load.js';
import { CONFIG_FLAG, type FlagSpec, type FlagsOf } from './flag-spec.js';

export const DAEMON_FLAGS = [
  CONFIG_FLAG,
  {
    name: 'once',
    type: 'boolean',
    description:
      'Run every enabled plugin once, flush every sink, exit 0 (1: nothing delivered, a plugin ' +
      'named failed, or GPUs the node must have were not read).',
  },
  {
    name: 'interval',
    type: 'string',
    helpValue: 'SECONDS',
    description: 'Collection interval of every plugin for this run (10, 10s, 500ms, 1m).',
  },
  {
    name: 'sink',
    type: 'string',
    multiple: true,
    helpValue: 'NAME',
    description: `Sink to enable (${SINK_NAMES.join(', ')}); repeat or comma-separate for several. Replaces [daemon] sinks for this run.`,
  },
  {
    name: 'plugin',
    type: 'string',
    multiple: true,
    helpValue: 'NAME',
    description:
      `Plugin to run (auto, ${PLUGIN_NAMES.join(', ')}); repeat or comma-separate for several. ` +
      `Replaces [daemon] plugins for this run.`,
  },
  {
    name: 'attribution',
    type: 'string',
    options: ['auto', ...ATTRIBUTION_NAMES, 'none'],
    description:
      `Job attribution of GPU points (default auto: the first of ${ATTRIBUTION_NAMES.join(', ')} ` + `configured on this node, else none).`,
  },
  {
    name: 'compact-store',
    type: 'boolean',
    description:
      "Give the store's free space back to the filesystem (a store made before auto_vacuum: one " +
      'VACUUM, about 20-40 s per GB), then exit. Refused while the daemon runs: stop it first ' +
      '(hooks wait on the store meanwhile, up to their busy timeout).',
  },
] as const satisfies readonly FlagSpec[];

/** The daemon's flags, typed from the table (a misspelt flag does not compile). */
export type DaemonFlags = FlagsOf<typeof DAEMON_FLAGS>;

/** Flags as config overrides (flags > environment > file > defaults). */
export function flagOverrides(flags: DaemonFlags): Override[] {
  const o: Override[] = [];
  if (flags.interval !== undefined) {
    o.push({ section: 'daemon', key: 'interval', raw: flags.interval, flag: '--interval' });
    for (const p of PLUGIN_NAMES) o.push({ section: p, key: 'interval', raw: flags.interval, flag: '--interval' });
  }
  if (flags.sink) o.push({ section: 'daemon', key: 'sinks', raw: flags.sink.join(','), flag: '--sink' });
  if (flags.plugin) o.push({ section: 'daemon', key: 'plugins', raw: flags.plugin.join(','), flag: '--plugin' });
  if (flags.attribution) o.push({ section: 'daemon', key: 'attribution', raw: flags.attribution, flag: '--attribution' });
  return o;
}
