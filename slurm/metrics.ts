/** The metrics the Slurm provider itself emits: the transform uses the definitions, the manifest lists their names. */
import { metric } from '../src/core/metrics/registry.js';

export const SLURM_METRIC = {
  share: metric('gpu.job.share'),
  outside: metric('gpu.process.outside_allocation'),
  bindings: metric('l9gpu.slurm.bindings'),
  reconcileAge: metric('l9gpu.slurm.reconcile.age'),
} as const;
