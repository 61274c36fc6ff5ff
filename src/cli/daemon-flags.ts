/**
 * The `l9gpu daemon` flags, defined once: the oclif command (help, --help
 * output) and the light entry that starts the daemon without loading oclif
 * are both built from this table.
 */
import { PLUGINS } from '../../plugins/index.js';
import type { Override } from '../config/load.js';

export interface FlagSpec {
  readonly name: string;
  readonly type: 'string' | 'boolean';
  readonly char?: string;
  readonly multiple?: boolean;
  readonly options?: readonly string[];
  readonly helpValue?: string;
  readonly description: string;
}

export const DAEMON_FLAGS: readonly FlagSpec[] = [
  { name: 'config', type: 'string', char: 'c', helpValue: 'FILE', description: 'INI configuration file (default /etc/l9gpu/l9gpu.ini, or $L9GPU_CONFIG).' },
  { name: 'once', type: 'boolean', description: 'Run every enabled plugin once, flush every sink, exit 0.' },
  { name: 'interval', type: 'string', helpValue: 'SECONDS', description: 'Collection interval of every plugin for this run (10, 10s, 500ms, 1m).' },
  { name: 'sink', type: 'string', multiple: true, helpValue: 'NAME', description: 'Sink to enable (otlp, prometheus, stdout, file, webhook); repeat or comma-separate for several. Replaces [daemon] sinks for this run.' },
  { name: 'plugin', type: 'string', multiple: true, helpValue: 'NAME', description: 'Plugin to run; repeat or comma-separate for several. Replaces [daemon] plugins for this run.' },
  { name: 'attribution', type: 'string', options: ['auto', 'slurm', 'kubernetes', 'none'], description: 'Job attribution of GPU points (default: slurm when Slurm is configured on this node, else none).' },
];

export interface DaemonFlags {
  config?: string;
  once?: boolean;
  interval?: string;
  sink?: string[];
  plugin?: string[];
  attribution?: string;
}

/** Flags as config overrides (flags > environment > file > defaults). */
export function flagOverrides(flags: DaemonFlags): Override[] {
  const o: Override[] = [];
  if (flags.interval !== undefined) {
    o.push({ section: 'daemon', key: 'interval', raw: flags.interval, flag: '--interval' });
    for (const p of PLUGINS) o.push({ section: p.name, key: 'interval', raw: flags.interval, flag: '--interval' });
  }
  if (flags.sink) o.push({ section: 'daemon', key: 'sinks', raw: flags.sink.join(','), flag: '--sink' });
  if (flags.plugin) o.push({ section: 'daemon', key: 'plugins', raw: flags.plugin.join(','), flag: '--plugin' });
  if (flags.attribution) o.push({ section: 'daemon', key: 'attribution', raw: flags.attribution, flag: '--attribution' });
  return o;
}
