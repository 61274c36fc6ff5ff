/**
 * Locks shared by test processes on this machine (node --test runs files in
 * separate processes, and lanes run side by side): an exclusive file holding
 * the owner's pid. A lock whose owner died (a killed run) is taken over, so a
 * crashed run never blocks the next one.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait.js';

const DIR = '/tmp/l9gpu-test-locks';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the named lock if it is free (or its owner is dead); false when a live process holds it. */
export function tryLock(name: string): boolean {
  mkdirSync(DIR, { recursive: true });
  const f = join(DIR, name);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(f, String(process.pid), { flag: 'wx' });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let owner = NaN;
    try {
      owner = Number(readFileSync(f, 'utf8'));
    } catch {
      continue; // released between the two calls: try again
    }
    // an owner that has not written its pid yet reads as 0: held
    if (owner === process.pid || owner === 0 || Number.isNaN(owner) || alive(owner)) return false;
    rmSync(f, { force: true });
  }
  return false;
}

/** Waits until the named lock is ours. */
export async function lock(name: string, timeoutMs: number): Promise<void> {
  await waitFor(`the test lock ${name} (held by another test process)`, () => tryLock(name), timeoutMs, 200);
}

/** Gives the lock back (only if this process holds it). */
export function unlock(name: string): void {
  const f = join(DIR, name);
  try {
    if (Number(readFileSync(f, 'utf8')) === process.pid) rmSync(f);
  } catch {
    /* not held */
  }
}
