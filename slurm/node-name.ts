/**
 * This node's name in Slurm, one answer for the hooks, the reconciler,
 * doctor and `l9gpu jobs`. NodeName may differ from the host name
 * (NodeHostname=, `slurmd -N`, cloud and dynamic nodes) and a systemd service
 * does not see $SLURMD_NODENAME, so the prolog and epilog record the name
 * slurmd gave them in the store, and the daemon learns it from there.
 *
 * Precedence: [slurm] node_name, else $SLURMD_NODENAME, else the learned name
 * (recorded by the hooks, or found by the reconciler as the node whose
 * NodeHostName is this host), else the short host name (a guess: the
 * reconciler asks Slurm about it before it closes anything on its word).
 */
import { hostname } from 'node:os';
import type { Config } from '../src/core/config/load.js';
import { readSection } from '../src/core/config/read.js';
import { SLURM_SECTION } from './config.js';

export const LEARNED_NODE_KEY = 'slurm.node_name';

export type NodeNameSource = 'config' | 'environment' | 'learned' | 'host name';

export function resolveNodeName(
  cfg: Config,
  env: NodeJS.ProcessEnv = process.env,
  learned: string | null = null,
): { name: string; source: NodeNameSource } {
  const configured = readSection(cfg, SLURM_SECTION).node_name;
  if (configured) return { name: configured, source: 'config' };
  if (env.SLURMD_NODENAME) return { name: env.SLURMD_NODENAME, source: 'environment' };
  if (learned) return { name: learned, source: 'learned' };
  return { name: hostname().split('.')[0]!, source: 'host name' };
}

export function slurmNodeName(cfg: Config, env: NodeJS.ProcessEnv = process.env, learned: string | null = null): string {
  return resolveNodeName(cfg, env, learned).name;
}
