/**
 * The slurmctld epilog worker's lock: an exclusive flock(2) on
 * <state_dir>/ctld-worker.lock, held while a worker drains the queue and let
 * go by the kernel when it ends, however it ends (SIGKILL, OOM): an epilog
 * that finds it held starts no worker. A file in the state dir (SlurmUser's),
 * not an abstract socket: no other local user can take the name first and
 * keep every worker from running.
 *
 * The holder writes its pid in the file and empties it before it lets go:
 * the epilog asks workerRunning(), which reads the pid and the process's
 * command line, and never loads koffi (a tenth of the epilog's start).
 *
 * The flock is src/core/state-lock.ts's, the daemon's lock's.
 */
import { closeSync, ftruncateSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { lockFile } from '../src/core/state-lock.js';

export const WORKER_LOCK = 'ctld-worker.lock';

export interface Held {
  release(): void;
}

/** Takes the worker lock, or undefined when another process holds it. */
export function tryWorkerLock(stateDir: string): Held | undefined {
  const fd = lockFile(join(stateDir, WORKER_LOCK), 0o640);
  if (fd === undefined) return undefined;
  let held = true;
  return {
    release: () => {
      if (!held) return;
      held = false;
      // emptied first: an epilog that reads the file from here on starts a worker
      ftruncateSync(fd, 0);
      closeSync(fd);
    },
  };
}

/**
 * Whether a worker holds the lock: the pid in the file is a live
 * `ctld-epilog --worker`. A worker killed (SIGKILL) left its pid there, but
 * no such process: not running.
 */
export function workerRunning(stateDir: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(stateDir, WORKER_LOCK), 'utf8').trim());
  } catch {
    return false;
  }
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmd.includes('ctld-epilog') && cmd.includes('--worker');
  } catch {
    return false;
  }
}

/**
 * A worker being started: a folder made (mkdir is atomic) by the epilog that
 * starts it and removed by the worker once it tried the lock. Node takes a
 * few hundred ms to start; without this, every epilog of a burst in that
 * time would start one (and all but one would find the lock taken and exit).
 * One older than STARTING_STALE_S is a start that failed: taken over.
 */
export const STARTING = 'ctld-worker.starting';
export const STARTING_STALE_S = 30;

/** Whether this epilog may start the worker (no other start under way). */
export function claimStart(stateDir: string, now = Date.now()): boolean {
  const p = join(stateDir, STARTING);
  try {
    mkdirSync(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  try {
    if (now - statSync(p).mtimeMs < STARTING_STALE_S * 1000) return false;
    rmSync(p, { recursive: true, force: true });
    mkdirSync(p);
    return true;
  } catch {
    return false;
  }
}

/** The worker has tried the lock: the next epilog may start another. */
export function startDone(stateDir: string): void {
  rmSync(join(stateDir, STARTING), { recursive: true, force: true });
}
