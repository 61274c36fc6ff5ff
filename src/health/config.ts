/** The [health] section: GPU health rules (docs/health.md), on every node whatever its scheduler. */
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { defineSection } from '../core/config/schema.js';
import type { HealthOptions } from './tracker.js';

export const HEALTH_SECTION = defineSection({
  name: 'health',
  description:
    'GPU health (docs/health.md): the daemon judges every GPU by the health rules, emits ' +
    'gpu.health and gpu.health.score, and keeps the facts in <state_dir>/health.json for `l9gpu ' +
    'health` and `l9gpu health --nhc` (Slurm HealthCheckProgram, NHC).',
  keys: [
    { key: 'enabled', type: 'bool', default: true, description: 'Judge GPU health in the daemon.' },
    {
      key: 'xid_window',
      type: 'duration',
      default: 7 * 86400,
      min: 60,
      example: '7d',
      description: 'How long an Xid counts against its GPU, unless the node reboots or an admin clears it first (`l9gpu health --clear`).',
    },
    {
      key: 'ecc_trend_window',
      type: 'duration',
      default: 86400,
      min: 60,
      example: '24h',
      description: 'The window over which a rise of the lifetime uncorrected ECC count is a warning.',
    },
    {
      key: 'replay_window',
      type: 'duration',
      default: 600,
      min: 1,
      example: '10m',
      description: 'The window of the PCIe replay rate (more than 8 a minute is a warning).',
    },
    {
      key: 'throttle_window',
      type: 'duration',
      default: 600,
      min: 1,
      example: '10m',
      description: 'The window of the thermal and power-brake throttling shares.',
    },
    {
      key: 'stale_after',
      type: 'duration',
      default: 300,
      min: 1,
      example: '5m',
      description:
        '`l9gpu health`: a health file older than this (or than five collection intervals, ' +
        'whichever is longer) means the daemon is not judging: the state is unknown.',
    },
  ],
});

export function healthOptions(cfg: Config): HealthOptions {
  const h = readSection(cfg, HEALTH_SECTION);
  return {
    stateDir: readSection(cfg, DAEMON_SECTION).state_dir,
    xidWindowMs: h.xid_window * 1000,
    trendWindowMs: h.ecc_trend_window * 1000,
    replayWindowMs: h.replay_window * 1000,
    throttleWindowMs: h.throttle_window * 1000,
  };
}
