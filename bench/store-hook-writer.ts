/**
 * bench/store-years.ts's stand-in for slurmd's prologs: one job start a
 * 20 ms, the prolog's own write (recordStart) with the hook's busy timeout,
 * each timed, until its stdin closes; then the times as JSON on stdout. The
 * store opened without migrating (a store of the old schema stays so).
 */
import Database from 'better-sqlite3';
import { recordStart } from '../src/store/jobs.js';

const [path, busyMs] = [process.argv[2]!, Number(process.argv[3] ?? 4500)];
const db = new Database(path, { timeout: busyMs });
db.pragma('foreign_keys = ON');
const waits: number[] = [];
let failed = 0;
let error: string | undefined;
let i = 0;
let open = true;
process.stdin.on('data', () => {});
process.stdin.on('end', () => {
  open = false;
});
process.stdout.write('ready\n');
const one = (): void => {
  if (!open) {
    db.close();
    process.stdout.write(`${JSON.stringify({ waits, failed, error })}\n`);
    return;
  }
  const t = performance.now();
  try {
    recordStart(
      db,
      { jobId: `h${process.pid}-${i++}`, runKey: 'r0', user: 'alice', uid: 1001 },
      [{ uuid: `GPU-h${i % 8}`, shared: false }],
      'prolog',
    );
  } catch (e) {
    failed++;
    error ??= (e as Error).message;
  }
  waits.push(performance.now() - t);
  setTimeout(one, 20);
};
one();
