/**
 * End state and exit code of recently ended runs whose epilog could not tell
 * (cancelled jobs also end 0:0; a failed one may be OUT_OF_MEMORY or
 * TIMEOUT), from sacct, or scontrol within MinJobAge when there is no
 * accounting. Bounded: one sacct call for at most SACCT_BATCH jobs, else at
 * most SCONTROL_PER_TICK scontrol calls; a job Slurm answered for (FAILED
 * included) or forgot is never asked about again.
 */
import type { Db } from '../src/store/open.js';
import { endsWithoutState, recordEndState } from '../src/store/jobs.js';
import type { SlurmJob } from './jobs-query.js';
import { ACTIVE } from './job-states.js';
import { SACCT_BATCH, SCONTROL_PER_TICK } from './reconcile-limits.js';
import type { SlurmClient } from './slurm-client.js';

/** How far back an end without a state is still asked about (ms). */
const LOOKBACK_MS = 86_400_000;

export class EndStateBackfill {
  /** Jobs whose end state Slurm has answered (or can no longer answer): never asked again. */
  private readonly settled = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly slurm: SlurmClient,
  ) {}

  /** A job whose end state is known otherwise (its close carried it): not to be asked about. */
  settle(jobId: string): void {
    this.settled.add(jobId);
  }

  /** Fills what Slurm answers of the ends still without a state; the count of runs filled. */
  async fill(now: number): Promise<number> {
    const db = this.db;
    const todo = endsWithoutState(db, now - LOOKBACK_MS).filter((id) => !this.settled.has(id));
    if (todo.length === 0) return 0;
    let filled = 0;
    const apply = (job: string, state: string, exitCode: number | null, exitSignal: number | null, endTime: number | null) => {
      if (!state || ACTIVE.has(state) || state === 'PENDING') return;
      this.settled.add(job);
      filled += recordEndState(db, job, { state, exitCode, exitSignal, endTime }, now);
    };
    const recs = await this.slurm.endStates(todo.slice(0, SACCT_BATCH), now);
    if (recs) {
      for (const r of recs) apply(r.jobIdRaw, r.state, r.exitCode, r.exitSignal, r.end);
      return filled;
    }
    for (const id of todo.slice(0, SCONTROL_PER_TICK)) {
      let j: SlurmJob | null = null;
      try {
        j = await this.slurm.queryJob(id, false);
      } catch {
        /* Slurm not answering: the state stays unknown for now */
      }
      if (j) apply(id, j.state, j.exitCode, null, j.endTime);
      // aged out of slurmctld (MinJobAge): the state stays unknown, and asking again will not help
      else this.settled.add(id);
    }
    return filled;
  }
}
