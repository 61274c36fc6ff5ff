/**
 * Every page of the store read (PRAGMA quick_check), off the daemon's start:
 * 14 s for 606 MB, and the first tick no longer waits on it (the start checks
 * only the header, the schema and the file's length: src/store/open.ts,
 * cheapCheck). On its own thread and read-only connection: in WAL mode a
 * reader blocks neither the daemon's writes nor the hooks'. The trade-off: a
 * store damaged inside a page is found seconds to minutes after the start,
 * not before it; until then reads of that page fail as they would have.
 */
import { Worker } from 'node:worker_threads';
import { nativeBindingOption } from './native-binding.js';

export interface PageCheck {
  /** 'ok', or what quick_check (or opening the file) said. */
  result: string;
  ms: number;
}

export function checkPages(path: string): Promise<PageCheck> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const w = new Worker(new URL('./page-check-worker.js', import.meta.url), {
      workerData: { path, nativeBinding: nativeBindingOption().nativeBinding },
    });
    // a check is no reason to keep a stopping daemon alive
    w.unref();
    let done = false;
    const end = (result: string) => {
      if (done) return;
      done = true;
      resolve({ result, ms: performance.now() - t0 });
    };
    // quick_check's rows in one line, for the log
    w.once('message', (m: string) => end(m.replace(/\s*\n\s*/g, '; ')));
    w.once('error', (e) => end(`page check failed: ${e.message}`));
    w.once('exit', (code) => end(`page check thread exited (${code}) without a result`));
  });
}
