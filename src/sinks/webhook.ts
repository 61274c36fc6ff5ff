/**
 * POSTs each batch as {"resource": {...}, "points": [<stdout-format objects>]}
 * with an optional bearer token, through the same bounded retry queue as OTLP.
 */
import { redactUrl } from '../core/redact.js';
import { WEBHOOK_SECTION } from './sections.js';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../core/config/schema.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { Batch } from '../core/metrics/model.js';
import { VERSION } from '../core/resource.js';
import { DeliveryQueue } from './delivery-queue.js';
import { createPoster, type Poster } from './http-post.js';
import { pointJson } from './jsonl.js';
import { tcpReachable } from '../core/probe.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';

class WebhookSink implements Sink {
  readonly name = 'webhook';
  readonly stats = new SinkStats();
  private readonly poster: Poster;
  private readonly queue: DeliveryQueue;
  private readonly headers: Record<string, string>;
  private readonly resourceJson: string;
  private readonly maxPoints: number;

  constructor(private readonly ctx: SinkContext) {
    const s = readSection(ctx.config, WEBHOOK_SECTION);
    const url = s.url;
    if (!url) throw new ConfigError('[webhook] url: required when the webhook sink is enabled', { section: 'webhook', key: 'url' });
    let token = s.token;
    const tokenFile = s.token_file;
    if (tokenFile) {
      try {
        token = readFileSync(tokenFile, 'utf8').trim();
      } catch (e) {
        throw new ConfigError(`[webhook] token_file: cannot read ${tokenFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { section: 'webhook', key: 'token_file' });
      }
    }
    this.headers = {
      ...s.headers,
      'content-type': 'application/json',
      'user-agent': `l9gpu/${VERSION}`,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    };
    this.resourceJson = JSON.stringify(ctx.resource);
    this.maxPoints = s.max_batch_points;
    this.poster = createPoster(url, s.timeout * 1000);
    this.queue = new DeliveryQueue({
      maxBytes: s.max_queue_bytes,
      send: (p) => this.poster.post(p.body, this.headers),
      stats: this.stats,
      log: ctx.log,
    });
  }

  write(batch: Batch): void {
    const lines = pointJson(batch, undefined);
    for (let i = 0; i < lines.length; i += this.maxPoints) {
      const part = lines.slice(i, i + this.maxPoints);
      this.queue.push({ body: Buffer.from(`{"resource":${this.resourceJson},"points":[${part.join(',')}]}`), points: part.length });
    }
  }

  flush(deadline: number): Promise<void> {
    return this.queue.drain(deadline);
  }

  async close(deadline: number): Promise<void> {
    await this.queue.shutdown(deadline);
    this.poster.close();
  }
}

export const webhookSink: SinkManifest = {
  name: 'webhook',
  description: 'POST JSON batches with a bearer token, timeout and retry',
  section: WEBHOOK_SECTION,
  create: (ctx) => new WebhookSink(ctx),
  describe: (c: Config) => {
    const s = readSection(c, WEBHOOK_SECTION);
    return `POST to ${redactUrl(s.url ?? '(no [webhook] url set)')}${s.token || s.token_file ? ' with a bearer token' : ''}`;
  },
  probe: async (c: Config) => {
    const { url } = readSection(c, WEBHOOK_SECTION);
    return url ? tcpReachable(url) : { ok: false, detail: '[webhook] url is not set' };
  },
};
