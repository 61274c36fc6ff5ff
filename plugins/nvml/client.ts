/** Main-thread side of the nvml worker: sample requests with abort, events, restart after a crash. */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../src/core/log.js';
import type { Snapshot, XidEvent } from './snapshot.js';
import type { Reply, Request, WorkerOptions } from './worker.js';

export class NvmlClient {
  private worker: Worker | undefined;
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (s: Snapshot) => void; reject: (e: Error) => void }>();

  constructor(
    private readonly opts: WorkerOptions,
    private readonly log: Logger,
    private readonly onEvent: (e: XidEvent) => void,
  ) {}

  private spawn(): Worker {
    // two folders below dist/ both here and in the CLI's bundle (dist/src/cli/light.cjs), which runs `l9gpu gpus`
    const w = new Worker(new URL('../../plugins/nvml/worker.js', import.meta.url), { workerData: this.opts });
    w.on('message', (m: Reply) => {
      if (m.type === 'event') return this.onEvent(m.event);
      if (m.type !== 'sample') return;
      const p = this.pending.get(m.id);
      if (!p) {
        // its collection already timed out: its points are stale, but what it has to say is said once only
        this.logNotes(m.ok ? m.snapshot.notes : m.notes);
        return;
      }
      this.pending.delete(m.id);
      if (this.pending.size === 0) w.unref();
      if (m.ok) p.resolve(m.snapshot);
      else {
        this.logNotes(m.notes);
        p.reject(new Error(m.error));
      }
    });
    w.on('error', (e) => {
      this.log.error('nvml worker crashed: it will be restarted', { error: e.message });
      for (const p of this.pending.values()) p.reject(new Error(`nvml worker crashed: ${e.message}`));
      this.pending.clear();
      this.worker = undefined;
    });
    w.on('exit', () => {
      if (this.worker === w) this.worker = undefined;
    });
    // referenced only while a request waits: an idle worker must not keep a finished command alive
    w.unref();
    return w;
  }

  logNotes(notes: Snapshot['notes']): void {
    for (const n of notes) this.log[n.level](n.msg);
  }

  sample(signal: AbortSignal): Promise<Snapshot> {
    this.worker ??= this.spawn();
    const id = ++this.seq;
    return new Promise<Snapshot>((resolve, reject) => {
      const onAbort = (): void => {
        this.pending.delete(id);
        if (this.pending.size === 0) this.worker?.unref();
        reject(new Error('NVML did not answer in time (a call may be blocked in the driver)'));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (s) => {
          signal.removeEventListener('abort', onAbort);
          resolve(s);
        },
        reject: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
      this.worker!.ref();
      this.worker!.postMessage({ type: 'sample', id } satisfies Request);
    });
  }

  /** Asks the worker to shut NVML down; gives up after timeoutMs (a call stuck in the driver). */
  async close(timeoutMs = 3000): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.worker = undefined;
    let t: NodeJS.Timeout | undefined;
    const stopped = new Promise<void>((r) => {
      w.on('message', (m: Reply) => m.type === 'stopped' && r());
      w.on('exit', () => r());
    });
    w.postMessage({ type: 'stop' } satisfies Request);
    await Promise.race([stopped, new Promise<void>((r) => (t = setTimeout(r, timeoutMs)))]);
    clearTimeout(t);
    await w.terminate();
  }
}
