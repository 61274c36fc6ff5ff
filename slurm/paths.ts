/** Where this node's Slurm configuration is, one answer for the hooks, the reconciler and doctor. */
import { existsSync } from 'node:fs';
import type { Config } from '../src/core/config/load.js';
import { gresConfPath } from './gres.js';
import { readSection } from '../src/core/config/read.js';
import { SLURM_SECTION } from './config.js';

/**
 * Where Slurm's own clients look, in their order (read_config.c): the default
 * path, Debian's old one, then configless Slurm's cache, which slurmd keeps
 * (with gres.conf beside it) when it fetched its config from slurmctld.
 */
export const SLURM_CONF_CANDIDATES = ['/etc/slurm/slurm.conf', '/etc/slurm-llnl/slurm.conf', '/run/slurm/conf/slurm.conf'];

/** [slurm] slurm_conf (or $SLURM_CONF through it), else where Slurm's clients look. */
export function slurmConfPath(
  cfg: Config,
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = SLURM_CONF_CANDIDATES,
): string | null {
  return (
    readSection(cfg, SLURM_SECTION).slurm_conf ?? [env.SLURM_CONF, ...candidates].find((p): p is string => !!p && existsSync(p)) ?? null
  );
}

/** [slurm] gres_conf, else gres.conf next to slurm.conf. */
export function gresConfFor(cfg: Config, env: NodeJS.ProcessEnv = process.env): string {
  return gresConfPath(slurmConfPath(cfg, env) ?? undefined, readSection(cfg, SLURM_SECTION).gres_conf);
}
