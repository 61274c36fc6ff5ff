/** The main thread's side of src/jobs/store-worker.ts: questions out, answers back, the worker started when first needed. */
import { Worker } from 'node:worker_threads';
import type { Viewer } from './access.js';
import type { JobsAnswer, JobsRequest } from './api.js';
import type { Prices } from '../figures/prices.js';

export interface StoreQuestion {
  id: number;
  node: string;
  prices: Prices | null;
  who: Viewer;
  req: JobsRequest;
  maxRows: number;
}

/** A worker idle this long ends: its isolate and SQLite's caches are memory the daemon gives back between users' questions. */
const IDLE_MS = 60_000;

export class StoreAnswers {
  private worker: Worker | undefined;
  private idle: NodeJS.Timeout | undefined;
  private readonly pending = new Map<number, (a: JobsAnswer) => void>();
  private seq = 0;
  private closing = false;

  constructor(private readonly stateDir: string) {}

  ask(q: Omit<StoreQuestion, 'id'>): Promise<JobsAnswer> {
    if (this.closing) return Promise.resolve({ ok: false, error: 'the daemon is reloading: ask again', code: 1 });
    const w = this.started();
    clearTimeout(this.idle);
    const id = ++this.seq;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      w.postMessage({ ...q, id });
    });
  }

  /** Questions asked already are answered first; the worker ends after them. */
  close(): void {
    this.closing = true;
    clearTimeout(this.idle);
    if (this.pending.size === 0 && this.worker) this.end(this.worker);
  }

  /** Detached first: a question asked while it ends goes to a new worker, not to this one's grave. */
  private end(w: Worker): void {
    if (this.worker === w) this.worker = undefined;
    void w.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./store-worker.js', import.meta.url), { workerData: { stateDir: this.stateDir } });
    // never what keeps the daemon running
    w.unref();
    w.on('message', (m: { id: number; answer: JobsAnswer }) => {
      this.pending.get(m.id)?.(m.answer);
      this.pending.delete(m.id);
      if (this.pending.size > 0) return;
      if (this.closing) this.end(w);
      else {
        this.idle = setTimeout(() => this.end(w), IDLE_MS);
        this.idle.unref();
      }
    });
    const gone = (why: string) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      for (const resolve of this.pending.values()) resolve({ ok: false, error: `the daemon could not answer: ${why}`, code: 1 });
      this.pending.clear();
    };
    w.on('error', (e) => gone(e.message));
    w.on('exit', (code) => gone(`its store reader stopped (exit ${code})`));
    this.worker = w;
    return w;
  }
}
