/**
 * A job as Slurm accounting reports it: the contract between the one who
 * asks sacct (slurm/sacct-job.ts parses `sacct -j` into it) and the job
 * report, which takes its header from it (slurm-header.ts) and finds the
 * l9gpu summary in its AdminComment (show.ts). Declared on the reading side,
 * as the plugin and sink contracts are: slurm/ imports it, and the report
 * needs nothing of slurm/.
 */

import type { RunIdentity, RunOwner } from '../core/run-identity.js';

/** One job run as sacct reports it (the run identity's fields sacct has; start and end below); null wherever sacct does not say. */
export interface SacctJob extends Pick<RunIdentity, 'jobId' | 'arrayJobId' | 'arrayTaskId'>, RunOwner {
  jobIdRaw: string;
  /** Base state word: COMPLETED, FAILED, CANCELLED ("CANCELLED by 0"), TIMEOUT, OUT_OF_MEMORY, RUNNING... */
  state: string;
  exitCode: number | null;
  exitSignal: number | null;
  /** ms since epoch */
  start: number | null;
  end: number | null;
  elapsedS: number | null;
  /** null: UNLIMITED, or the partition's limit (sacct does not say which). */
  timeLimitS: number | null;
  cpus: number | null;
  /** Memory requested for the whole job (every node), bytes. */
  memReqBytes: number | null;
  /** Largest MaxRSS of the run's steps, bytes. */
  maxRssBytes: number | null;
  nodes: string[];
  /** GPUs allocated (AllocTRES), over every node. */
  gpus: number | null;
  /** Earlier runs of this job id (requeued). */
  restarts: number;
  /** Raw AdminComment ('' when none). */
  adminComment: string;
}
