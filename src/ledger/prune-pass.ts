/**
 * A prune as many short transactions on the daemon's event loop, paused
 * between: the ticks' writes run in the pauses, and a hook waiting on the
 * store's lock (its busy timeout) gets it after one batch, not after the
 * whole prune (a one-transaction prune of 253,000 jobs made a prolog wait
 * 2.7 s). Then the space it freed given back, in steps as short.
 */
import { checkpointPassive, freePages, giveBackSpace, givesSpaceBack } from '../store/vacuum.js';
import type { Db } from '../store/open.js';

export interface PruneStep {
  name: string;
  /** One batch in its own transaction: how many rows it took (fewer than `limit`: nothing left). */
  batch: () => number;
  limit: number;
}

export interface PassOptions {
  /** The least pause between batches; it is at least twice the last batch's time too (the store's lock held a third of the time at most).
   * */
  pauseMs?: number;
  /** Free pages given back per step. */
  vacuumPages?: number;
  /** Batches refused by a lock another process holds (the daemon's busy timeout is short) are tried again this many times. */
  busyRetries?: number;
  /** Told each batch's step name and time (the benchmark's figures). */
  onBatch?: (name: string, ms: number) => void;
}

export interface PassReport {
  rows: Record<string, number>;
  batches: number;
  longestBatchMs: number;
  /** Free pages given back to the filesystem. */
  pagesGivenBack: number;
  ms: number;
  /** Why the pass stopped before its end (the store closed by a reload or a stop). */
  stopped?: string;
}

/** 50 ms: more than a hook's busy handler sleeps between its first tries (1 to 25 ms), so a waiting hook takes its turn. */
export const PAUSE_MS = 50;
/** 256 KB of 4 KB pages a step: 256 pages held the lock up to 250 ms on a loaded machine (bench/store-years.ts). */
export const VACUUM_PAGES = 64;

// not unref'd: a stopping daemon closes the store, and the pass then ends at its next step, within one pause
const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const isBusy = (e: unknown) => /^SQLITE_BUSY/.test((e as { code?: string }).code ?? '');

export async function runPrunePass(db: Db, steps: readonly PruneStep[], o: PassOptions = {}): Promise<PassReport> {
  const pauseMs = o.pauseMs ?? PAUSE_MS;
  const retries = o.busyRetries ?? 20;
  const t0 = performance.now();
  const report: PassReport = { rows: {}, batches: 0, longestBatchMs: 0, pagesGivenBack: 0, ms: 0 };
  let busy = 0;
  /** One short write, timed, retried while another process holds the lock; undefined once the store is closed. */
  const step = async <T>(name: string, fn: () => T): Promise<T | undefined> => {
    for (;;) {
      if (!db.open) {
        report.stopped = 'the store was closed';
        return undefined;
      }
      const t = performance.now();
      try {
        const r = fn();
        const ms = performance.now() - t;
        report.batches++;
        report.longestBatchMs = Math.max(report.longestBatchMs, ms);
        o.onBatch?.(name, ms);
        await pause(Math.max(pauseMs, 2 * ms));
        return r;
      } catch (e) {
        if (!isBusy(e) || ++busy > retries) throw e;
        await pause(4 * pauseMs);
      }
    }
  };
  // not in the tick that started it: that tick's own work goes first
  await pause(0);
  for (const s of steps) {
    report.rows[s.name] = 0;
    for (;;) {
      const n = await step(s.name, s.batch);
      if (n === undefined) return done();
      report.rows[s.name]! += n;
      if (n < s.limit) break;
    }
  }
  if (db.open && givesSpaceBack(db)) {
    let left = freePages(db);
    const before = left;
    while (left > 0) {
      const next = await step('vacuum', () => giveBackSpace(db, o.vacuumPages ?? VACUUM_PAGES));
      if (next === undefined) return done();
      // pages freed meanwhile by the ticks' writes are no reason to go on forever
      if (next >= left) break;
      left = next;
    }
    report.pagesGivenBack = Math.max(0, before - left);
    // where the file shrinks; only then (a checkpoint for nothing changes when a full disk's writes fit again)
    if (db.open && report.pagesGivenBack > 0) checkpointPassive(db);
  }
  return done();

  function done(): PassReport {
    report.ms = performance.now() - t0;
    return report;
  }
}
