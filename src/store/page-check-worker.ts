/** src/store/page-check.ts's thread: every page of the store read (PRAGMA quick_check) on its own read-only connection. */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { path, nativeBinding } = workerData as { path: string; nativeBinding?: string };
let result: string;
try {
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: 5000, ...(nativeBinding ? { nativeBinding } : {}) });
  try {
    result = String(db.pragma('quick_check', { simple: true }));
  } finally {
    db.close();
  }
} catch (e) {
  result = (e as Error).message;
}
parentPort!.postMessage(result);
