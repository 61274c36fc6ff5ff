/**
 * Which job (or pod) a process belongs to, through a scheduler's own reading
 * of /proc (its cgroup path, its environment). Cached per pid and start time,
 * since pids are reused.
 */
import { processStart } from './process-start.js';

export type PidJobReader = (pid: number, proc: string) => string | null;

export class PidJobCache {
  private readonly cache = new Map<number, { start: string | undefined; job: string | null }>();
  constructor(
    private readonly read: PidJobReader,
    private readonly proc = '/proc',
  ) {}

  job(pid: number): string | null {
    const start = processStart(pid, this.proc);
    const c = this.cache.get(pid);
    if (c && c.start === start) return c.job;
    const job = start === undefined ? null : this.read(pid, this.proc);
    this.cache.set(pid, { start, job });
    if (this.cache.size > 4096) this.cache.delete(this.cache.keys().next().value!);
    return job;
  }
}
