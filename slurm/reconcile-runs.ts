/**
 * The job runs of the store as the reconciler writes them on Slurm's word:
 * which key a run has, opening or filling one in, closing one whose epilog
 * did not run. Both list strategies write through it, so a run opened by
 * polling is the same whichever way the jobs were listed.
 */
import type { Logger } from '../src/core/log.js';
import type { Db } from '../src/store/open.js';
import { dropGresBindings, openSluidRun, recordEnd, recordStart, type JobRecord } from '../src/store/jobs.js';
import { readGresLayout, type GresLayout } from './gres.js';
import type { SlurmJob } from './jobs-query.js';
import { ACTIVE } from './job-states.js';
import { gresIndicesToGpus, type Inventory } from './resolve.js';

export class ReconcileRuns {
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    /** A job whose end Slurm told with the close: its end state needs no asking later. */
    private readonly settle: (jobId: string) => void,
  ) {}

  /**
   * The key the hooks give this run: its SLUID where Slurm has them (25.11+;
   * 26.05 prints it, and a poll that runs before the prolog must use it too,
   * or it opens a phantom r<n> run beside the prolog's). 25.11's squeue does
   * not print it: an open SLUID run of the job is the hook's key.
   */
  runKeyOf(j: SlurmJob): string {
    if (j.sluid) return `sluid:${j.sluid}`;
    return openSluidRun(this.db, j.jobId) ?? `r${j.restarts}`;
  }

  /** Opens (or fills in, or confirms) the run of a job Slurm says runs on this node. */
  recordRunning(j: SlurmJob, node: string, now: number, gres: () => GresLayout, inv: Inventory): void {
    const rec: JobRecord = {
      jobId: j.jobId,
      runKey: this.runKeyOf(j),
      cluster: j.cluster,
      user: j.user,
      uid: j.uid,
      account: j.account,
      partition: j.partition,
      qos: j.qos,
      name: j.name,
      arrayJobId: j.arrayJobId,
      arrayTaskId: j.arrayTaskId,
      hetJobId: j.hetJobId,
      hetJobOffset: j.hetJobOffset,
      startTime: j.startTime,
    };
    const gpus = gresIndicesToGpus(j.gpuIdx[node] ?? [], j.sharedIdx[node] ?? [], gres, inv);
    recordStart(this.db, rec, gpus, 'poll', now);
    // a prolog that ran before the inventory existed left "gres:<i>" bindings: now resolved, they go
    if (gpus.some((g) => !g.uuid.startsWith('gres:'))) dropGresBindings(this.db, rec.jobId, rec.runKey);
  }

  /** Closes the open run of a job whose epilog did not run here; with Slurm's answer, its end too. */
  closeRun(jobId: string, runKey: string, job: SlurmJob | null, now: number): void {
    const ended = job && !ACTIVE.has(job.state) && job.state !== 'PENDING' ? job : null;
    recordEnd(
      this.db,
      { jobId, runKey },
      { endTime: ended?.endTime ?? now, state: ended?.state, exitCode: ended?.exitCode ?? undefined },
      [],
      'poll',
      now,
    );
    if (ended) this.settle(jobId);
    this.log.info('closed the bindings of a job whose epilog did not run', {
      job: jobId,
      run: runKey,
      ...(ended ? { state: ended.state } : {}),
    });
  }

  /** The node's gres.conf layout, read once a reconcile and only when a GPU index needs it. */
  gresOf(node: string, gresConf: string): () => GresLayout {
    let layout: GresLayout | undefined;
    // unreadable: gresIndicesToGpus falls back to gres:<i>
    return () => (layout ??= readGresLayout(gresConf, node));
  }
}
