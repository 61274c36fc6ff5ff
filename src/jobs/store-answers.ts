/**
 * The main thread's side of src/jobs/store-worker.ts: questions out, answers
 * back, the worker started when first needed. One question is answered at a
 * time, in the order asked, each under the bounds of question-bounds.ts: the
 * worker has a heap of its own (a question past it ends the worker, not the
 * daemon: V8 stops an isolate at its resourceLimits) and the question a time
 * bound (past it the worker is ended). Either way that question is answered
 * why, the questions queued behind it are asked again of a new worker, and
 * the next question finds one.
 */
import { Worker } from 'node:worker_threads';
import type { Viewer } from './access.js';
import type { JobsAnswer, JobsRequest } from './api.js';
import type { Prices } from '../figures/prices.js';
import { QUESTION_MS, tooLong, tooMuchMemory, WORKER_HEAP_MB, WORKER_YOUNG_MB } from './question-bounds.js';

export interface StoreQuestion {
  id: number;
  node: string;
  prices: Prices | null;
  who: Viewer;
  req: JobsRequest;
  maxRows: number;
}

/** The worker's answer; bound: the question was past one of its bounds (the answer says which). */
export interface StoreReply {
  id: number;
  answer: JobsAnswer;
  bound?: boolean;
}

export interface StoreAnswersOptions {
  /** Told of each question past a bound (the server logs it); `why` is the user's answer. */
  onBound?: (q: StoreQuestion, why: string) => void;
  /** Test seams: the bounds of question-bounds.ts. */
  heapMb?: number;
  questionMs?: number;
}

/** A worker idle this long ends: its isolate and SQLite's caches are memory the daemon gives back between users' questions. */
const IDLE_MS = 60_000;

interface Pending {
  q: StoreQuestion;
  resolve: (a: JobsAnswer) => void;
}

export class StoreAnswers {
  private worker: Worker | undefined;
  private idle: NodeJS.Timeout | undefined;
  /** In the order asked, which is the order the worker answers: the first is the one it works on. */
  private readonly pending = new Map<number, Pending>();
  /** The time bound of the question the worker works on. */
  private bound: NodeJS.Timeout | undefined;
  private seq = 0;
  private closing = false;
  private readonly heapMb: number;
  private readonly questionMs: number;

  constructor(
    private readonly stateDir: string,
    private readonly o: StoreAnswersOptions = {},
  ) {
    this.heapMb = o.heapMb ?? WORKER_HEAP_MB;
    this.questionMs = o.questionMs ?? QUESTION_MS;
  }

  ask(q: Omit<StoreQuestion, 'id'>): Promise<JobsAnswer> {
    if (this.closing) return Promise.resolve({ ok: false, error: 'the daemon is reloading: ask again', code: 1 });
    const id = ++this.seq;
    return new Promise((resolve) => this.post({ q: { ...q, id }, resolve }));
  }

  /** Questions asked already are answered first; the worker ends after them. */
  close(): void {
    this.closing = true;
    clearTimeout(this.idle);
    if (this.pending.size === 0 && this.worker) this.end(this.worker);
  }

  private post(p: Pending): void {
    const w = this.started();
    clearTimeout(this.idle);
    this.pending.set(p.q.id, p);
    if (this.pending.size === 1) this.timeNext(w);
    w.postMessage(p.q);
  }

  /** The time bound of the first question waiting, from now: the worker begins it now. */
  private timeNext(w: Worker): void {
    clearTimeout(this.bound);
    if (this.pending.size === 0) return;
    this.bound = setTimeout(() => this.lost(w, tooLong(this.questionMs).message), this.questionMs);
    this.bound.unref();
  }

  /** Detached first: a question asked while it ends goes to a new worker, not to this one's grave. */
  private end(w: Worker): void {
    if (this.worker === w) this.worker = undefined;
    void w.terminate();
  }

  /**
   * The worker is gone (ended past a bound, or died): the question it worked on
   * is answered `why`, those behind it are asked again of a new worker.
   */
  private lost(w: Worker, why: string, bound = true): void {
    if (this.worker !== w) return;
    this.end(w);
    clearTimeout(this.bound);
    const [first, ...rest] = [...this.pending.values()];
    this.pending.clear();
    if (!first) return;
    if (bound) this.o.onBound?.(first.q, why);
    first.resolve({ ok: false, error: bound ? why : `the daemon could not answer: ${why}`, code: 1 });
    for (const p of rest) this.post(p);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./store-worker.js', import.meta.url), {
      workerData: { stateDir: this.stateDir },
      resourceLimits: { maxOldGenerationSizeMb: this.heapMb, maxYoungGenerationSizeMb: WORKER_YOUNG_MB },
    });
    // never what keeps the daemon running
    w.unref();
    w.on('message', (m: StoreReply) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (p && m.bound) this.o.onBound?.(p.q, m.answer.ok ? '' : m.answer.error);
      p?.resolve(m.answer);
      this.timeNext(w);
      if (this.pending.size > 0) return;
      if (this.closing) this.end(w);
      else {
        this.idle = setTimeout(() => this.end(w), IDLE_MS);
        this.idle.unref();
      }
    });
    w.on('error', (e: Error & { code?: string }) =>
      e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? this.lost(w, tooMuchMemory(this.heapMb).message) : this.lost(w, e.message, false),
    );
    w.on('exit', (code) => this.lost(w, `its store reader stopped (exit ${code})`, false));
    this.worker = w;
    return w;
  }
}
