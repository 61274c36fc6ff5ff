/**
 * Space a prune freed, given back to the filesystem in small steps
 * (auto_vacuum = incremental, src/store/open.ts): each step is one short write
 * transaction, so that a hook waiting on the lock waits one step at most. In
 * WAL mode the file shrinks when the WAL is next checkpointed.
 */
import type { Db } from './open.js';

/** Whether the store gives space back (auto_vacuum = incremental: 2). */
export const givesSpaceBack = (db: Db): boolean => db.pragma('auto_vacuum', { simple: true }) === 2;

export const freePages = (db: Db): number => db.pragma('freelist_count', { simple: true }) as number;

/** Up to `pages` free pages given back; returns the free pages left (0 also where the store gives none back). */
export function giveBackSpace(db: Db, pages: number): number {
  if (!givesSpaceBack(db)) return 0;
  db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  return freePages(db);
}

/** The WAL copied back into the file without waiting on readers: where the file shrinks. */
export function checkpointPassive(db: Db): void {
  db.pragma('wal_checkpoint(PASSIVE)');
}
