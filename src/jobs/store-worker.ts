/**
 * The jobs socket's store work, off the daemon's main thread: a user's list of
 * 100,000 jobs (or --by over all of them) takes seconds of SQLite and
 * rendering, and on the main thread that is seconds without sampling or
 * /metrics. Here it runs on its own read-only connection to the store (WAL:
 * it reads while the daemon writes), one question at a time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openStoreReadOnly, type Db } from '../store/open.js';
import { answerJobs, type JobsAnswer } from './api.js';
import type { StoreQuestion } from './store-answers.js';

let db: Db | undefined;
const port = parentPort!;
port.on('message', (q: StoreQuestion) => {
  let answer: JobsAnswer;
  try {
    db ??= openStoreReadOnly((workerData as { stateDir: string }).stateDir);
    answer = answerJobs(db, q.node, q.prices, q.who, q.req, q.maxRows);
  } catch (e) {
    answer = { ok: false, error: `the daemon could not answer: ${(e as Error).message}`, code: 1 };
  }
  port.postMessage({ id: q.id, answer });
});
