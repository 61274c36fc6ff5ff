/**
 * Attribution: one transform applied to every batch between the plugins and
 * the sinks, adding job attributes to GPU points (like dcgm-exporter's
 * "transformations"). Slurm and Kubernetes implement this same interface.
 */
import { existsSync } from 'node:fs';
import type { Config } from '../config/load.js';
import type { Batch, Emitter } from '../metrics/model.js';

export type AttributionMode = 'auto' | 'slurm' | 'kubernetes' | 'none';

export interface AttributionProvider {
  readonly name: 'slurm' | 'kubernetes' | 'none';
  /** Returns the batch with attribution attributes on its GPU points (a point may be split per job). */
  attribute(batch: Batch): Batch;
  /** One line for doctor. */
  status(): string;
  /** The provider's own health for the self-metrics. */
  collectSelf?(out: Emitter): void;
  close?(): void;
}

export const noneProvider: AttributionProvider = {
  name: 'none',
  attribute: (b) => b,
  status: () => 'none: GPU points carry no job attributes',
};

/** Where Slurm's config lives on a node, in the order slurmd looks. */
export function slurmConfPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return [env.SLURM_CONF, '/etc/slurm/slurm.conf', '/etc/slurm-llnl/slurm.conf'].find((p): p is string => !!p && existsSync(p));
}

export interface ResolvedAttribution {
  mode: AttributionMode;
  resolved: Exclude<AttributionMode, 'auto'>;
  /** [slurm] slurm_conf, else where slurmd would look. */
  slurmConf: string | null;
}

/** What `attribution = ...` means on this node: auto is slurm when a slurm.conf is there. */
export function resolveAttribution(cfg: Config, env: NodeJS.ProcessEnv = process.env): ResolvedAttribution {
  const mode = cfg.str('daemon', 'attribution') as AttributionMode;
  const slurmConf = cfg.str('slurm', 'slurm_conf') ?? slurmConfPath(env) ?? null;
  return { mode, slurmConf, resolved: mode !== 'auto' ? mode : slurmConf ? 'slurm' : 'none' };
}

