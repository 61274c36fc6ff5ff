/**
 * Bounded, ordered delivery with retry. While an endpoint is down, encoded
 * payloads wait here; past max_queue_bytes the oldest are dropped and counted,
 * so memory stays bounded however long the outage lasts.
 */
import type { Logger } from '../core/log.js';
import type { SendResult } from './http-post.js';
import type { SinkStats } from '../core/sink.js';
import { monoNow } from '../core/clock.js';

export interface Payload {
  readonly body: Buffer;
  readonly points: number;
}

export interface DeliveryOptions {
  readonly maxBytes: number;
  readonly send: (p: Payload) => Promise<SendResult>;
  /** Inspects a successful response (OTLP partial success); returns points the backend rejected. */
  readonly rejected?: (body: Buffer) => number;
  readonly stats: SinkStats;
  readonly log: Logger;
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** How often a request that failed on a configuration problem is tried again (default 10 s): a CA file mended on disk is taken then. */
  readonly configRetryMs?: number;
}

export class DeliveryQueue {
  private readonly items: Payload[] = [];
  private sending = false;
  private timer: NodeJS.Timeout | undefined;
  private backoff: number;
  private downSince = 0;
  /** The configuration problem said last (a TLS failure), until a delivery goes through. */
  configProblem: string | undefined;
  private closed = false;
  private readonly minBackoff: number;
  private readonly maxBackoff: number;
  private readonly configRetry: number;

  constructor(private readonly o: DeliveryOptions) {
    this.minBackoff = o.minBackoffMs ?? 1000;
    this.maxBackoff = o.maxBackoffMs ?? 60_000;
    this.configRetry = o.configRetryMs ?? 10_000;
    this.backoff = this.minBackoff;
  }

  get length(): number {
    return this.items.length;
  }

  push(p: Payload): void {
    if (this.closed) return;
    this.items.push(p);
    this.o.stats.queueBytes += p.body.length;
    // keep at least the newest payload even if it alone exceeds the bound
    while (this.o.stats.queueBytes > this.o.maxBytes && this.items.length > 1) {
      const old = this.items.shift()!;
      this.o.stats.queueBytes -= old.body.length;
      this.o.stats.dropped += old.points;
      this.o.log.once('queue-full', 'warn', 'retry queue full: dropping the oldest data (counted in l9gpu.sink.dropped)', {
        max_queue_bytes: this.o.maxBytes,
      });
    }
    if (!this.timer) void this.pump();
  }

  /** Sends until the queue is empty or the deadline passes; what is left is counted as dropped. */
  async drain(deadline: number): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.items.length > 0 && Date.now() < deadline) {
      if (this.sending) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      const ok = await this.sendHead();
      if (!ok) await new Promise((r) => setTimeout(r, Math.max(0, Math.min(this.backoff, deadline - Date.now()))));
    }
  }

  /** drain() then close(), saying what could not be delivered: a sink's last words. */
  async shutdown(deadline: number): Promise<void> {
    await this.drain(deadline);
    if (this.items.length > 0)
      this.o.log.warn('exiting with undelivered data (counted as dropped)', {
        requests: this.items.length,
        points: this.items.reduce((n, p) => n + p.points, 0),
      });
    this.close();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const p of this.items.splice(0)) {
      this.o.stats.dropped += p.points;
      this.o.stats.queueBytes -= p.body.length;
    }
  }

  private async pump(): Promise<void> {
    while (!this.sending && !this.timer && !this.closed && this.items.length > 0) {
      if (!(await this.sendHead())) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          void this.pump();
        }, this.backoff);
        this.timer.unref();
        this.backoff = Math.min(this.maxBackoff, this.backoff * 2);
        return;
      }
    }
  }

  /** Returns false when the head should be retried later. */
  private async sendHead(): Promise<boolean> {
    const head = this.items[0];
    if (!head) return true;
    this.sending = true;
    let r: SendResult;
    try {
      r = await this.o.send(head);
    } catch (e) {
      r = { ok: false, retryable: true, reason: (e as Error).message };
    } finally {
      this.sending = false;
    }
    if (this.items[0] !== head) return true; // closed meanwhile
    if (r.ok) {
      this.items.shift();
      this.o.stats.queueBytes -= head.body.length;
      const rejected = Math.min(head.points, this.o.rejected?.(r.body) ?? 0);
      this.o.stats.exported += head.points - rejected;
      this.o.stats.dropped += rejected;
      if (this.downSince) {
        this.o.log.info(
          this.configProblem ? 'the configuration problem is mended: delivering queued data' : 'endpoint is back: delivering queued data',
          { down_seconds: Math.round((monoNow() - this.downSince) / 1000), queued: this.items.length },
        );
        this.downSince = 0;
        this.configProblem = undefined;
      }
      this.backoff = this.minBackoff;
      return true;
    }
    this.o.stats.errors++;
    if (!r.retryable) {
      this.items.shift();
      this.o.stats.queueBytes -= head.body.length;
      this.o.stats.dropped += head.points;
      this.o.log.error('endpoint rejected data (not retried)', { reason: r.reason, points: head.points });
      return true;
    }
    if (r.config) {
      // not an outage: the same request fails the same way until the operator mends the setting (a CA file
      // rotated on disk is taken at the next try), so it is said once as what it is and tried again slowly
      if (this.configProblem !== r.reason) {
        this.configProblem = r.reason;
        this.o.log.error(
          `cannot deliver: a configuration problem, not an outage: fix ${r.config} (the data waits in ` +
            `the queue, tried again every ${Math.round(this.configRetry / 1000)} s, said again only if ` +
            `the problem changes)`,
          { reason: r.reason },
        );
      }
      if (!this.downSince) this.downSince = monoNow();
      this.backoff = this.configRetry;
      return false;
    }
    if (!this.downSince) {
      this.downSince = monoNow();
      this.o.log.warn('delivery failed: queueing and retrying with backoff', { reason: r.reason });
    }
    if (r.retryAfterMs) this.backoff = Math.min(this.maxBackoff, Math.max(this.backoff, r.retryAfterMs));
    return false;
  }
}
