/**
 * One daemon per state folder: an exclusive flock(2) on `<state_dir>/daemon.lock`,
 * held for the daemon's life and let go by the kernel when the process ends
 * (a SIGKILL, an OOM kill: no stale lock to clean). The holder's pid is
 * written in the file, so that a second daemon can say who runs. Two daemons
 * on one state folder would both write the store's figures (every job's
 * GPU-hours twice) and the second would take over the users' jobs socket,
 * and remove it when it exits.
 *
 * Node has no flock: libc's is called through koffi, as peer-cred.ts calls
 * getsockopt.
 */
import { closeSync, constants, fchmodSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;
const EWOULDBLOCK = 11;

type Flock = (fd: number, op: number) => number;
let flock: Flock | undefined;
let errno: (() => number) | undefined;

function loadFlock(): Flock {
  if (!flock) {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    flock = koffi.load('libc.so.6').func('int flock(int, int)') as Flock;
    errno = () => koffi.errno();
  }
  return flock;
}

export const LOCK_FILE = 'daemon.lock';

export interface StateLock {
  readonly path: string;
  release(): void;
}

/** The state folder is held by another running daemon. */
export class StateLocked extends Error {
  constructor(
    readonly path: string,
    /** The holder's pid as it wrote it, if it did. */
    readonly pid: number | undefined,
  ) {
    super(`another l9gpu daemon${pid ? ` (pid ${pid})` : ''} runs on this state folder (it holds ${path})`);
    this.name = 'StateLocked';
  }
}

/**
 * An exclusive flock(2) on `path`, made with `mode` (and made so), never
 * through a planted link, with the holder's pid written in it: its fd, or
 * undefined when another process holds it (tried `retries` more times, 20 ms
 * apart). The fd is close-on-exec (Node opens every file so): a child does not
 * keep the lock after its parent. The daemon's lock, and the slurmctld epilog
 * worker's (slurm/ctld-lock.ts).
 */
export function lockFile(path: string, mode: number, retries = 0): number | undefined {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, mode);
  fchmodSync(fd, mode);
  const f = loadFlock();
  for (let tries = 0; f(fd, LOCK_EX | LOCK_NB) !== 0; tries++) {
    const e = errno?.() ?? 0;
    if (e === EWOULDBLOCK && tries < retries) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      continue;
    }
    closeSync(fd);
    if (e !== EWOULDBLOCK) throw new Error(`cannot lock ${path}: flock failed (errno ${e})`);
    return undefined;
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  return fd;
}

/**
 * Takes the state folder's lock, or throws StateLocked naming the holder's
 * pid. The folder must exist. 0600: a user who could open the file could hold
 * a shared lock on it for ever, and every later start of the daemon would be
 * refused as "another daemon runs". A start that meets root's doctor probe
 * (lockHeld: a shared lock held for microseconds) tries again, briefly.
 */
export function lockStateDir(stateDir: string): StateLock {
  const path = join(stateDir, LOCK_FILE);
  const fd = lockFile(path, 0o600, 3);
  if (fd === undefined) throw new StateLocked(path, lockHolder(stateDir));
  let held = true;
  return {
    path,
    release: () => {
      if (!held) return;
      held = false;
      // the file stays (another daemon may have opened it to wait on it); closing lets go of the lock
      closeSync(fd);
    },
  };
}

/** The pid the lock's holder wrote, or undefined (no lock file, or an empty one). */
export function lockHolder(stateDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(stateDir, LOCK_FILE), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a daemon holds the state folder's lock now (doctor, `jobs` telling
 * "not running" from "not answering"): a shared lock tried and let go at
 * once; root only (the file is root's alone: see lockStateDir). undefined:
 * no lock file (no daemon of this version ever ran here), or it cannot be
 * read (another user: doctor then judges by the health file).
 */
export function lockHeld(stateDir: string): { held: boolean; pid: number | undefined } | undefined {
  let fd: number;
  try {
    fd = openSync(join(stateDir, LOCK_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const f = loadFlock();
    if (f(fd, LOCK_SH | LOCK_NB) === 0) return { held: false, pid: undefined };
    const e = errno?.() ?? 0;
    return e === EWOULDBLOCK ? { held: true, pid: lockHolder(stateDir) } : undefined;
  } finally {
    closeSync(fd); // lets go of the shared lock, if it was taken
  }
}
