/**
 * What one user's question to the jobs socket may cost the daemon, and what
 * the user is told past it. The daemon is root, its unit runs under
 * MemoryMax=256M, and a question is any user's: each is answered on the
 * store worker (store-worker.ts) under a heap of its own and a time bound,
 * so that a question too large fails the worker (started again for the next
 * one), never the daemon and its sampling.
 */

/**
 * The store worker's V8 heap (old generation). A --by fold holds one sum per
 * group (by-store.ts), a list a page of [limits] jobs_rows: both far below it.
 * With the isolate's own ~10 MB and SQLite's caches the worker adds at most
 * ~100 MB to a daemon of ~90 MB: inside MemoryMax=256M.
 */
export const WORKER_HEAP_MB = 64;
/** The young generation's semispaces: V8's default (16 MB on 64-bit) would be a quarter of the heap again. */
export const WORKER_YOUNG_MB = 8;

/**
 * How long one question may take: under the 15 s the CLI waits
 * (src/jobs/client.ts), so that the user reads why, not "did not answer".
 */
export const QUESTION_MS = 12_000;

/** Groups one --by answer holds (100 bytes or so each, and the answer is paged): a --by name over 1,000,000 one-job names is refused. */
export const MAX_GROUPS = 100_000;

const NARROW = 'narrow it with --since, --state, --user, --account or --partition';

/** A question past one of the bounds above: its message is the user's answer. */
export class QuestionTooLarge extends Error {
  override readonly name = 'QuestionTooLarge';
}

export const tooManyGroups = (by: string, max = MAX_GROUPS): QuestionTooLarge =>
  new QuestionTooLarge(
    `jobs --by ${by}: more than ${max.toLocaleString('en-US')} groups, the most one answer of ` +
      `the daemon holds; ${NARROW}, or group by a coarser field`,
  );

export const tooMuchMemory = (heapMb = WORKER_HEAP_MB): QuestionTooLarge =>
  new QuestionTooLarge(`the question needed more than the ${heapMb} MB of memory the daemon gives one question; ${NARROW}`);

export const tooLong = (ms = QUESTION_MS): QuestionTooLarge =>
  new QuestionTooLarge(`the question took longer than the ${ms / 1000} s the daemon gives one question; ${NARROW}`);
