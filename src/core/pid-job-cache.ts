/**
 * Which job (or pod) a process belongs to, through a scheduler's own reading
 * of /proc (its cgroup path, its environment). Cached per pid and start time,
 * since pids are reused. A process found in no job is read again a few seconds
 * later: seen between its fork and its exec (slurmstepd's child before it runs
 * the job's script), or before Slurm moved it into the job's cgroup, it has
 * neither yet, and its start time does not change when it gets them.
 */
import { processStart } from './process-start.js';

export type PidJobReader = (pid: number, proc: string) => string | null;

/** How long "in no job" is believed before /proc is read again. */
const NO_JOB_RECHECK_MS = 5000;

export class PidJobCache {
  private readonly cache = new Map<number, { start: string | undefined; job: string | null; at: number }>();
  constructor(
    private readonly read: PidJobReader,
    private readonly proc = '/proc',
    private readonly now: () => number = Date.now,
  ) {}

  job(pid: number): string | null {
    const start = processStart(pid, this.proc);
    const c = this.cache.get(pid);
    const t = this.now();
    if (c && c.start === start && (c.job !== null || t - c.at < NO_JOB_RECHECK_MS)) return c.job;
    const job = start === undefined ? null : this.read(pid, this.proc);
    this.cache.delete(pid);
    this.cache.set(pid, { start, job, at: t });
    if (this.cache.size > 4096) this.cache.delete(this.cache.keys().next().value!);
    return job;
  }
}
