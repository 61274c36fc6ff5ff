/** Builds the attribution provider the configuration asks for. */
import { hostname } from 'node:os';
import { noneProvider, resolveAttribution, type AttributionProvider } from '../src/attribution/provider.js';
import type { Config } from '../src/config/load.js';
import { ConfigError } from '../src/config/schema.js';
import type { Logger } from '../src/log.js';
import { gresConfPath } from '../slurm/gres.js';

export function slurmNodeName(cfg: Config, env: NodeJS.ProcessEnv = process.env): string {
  return cfg.str('slurm', 'node_name') ?? env.SLURMD_NODENAME ?? hostname().split('.')[0]!;
}

/** The provider for the configuration; the store and the Slurm code load only when Slurm attribution is on. */
export async function createAttribution(cfg: Config, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<AttributionProvider> {
  const { resolved, slurmConf } = resolveAttribution(cfg, env);
  if (resolved === 'none') return noneProvider;
  if (resolved === 'kubernetes') {
    throw new ConfigError('[daemon] attribution: "kubernetes" is not available in this build (available: auto, slurm, none)', { section: 'daemon', key: 'attribution' });
  }
  const [{ openStore }, { SlurmAttribution }, { Reconciler }] = await Promise.all([
    import('../src/store/open.js'),
    import('../slurm/attribution.js'),
    import('../slurm/reconciler.js'),
  ]);
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
