/**
 * This node's name in Slurm, one answer for the hooks, the reconciler,
 * doctor and `l9gpu jobs`. NodeName may differ from the host name
 * (NodeHostname=, `slurmd -N`, cloud and dynamic nodes) and a systemd service
 * does not see $SLURMD_NODENAME, so the prolog and epilog record the name
 * slurmd gave them in the store, and the daemon learns it from there.
 *
 * Precedence: [slurm] node_name, else $SLURMD_NODENAME, else the name the
 * hooks recorded, else the short host name (a guess: the reconciler checks it
 * with Slurm before it closes anything on its word).
 */
import { hostname } from 'node:os';
import type { Config } from '../src/core/config/load.js';

export const LEARNED_NODE_KEY = 'slurm.node_name';

export type NodeNameSource = 'config' | 'environment' | 'hooks' | 'host name';

export function resolveNodeName(cfg: Config, env: NodeJS.ProcessEnv = process.env, learned: string | null = null): { name: string; source: NodeNameSource } {
  const configured = cfg.str('slurm', 'node_name');
  if (configured) return { name: configured, source: 'config' };
  if (env.SLURMD_NODENAME) return { name: env.SLURMD_NODENAME, source: 'environment' };
  if (learned) return { name: learned, source: 'hooks' };
  return { name: hostname().split('.')[0]!, source: 'host name' };
}

export function slurmNodeName(cfg: Config, env: NodeJS.ProcessEnv = process.env, learned: string | null = null): string {
  return resolveNodeName(cfg, env, learned).name;
}
