/**
 * A Slurm job's attributes from its open binding in the store: what the
 * transform (attribution.ts) puts on its GPUs' points and what `l9gpu gpus`
 * shows beside each GPU. A module of its own so that `gpus` loads neither the
 * transform nor the process readers it needs (slurm/manifest.ts jobsByGpu).
 */
import type { Attributes } from '../src/core/metrics/model.js';
import type { OpenBinding } from '../src/store/jobs.js';

export function jobAttributes(b: OpenBinding): Attributes {
  const a: Attributes = { 'slurm.job.id': b.jobId };
  if (b.user) a['slurm.user'] = b.user;
  if (b.account) a['slurm.account'] = b.account;
  if (b.partition) a['slurm.partition'] = b.partition;
  if (b.name) a['slurm.job.name'] = b.name;
  if (b.arrayJobId) a['slurm.array.job.id'] = b.arrayJobId;
  if (b.arrayTaskId) a['slurm.array.task.id'] = b.arrayTaskId;
  if (b.cluster) a['slurm.cluster.name'] = b.cluster;
  return a;
}
