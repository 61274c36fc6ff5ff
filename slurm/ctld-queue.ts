/**
 * The slurmctld epilog's queue of ended jobs: a spool folder in the state
 * dir (<state_dir>/ctld-queue), one small file a job, so that any number of
 * epilogs add to it at once without a lock, and the worker's progress is
 * the files' place:
 *
 *   tmp/   a file being written (an epilog killed mid-write leaves it here, never half in new/)
 *   new/   queued: renamed in whole from tmp/
 *   cur/   taken by the worker (rename from new/); done = unlinked.
 *          A worker that died leaves its jobs here: the next one puts them back in new/.
 *   dropped  one byte appended per job refused because the backlog was full
 *
 * Names sort by the time the job ended (ms, zero-padded), so the worker
 * takes the oldest first. The backlog cap is checked by counting new/ and
 * cur/; epilogs that run at the same moment may each pass it, so it holds
 * within the number of epilogs running at once. When it is full the job
 * being added is dropped (the newest), not a queued one: a queued job may
 * be minutes into its wait for the nodes' figures, and an epilog never
 * deletes another's work.
 */
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { RAW_JOB_ID, JOB_ID } from '../src/core/job-id.js';

/** An ended job as the queue holds it. */
export interface CtldEpilogJob {
  /** The id slurm.job.id carries (the raw id, an array task's own). */
  rawId: string;
  /** The id accounting knows the run by: ARRAYID_TASKID for an array task (a raw id would name every task of the first one's array). */
  acctId: string;
}

export const QUEUE_DIR = 'ctld-queue';
/** Jobs queued and taken at most: 10,000 ended GPU jobs is hours of a large cluster's ends with the backend away. */
export const DEFAULT_BACKLOG = 10_000;

export interface QueuedJob extends CtldEpilogJob {
  /** When the epilog queued it (ms since epoch): the job's end, near enough. */
  at: number;
  /** Its file name, in new/ or cur/. */
  file: string;
}

export class CtldQueue {
  readonly dir: string;
  constructor(stateDir: string) {
    this.dir = join(stateDir, QUEUE_DIR);
  }

  private sub(s: 'tmp' | 'new' | 'cur'): string {
    return join(this.dir, s);
  }

  /** Makes the queue's folders (the shell path queues only into folders that exist). */
  ensure(): void {
    for (const s of ['tmp', 'new', 'cur'] as const) mkdirSync(this.sub(s), { recursive: true, mode: 0o750 });
  }

  /** Jobs queued or taken. */
  size(): number {
    return this.list('new').length + this.list('cur').length;
  }

  pending(): number {
    return this.list('new').length;
  }

  private list(s: 'new' | 'cur'): string[] {
    try {
      return readdirSync(this.sub(s)).filter((f) => !f.startsWith('.'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  }

  /** Adds an ended job; 'dropped' (and counted) when the backlog holds `cap` jobs already. */
  add(job: CtldEpilogJob, cap: number, now = Date.now()): 'queued' | 'dropped' {
    this.ensure();
    if (this.size() >= cap) {
      appendFileSync(join(this.dir, 'dropped'), '.', { mode: 0o640 });
      return 'dropped';
    }
    const name = `${String(now).padStart(15, '0')}-${process.pid}-${job.acctId}`;
    const tmp = join(this.sub('tmp'), name);
    const fd = openSync(tmp, 'wx', 0o640);
    try {
      writeSync(fd, JSON.stringify({ rawId: job.rawId, acctId: job.acctId, at: now }));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.sub('new'), name));
    return 'queued';
  }

  /**
   * Takes up to `max` of the oldest queued jobs (new/ -> cur/). A file
   * another worker took first, or one that is not a job (written by hand,
   * damaged), is passed over; a damaged one is removed and reported.
   */
  take(max: number, onBad?: (file: string, why: string) => void): QueuedJob[] {
    const out: QueuedJob[] = [];
    for (const file of this.list('new').sort()) {
      if (out.length >= max) break;
      const cur = join(this.sub('cur'), file);
      try {
        renameSync(join(this.sub('new'), file), cur);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      const job = readJob(cur, file);
      if (typeof job === 'string') {
        onBad?.(file, job);
        unlinkSync(cur);
        continue;
      }
      out.push(job);
    }
    return out;
  }

  /** Marks a taken job done: its file goes (one unlink: done, or not). */
  done(job: QueuedJob): void {
    try {
      unlinkSync(join(this.sub('cur'), job.file));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  /** Puts back what a worker that died had taken (call holding the worker lock): how many. */
  recover(): number {
    const files = this.list('cur');
    for (const f of files) renameSync(join(this.sub('cur'), f), join(this.sub('new'), f));
    return files.length;
  }

  /** The jobs dropped since the last call (the counter restarts). */
  takeDropped(): number {
    const from = join(this.dir, 'dropped');
    const taken = join(this.dir, `dropped.${process.pid}`);
    try {
      renameSync(from, taken);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw e;
    }
    // an epilog that opened the file just before the rename may append after the stat: that drop goes uncounted
    // (a count, never a job lost that was queued)
    const n = statSync(taken).size;
    unlinkSync(taken);
    return n;
  }
}

function readJob(path: string, file: string): QueuedJob | string {
  let j: { rawId?: unknown; acctId?: unknown; at?: unknown };
  try {
    j = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    return `not a queued job (${(e as Error).message})`;
  }
  if (
    typeof j.rawId !== 'string' ||
    !RAW_JOB_ID.test(j.rawId) ||
    typeof j.acctId !== 'string' ||
    !JOB_ID.test(j.acctId) ||
    typeof j.at !== 'number'
  )
    return 'not a queued job (its fields are wrong)';
  return { rawId: j.rawId, acctId: j.acctId, at: j.at, file };
}
