/**
 * OTLP/HTTP sink. Protobuf requests are encoded by otlp-proto.ts (the
 * OpenTelemetry serializer's messages, without its memory), http/json ones by
 * @opentelemetry/otlp-transformer, loaded only for them; delivery is ours: a
 * bounded retry queue, because the stock exporter drops data once a few
 * quick retries fail.
 */
import { redactUrl } from '../core/redact.js';
import { OTLP_SECTION } from './sections.js';
import type zlib from 'node:zlib';
import { ConfigError } from '../core/config/schema.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { Batch } from '../core/metrics/model.js';
import { VERSION } from '../core/resource.js';
import { DeliveryQueue } from './delivery-queue.js';
import { createPoster, type Poster } from './http-post.js';
import { decodeExportResponse, encodeMetricsRequestWith } from './otlp-proto.js';
import { tcpReachable } from '../core/probe.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';
import { requireBuiltin } from '../core/builtin.js';

type Serializer = { serializeRequest(rm: unknown): Uint8Array | undefined };

class OtlpSink implements Sink {
  readonly name = 'otlp';
  readonly stats = new SinkStats();
  private pending: Batch[] = [];
  private pendingPoints = 0;
  /** The request body of the batches (compressed when configured). */
  private encode!: (batches: Batch[]) => Buffer;
  private poster!: Poster;
  private queue!: DeliveryQueue;
  private timer: NodeJS.Timeout | undefined;
  private readonly url: string;
  private readonly json: boolean;
  private readonly gzip: boolean;
  private readonly headers: Record<string, string>;

  constructor(private readonly ctx: SinkContext) {
    const s = readSection(ctx.config, OTLP_SECTION);
    this.url = s.endpoint ?? '';
    if (!this.url) throw new ConfigError('[otlp] endpoint: required when the otlp sink is enabled', { section: 'otlp', key: 'endpoint' });
    this.json = s.protocol === 'http/json';
    this.gzip = s.compression === 'gzip';
    this.headers = {
      ...s.headers,
      'content-type': this.json ? 'application/json' : 'application/x-protobuf',
      'user-agent': `l9gpu/${VERSION}`,
      ...(this.gzip ? { 'content-encoding': 'gzip' } : {}),
    };
  }

  async start(): Promise<void> {
    // zlib at the first gzipped request, not with the sink (a light command that builds sinks never compresses)
    const gzipSync = (b: Buffer): Buffer => (requireBuiltin('node:zlib') as typeof zlib).gzipSync(b);
    // protobuf: our own encoder (otlp-proto.ts); http/json, rarely used, through OpenTelemetry's serializer, loaded only then
    if (this.json) {
      const [t, { toResourceMetrics }] = await Promise.all([import('@opentelemetry/otlp-transformer'), import('./resource-metrics.js')]);
      const s = t.JsonMetricsSerializer as unknown as Serializer;
      this.encode = (batches) => {
        const raw = s.serializeRequest(toResourceMetrics(batches, this.ctx.resource, this.ctx.startTime, VERSION));
        if (!raw) throw new Error('serializer returned nothing');
        const body = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        return this.gzip ? gzipSync(body) : body;
      };
    } else {
      // encoded into one buffer used again, which gzip reads (or a copy is taken of): a request makes only its body
      this.encode = (batches) => encodeMetricsRequestWith(batches, this.ctx.resource, this.ctx.startTime, VERSION, (bytes) => (this.gzip ? gzipSync(bytes) : Buffer.from(bytes)));
    }
    const s = readSection(this.ctx.config, OTLP_SECTION);
    this.poster = createPoster(this.url, s.timeout * 1000);
    this.queue = new DeliveryQueue({
      maxBytes: s.max_queue_bytes,
      send: (p) => this.poster.post(p.body, this.headers),
      rejected: (body) => this.rejectedPoints(body),
      stats: this.stats,
      log: this.ctx.log,
    });
    this.timer = setInterval(() => this.encodePending(), s.export_interval * 1000);
    this.timer.unref();
  }

  write(batch: Batch): void {
    if (batch.points.length === 0) return;
    this.pending.push(batch);
    this.pendingPoints += batch.points.length;
  }

  /** Encodes everything buffered into one request and queues it. */
  private encodePending(): void {
    if (this.pending.length === 0) return;
    const batches = this.pending;
    const points = this.pendingPoints;
    this.pending = [];
    this.pendingPoints = 0;
    try {
      this.queue.push({ body: this.encode(batches), points });
    } catch (e) {
      this.stats.errors++;
      this.stats.dropped += points;
      this.ctx.log.error('could not encode OTLP request', { error: (e as Error).message, points });
    }
  }

  private rejectedPoints(body: Buffer): number {
    if (body.length === 0) return 0;
    try {
      let r: { rejected: number; message?: string };
      if (this.json) {
        const j = JSON.parse(body.toString('utf8')) as { partialSuccess?: { rejectedDataPoints?: number | string; errorMessage?: string } };
        r = { rejected: Number(j.partialSuccess?.rejectedDataPoints ?? 0), message: j.partialSuccess?.errorMessage };
      } else r = decodeExportResponse(body);
      if (r.rejected > 0) this.ctx.log.warn('backend rejected part of an export', { rejected: r.rejected, message: r.message });
      return r.rejected;
    } catch {
      return 0; // a body we cannot read is not a rejection
    }
  }

  async flush(deadline: number): Promise<void> {
    this.encodePending();
    await this.queue.drain(deadline);
  }

  async close(deadline: number): Promise<void> {
    clearInterval(this.timer);
    this.encodePending();
    await this.queue.shutdown(deadline);
    this.poster.close();
  }
}

export const otlpSink: SinkManifest = {
  name: 'otlp',
  description: 'OTLP/HTTP (protobuf or JSON) push with gzip, headers, timeout and a bounded retry queue',
  section: OTLP_SECTION,
  create: (ctx) => new OtlpSink(ctx),
  describe: (c: Config) => {
    const s = readSection(c, OTLP_SECTION);
    return `${s.protocol} to ${redactUrl(s.endpoint ?? '')} every ${s.export_interval}s (${s.compression})`;
  },
  probe: (c: Config) => tcpReachable(readSection(c, OTLP_SECTION).endpoint ?? 'http://localhost:4318'),
};
