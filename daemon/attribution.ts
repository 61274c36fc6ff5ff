/** Builds the attribution provider the configuration asks for. */
import { hostname } from 'node:os';
import { noneProvider, resolveMode, slurmConfPath, type AttributionMode, type AttributionProvider } from '../src/attribution/provider.js';
import type { Config } from '../src/config/load.js';
import { ConfigError } from '../src/config/schema.js';
import type { Logger } from '../src/log.js';
import { openStore } from '../src/store/open.js';
import { SlurmAttribution } from '../slurm/attribution.js';
import { gresConfPath } from '../slurm/gres.js';
import { Reconciler } from '../slurm/reconciler.js';

export function slurmNodeName(cfg: Config, env: NodeJS.ProcessEnv = process.env): string {
  return cfg.str('slurm', 'node_name') ?? env.SLURMD_NODENAME ?? hostname().split('.')[0]!;
}

export function createAttribution(cfg: Config, log: Logger, env: NodeJS.ProcessEnv = process.env): AttributionProvider {
  const mode = cfg.str('daemon', 'attribution') as AttributionMode;
  const slurmConf = cfg.str('slurm', 'slurm_conf') ?? slurmConfPath(env) ?? null;
  const resolved = mode === 'auto' ? (slurmConf ? 'slurm' : 'none') : resolveMode(mode, env);
  if (resolved === 'none') return noneProvider;
  if (resolved === 'kubernetes') {
    throw new ConfigError('[daemon] attribution: "kubernetes" is not available in this build (available: auto, slurm, none)', { section: 'daemon', key: 'attribution' });
  }
  const db = openStore(cfg.str('daemon', 'state_dir')!);
  const slog = log.child('slurm');
  const reconciler = new Reconciler({
    db,
    node: slurmNodeName(cfg, env),
    gresConf: gresConfPath(slurmConf ?? undefined, cfg.str('slurm', 'gres_conf')),
    binDir: cfg.str('slurm', 'bin_dir'),
    slurmConf,
    commandTimeoutMs: cfg.num('slurm', 'command_timeout')! * 1000,
    log: slog,
  });
  return new SlurmAttribution(db, slog, reconciler, cfg.num('slurm', 'reconcile_interval')! * 1000, {
    seriesRetentionMs: cfg.num('slurm', 'series_retention')! * 1000,
    jobRetentionMs: cfg.num('slurm', 'job_retention')! * 1000,
  });
}
