/**
 * POSTs each batch as {"resource": {...}, "points": [<stdout-format objects>]}
 * with an optional bearer token, through the same bounded retry queue as OTLP.
 */
import { redactUrl } from '../core/redact.js';
import { WEBHOOK_SECTION } from './sections.js';
import { ConfigError } from '../core/config/schema.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { Batch } from '../core/metrics/model.js';
import { VERSION } from '../core/resource.js';
import { DeliveryQueue } from './delivery-queue.js';
import { createPoster, MAX_RESPONSE_BYTES, type Poster } from './http-post.js';
import { pointJson } from './jsonl.js';
import { endpointReachable } from '../core/probe.js';
import { createHttpClient } from '../core/net/http-client.js';
import { SecretHeaders } from '../core/net/secret-files.js';
import { secretSourcesOf, tlsFilesOf } from '../core/config/client-keys.js';
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
    // the token and headers files are read (and checked) here, and again when they change
    const secrets = new SecretHeaders(secretSourcesOf('webhook', '', s, { headers: s.headers, token: s.token }));
    this.headers = { 'content-type': 'application/json', 'user-agent': `l9gpu/${VERSION}` };
    this.resourceJson = JSON.stringify(ctx.resource);
    this.maxPoints = s.max_batch_points;
    const client = createHttpClient({
      url,
      what: '[webhook] url',
      timeoutMs: s.timeout * 1000,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      credentials: secrets.credentials,
      tls: tlsFilesOf('webhook', '', s),
    });
    this.poster = createPoster(client, TLS_KEYS);
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

const TLS_KEYS = { ca: '[webhook] certificate', cert: '[webhook] client_certificate', endpoint: '[webhook] url' };

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
    const s = readSection(c, WEBHOOK_SECTION);
    return s.url ? endpointReachable(s.url, tlsFilesOf('webhook', '', s), TLS_KEYS) : { ok: false, detail: '[webhook] url is not set' };
  },
};
