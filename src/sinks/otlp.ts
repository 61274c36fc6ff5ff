/**
 * OTLP sink: OTLP/HTTP (protobuf or JSON) or OTLP/gRPC. Protobuf requests are
 * encoded by otlp-proto.ts (the OpenTelemetry serializer's messages, without
 * its memory), the same bytes for HTTP and for gRPC's Export call
 * (otlp-grpc.ts, loaded only for it); http/json ones by
 * @opentelemetry/otlp-transformer, loaded only for them. Delivery is ours: a
 * bounded retry queue, because the stock exporter drops data once a few
 * quick retries fail. TLS (a private CA, a client certificate) and the
 * secrets kept in files come through the core's HTTP client and
 * secret-files.ts, for both transports.
 */
import { namingOf } from '../core/metrics/conventions.js';
import { redactUrl } from '../core/redact.js';
import { OTLP_SECTION } from './sections.js';
import type zlib from 'node:zlib';
import { ConfigError } from '../core/config/schema.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { Batch } from '../core/metrics/model.js';
import { VERSION } from '../core/resource.js';
import { DeliveryQueue } from './delivery-queue.js';
import { createPoster, MAX_RESPONSE_BYTES, type Poster } from './http-post.js';
import { decodeExportResponse, encodeMetricsRequestWith } from './otlp-proto.js';
import { endpointReachable, tcpReachable } from '../core/probe.js';
import { createHttpClient } from '../core/net/http-client.js';
import { SecretHeaders } from '../core/net/secret-files.js';
import { secretSourcesOf, tlsFilesOf } from '../core/config/client-keys.js';
import { hasTls, readTlsMaterial, type TlsFiles } from '../core/net/tls-files.js';
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
  private poster: Poster | undefined;
  private queue!: DeliveryQueue;
  private timer: NodeJS.Timeout | undefined;
  private readonly url: string;
  private readonly json: boolean;
  private readonly grpc: boolean;
  private readonly gzip: boolean;
  /** The request's own headers (no secret: those are the client's credentials). */
  private readonly headers: Record<string, string>;
  private readonly secrets: SecretHeaders;
  private readonly tls: TlsFiles;
  /** The names it sends ([otlp] semantic_conventions). */
  private readonly naming: (b: Batch) => Batch;

  constructor(private readonly ctx: SinkContext) {
    const s = readSection(ctx.config, OTLP_SECTION);
    this.naming = namingOf(s.semantic_conventions);
    this.url = otlpEndpoint(ctx.config);
    if (!this.url) throw new ConfigError('[otlp] endpoint: required when the otlp sink is enabled', { section: 'otlp', key: 'endpoint' });
    this.json = s.protocol === 'http/json';
    this.grpc = s.protocol === 'grpc';
    this.gzip = s.compression === 'gzip';
    this.headers = {
      'content-type': this.json ? 'application/json' : 'application/x-protobuf',
      'user-agent': `l9gpu/${VERSION}`,
      ...(this.gzip && !this.grpc ? { 'content-encoding': 'gzip' } : {}),
    };
    // the files are read (and checked) here: one that cannot be read is a configuration error naming its key
    this.secrets = new SecretHeaders(secretSourcesOf('otlp', '', s, { headers: s.headers }));
    this.tls = tlsFilesOf('otlp', '', s);
    if (this.grpc) {
      // the gRPC poster is loaded at start; its TLS files are checked now, as the HTTP client checks them
      if (hasTls(this.tls) && !s.insecure && this.url.startsWith('https:')) readTlsMaterial(this.tls);
    } else {
      this.poster = createPoster(
        createHttpClient({
          url: this.url,
          what: '[otlp] endpoint',
          timeoutMs: s.timeout * 1000,
          maxResponseBytes: MAX_RESPONSE_BYTES,
          credentials: this.secrets.credentials,
          tls: this.tls,
        }),
        TLS_KEYS,
      );
    }
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
      // encoded into one buffer used again, which gzip reads (or a copy is taken of): a request makes only its body;
      // gRPC compresses its messages itself
      const gzip = this.gzip && !this.grpc;
      this.encode = (batches) =>
        encodeMetricsRequestWith(batches, this.ctx.resource, this.ctx.startTime, VERSION, (bytes) =>
          gzip ? gzipSync(bytes) : Buffer.from(bytes),
        );
    }
    const s = readSection(this.ctx.config, OTLP_SECTION);
    if (this.grpc) {
      const { createGrpcPoster } = await import('./otlp-grpc.js');
      this.poster = createGrpcPoster({
        url: this.url,
        insecure: s.insecure,
        tls: this.tls,
        credentials: this.secrets.credentials,
        timeoutMs: s.timeout * 1000,
        gzip: this.gzip,
        tlsKeys: TLS_KEYS,
      });
    }
    this.queue = new DeliveryQueue({
      maxBytes: s.max_queue_bytes,
      send: (p) => this.poster!.post(p.body, this.headers),
      rejected: (body) => this.rejectedPoints(body),
      stats: this.stats,
      log: this.ctx.log,
    });
    this.timer = setInterval(() => this.encodePending(), s.export_interval * 1000);
    this.timer.unref();
  }

  write(batch: Batch): void {
    if (batch.points.length === 0) return;
    this.pending.push(this.naming(batch));
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
    this.poster?.close();
  }
}

/** The settings that fix each kind of TLS failure. */
const TLS_KEYS = { ca: '[otlp] certificate', cert: '[otlp] client_certificate', endpoint: '[otlp] endpoint' };

/**
 * Where the sink sends: the endpoint as configured; for gRPC its origin alone
 * (the method's path is the service's), and port 4317 when the endpoint was
 * left at the OTLP/HTTP default.
 */
export function otlpEndpoint(c: Config): string {
  const s = readSection(c, OTLP_SECTION);
  if (!s.endpoint || s.protocol !== 'grpc') return s.endpoint ?? '';
  if (c.sourceOf('otlp', 'endpoint').source === 'default') return 'http://localhost:4317';
  return new URL(s.endpoint).origin;
}

export const otlpSink: SinkManifest = {
  name: 'otlp',
  description:
    'OTLP/HTTP (protobuf or JSON) or OTLP/gRPC push with gzip, headers, TLS (private CA, client ' +
    'certificate), timeout and a bounded retry queue',
  section: OTLP_SECTION,
  create: (ctx) => new OtlpSink(ctx),
  describe: (c: Config) => {
    const s = readSection(c, OTLP_SECTION);
    const tls = [s.certificate && 'private CA', s.client_certificate && 'client certificate'].filter(Boolean).join(', ');
    return `${s.protocol} to ${redactUrl(otlpEndpoint(c))} every ${s.export_interval}s (${s.compression}${tls ? `, ${tls}` : ''})`;
  },
  probe: (c: Config) => {
    const s = readSection(c, OTLP_SECTION);
    const url = otlpEndpoint(c) || 'http://localhost:4318';
    if (s.protocol !== 'grpc') return endpointReachable(url, tlsFilesOf('otlp', '', s), TLS_KEYS);
    // gRPC: TLS offering h2 alone, as grpc-js does; insecure: plaintext whatever the scheme
    return s.insecure ? tcpReachable(url) : endpointReachable(url, tlsFilesOf('otlp', '', s), TLS_KEYS, undefined, ['h2']);
  },
};
