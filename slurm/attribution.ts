/**
 * The "slurm" attribution transform: the store-bindings transform
 * (src/pipeline/bound-attribution.ts) with Slurm's attributes and its
 * reading of a process's job (cgroup path or environment).
 */
import type { Logger } from '../src/core/log.js';
import { PidJobCache } from '../src/core/pid-job-cache.js';
import { BoundAttribution, type LabelBound } from '../src/pipeline/bound-attribution.js';
import { jobOwnerLookup } from '../src/store/jobs.js';
import type { Db } from '../src/store/open.js';
import { SLURM_METRIC } from './metrics.js';
import { userName } from '../src/core/proc-owner.js';
import { ownJobOfPid } from './proc-job.js';
import { jobAttributes } from './job-attributes.js';

export class SlurmAttribution extends BoundAttribution {
  constructor(db: Db, log: Logger, lastReconciled: () => number | undefined = () => undefined, bound: LabelBound = {}) {
    const refused = (pid: number, job: string, uid: number | undefined) =>
      bound.budgets?.hit(
        'not_owner',
        uid === undefined ? 'unknown' : userName(uid),
        `process ${pid} says it is in job ${job} (SLURM_JOB_ID in its environment), a job of another user: not attributed to it`,
      );
    // who the store has a job as (its latest run): what a job named by a user's process or file is checked against
    const owner = jobOwnerLookup(db);
    super(db, log, {
      ...bound,
      name: 'slurm',
      attributesOf: jobAttributes,
      bareAttributes: (job) => ({ 'slurm.job.id': job }),
      pids: new PidJobCache(ownJobOfPid((job) => owner(job)?.uid, refused)),
      jobOwner: owner,
      metrics: {
        share: SLURM_METRIC.share,
        outside: SLURM_METRIC.outside,
        bindings: SLURM_METRIC.bindings,
        syncAge: SLURM_METRIC.reconcileAge,
      },
      lastSynced: lastReconciled,
    });
  }
}
