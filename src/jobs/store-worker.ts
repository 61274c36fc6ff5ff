/**
 * The jobs socket's store work, off the daemon's main thread: a user's list of
 * 100,000 jobs (or --by over all of them) takes seconds of SQLite and
 * rendering, and on the main thread that is seconds without sampling or
 * /metrics. Here it runs on its own read-only connection to the store (WAL:
 * it reads while the daemon writes), one question at a time, under the heap
 * and time bounds of question-bounds.ts (store-answers.ts sets them).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openStoreReadOnly, type Db } from '../store/open.js';
import { answerJobs, type JobsAnswer } from './api.js';
import type { JobGroupRow } from './by.js';
import { monoNow } from '../core/clock.js';
import { QuestionTooLarge } from './question-bounds.js';
import type { StoreQuestion, StoreReply } from './store-answers.js';

let db: Db | undefined;
/** The last --by list's groups, for its next pages: a minute at most, so a page is never much staler than the first. */
let memo: { key: string; at: number; groups: JobGroupRow[] } | undefined;
const MEMO_MS = 60_000;
const port = parentPort!;
port.on('message', (q: StoreQuestion) => {
  let answer: JobsAnswer;
  let bound = false;
  try {
    db ??= openStoreReadOnly((workerData as { stateDir: string }).stateDir);
    const store = db;
    const key = JSON.stringify([q.node, q.prices, q.who, { ...q.req, offset: 0 }]);
    answer = answerJobs(store, q.node, q.prices, q.who, q.req, q.maxRows, (fold) => {
      // a first page folds afresh: only a list's later pages reuse its groups
      if (q.req.op === 'list' && (q.req.offset ?? 0) > 0 && memo?.key === key && monoNow() - memo.at < MEMO_MS) return memo.groups;
      memo = undefined;
      memo = { key, at: monoNow(), groups: fold() };
      return memo.groups;
    });
  } catch (e) {
    bound = e instanceof QuestionTooLarge;
    answer = { ok: false, error: bound ? (e as Error).message : `the daemon could not answer: ${(e as Error).message}`, code: 1 };
  }
  port.postMessage({ id: q.id, answer, ...(bound ? { bound } : {}) } satisfies StoreReply);
});
