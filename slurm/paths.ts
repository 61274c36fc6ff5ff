/** Where this node's Slurm configuration is, one answer for the hooks, the reconciler and doctor. */
import { existsSync } from 'node:fs';
import type { Config } from '../src/core/config/load.js';
import { gresConfPath } from './gres.js';

/** [slurm] slurm_conf (or $SLURM_CONF through it), else where slurmd looks. */
export function slurmConfPath(cfg: Config, env: NodeJS.ProcessEnv = process.env): string | null {
  return cfg.str('slurm', 'slurm_conf') ?? [env.SLURM_CONF, '/etc/slurm/slurm.conf', '/etc/slurm-llnl/slurm.conf'].find((p): p is string => !!p && existsSync(p)) ?? null;
}

/** [slurm] gres_conf, else gres.conf next to slurm.conf. */
export function gresConfFor(cfg: Config, env: NodeJS.ProcessEnv = process.env): string {
  return gresConfPath(slurmConfPath(cfg, env) ?? undefined, cfg.str('slurm', 'gres_conf'));
}
