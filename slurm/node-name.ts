/**
 * This node's name in Slurm, one answer for the hooks, the reconciler,
 * doctor and `l9gpu jobs`: [slurm] node_name, else the name slurmd gave the
 * hook ($SLURMD_NODENAME), else the short host name.
 */
import { hostname } from 'node:os';
import type { Config } from '../src/core/config/load.js';

export function slurmNodeName(cfg: Config, env: NodeJS.ProcessEnv = process.env): string {
  return cfg.str('slurm', 'node_name') ?? (env.SLURMD_NODENAME || undefined) ?? hostname().split('.')[0]!;
}
