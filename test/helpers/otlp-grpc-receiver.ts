/**
 * An OTLP/gRPC receiver for tests: MetricsService/Export served with
 * @grpc/grpc-js on 127.0.0.1, plaintext or TLS (optionally requiring a client
 * certificate signed by a given CA). Each request is decoded with the
 * protobufjs root of the official opentelemetry-proto definitions that
 * @opentelemetry/otlp-transformer 0.215 ships (otlp-decode.ts), and kept with
 * the call's metadata and the grpc-encoding it came with. The answers are
 * scripted: OK (with a partial success if asked), or a status code, with a
 * google.rpc.RetryInfo in grpc-status-details-bin if asked.
 */
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import { decodeOtlp, type OtlpRequest } from './otlp-decode.js';
import { freePort } from './net.js';

const require = createRequire(import.meta.url);
type Message = { encode(m: object): { finish(): Uint8Array } };
const root = require('otlp-proto-decoder/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { metrics: { v1: { ExportMetricsServiceResponse: Message } } } } };
};
const Response = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse;

/** The service's full name as opentelemetry-proto declares it (opentelemetry/proto/collector/metrics/v1/metrics_service.proto). */
export const EXPORT_PATH = '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export';

export interface ReceivedCall {
  /** When the call came (Date.now()). */
  readonly at: number;
  /** The request's metadata as the server saw it, every value as a string (a -bin one base64). */
  readonly metadata: Record<string, string[]>;
  /** The grpc-encoding header the request came with ('identity' when it had none). */
  readonly encoding: string;
  /** The request, decoded (undefined when it did not decode: the call was answered INVALID_ARGUMENT). */
  readonly request: OtlpRequest | undefined;
  /** What the call was answered. */
  readonly answer: Answer;
}

/** An answer, given at once or `delayMs` after the call came. */
export type Answer = { readonly delayMs?: number } & (
  | { readonly ok: true; readonly rejected?: number; readonly message?: string }
  | {
      readonly ok?: false;
      readonly code: grpc.status;
      readonly details?: string;
      readonly retryDelayMs?: number;
      readonly statusDetails?: Buffer;
    }
);

export interface ReceiverTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Client certificates are required, and checked against this CA. */
  readonly clientCa?: Buffer;
}

export class OtlpGrpcReceiver {
  /** Every call, in order, whatever it was answered. */
  readonly calls: ReceivedCall[] = [];
  /** The answers of the next calls, in order; once used up, OK. */
  script: Answer[] = [];
  port = 0;
  private server: grpc.Server | undefined;
  private tls: ReceiverTls | undefined;

  /** The calls answered OK: what was delivered. */
  get delivered(): ReceivedCall[] {
    return this.calls.filter((c) => c.answer.ok === true);
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  async start(opts: { tls?: ReceiverTls; port?: number } = {}): Promise<this> {
    this.tls = opts.tls;
    const server = new grpc.Server();
    const raw = (b: Buffer): Buffer => b;
    const service: grpc.ServiceDefinition = {
      Export: {
        path: EXPORT_PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: raw,
        requestDeserialize: raw,
        responseSerialize: raw,
        responseDeserialize: raw,
      },
    };
    server.addService(service, {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        let request: OtlpRequest | undefined;
        try {
          request = decodeOtlp(call.request);
        } catch {
          request = undefined;
        }
        const answer: Answer = request
          ? (this.script.shift() ?? { ok: true })
          : { code: grpc.status.INVALID_ARGUMENT, details: 'not an ExportMetricsServiceRequest' };
        const metadata: Record<string, string[]> = {};
        for (const [k, v] of Object.entries(call.metadata.toJSON()))
          metadata[k] = v.map((x) => (Buffer.isBuffer(x) ? x.toString('base64') : String(x)));
        this.calls.push({ at: Date.now(), metadata, encoding: incomingEncoding(call), request, answer });
        const reply = (): void => {
          if (answer.ok === true) {
            const partial =
              answer.rejected || answer.message
                ? { partialSuccess: { rejectedDataPoints: answer.rejected ?? 0, errorMessage: answer.message ?? '' } }
                : {};
            return cb(null, Buffer.from(Response.encode(partial).finish()));
          }
          const trailers = new grpc.Metadata();
          const details =
            answer.statusDetails ??
            (answer.retryDelayMs !== undefined ? statusWithRetryInfo(answer.code, answer.details ?? '', answer.retryDelayMs) : undefined);
          if (details) trailers.set('grpc-status-details-bin', details);
          cb({ code: answer.code, details: answer.details ?? grpc.status[answer.code], metadata: trailers });
        };
        if (answer.delayMs) setTimeout(reply, answer.delayMs).unref();
        else reply();
      },
    });
    const creds = opts.tls
      ? grpc.ServerCredentials.createSsl(
          opts.tls.clientCa ?? null,
          [{ cert_chain: opts.tls.cert, private_key: opts.tls.key }],
          !!opts.tls.clientCa,
        )
      : grpc.ServerCredentials.createInsecure();
    const port = opts.port ?? (await freePort());
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, creds, (e, p) => (e ? reject(e) : resolve(p))),
    );
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    // no waiting for a client's connection to go: a daemon under test may keep its channel open
    s.forceShutdown();
  }
}

/**
 * The grpc-encoding header of a call. grpc-js takes it out of the metadata it
 * hands the application (with grpc-accept-encoding and grpc-timeout) and
 * keeps it on the call it wraps (BaseServerInterceptingCall.incomingEncoding
 * in 1.14, 'identity' when the header was absent): read there, and said when
 * it is not there, so that a grpc-js keeping it elsewhere fails the test
 * rather than reading as uncompressed.
 */
function incomingEncoding(call: grpc.ServerUnaryCall<Buffer, Buffer>): string {
  const e = (call as unknown as { call?: { incomingEncoding?: unknown } }).call?.incomingEncoding;
  return typeof e === 'string' ? e : "(unknown: this grpc-js keeps the call's grpc-encoding elsewhere)";
}

/**
 * A google.rpc.Status { int32 code = 1; string message = 2; repeated
 * google.protobuf.Any details = 3 } holding one Any { type_url = 1; bytes
 * value = 2 } of google.rpc.RetryInfo { google.protobuf.Duration retry_delay
 * = 1 }, Duration { int64 seconds = 1; int32 nanos = 2 }: written here by
 * hand, apart from the product's reader.
 */
export function statusWithRetryInfo(code: number, message: string, delayMs: number): Buffer {
  const seconds = Math.floor(delayMs / 1000);
  const nanos = Math.round((delayMs - seconds * 1000) * 1e6);
  const duration = Buffer.concat([seconds ? num(1, seconds) : Buffer.alloc(0), nanos ? num(2, nanos) : Buffer.alloc(0)]);
  const retryInfo = len(1, duration);
  const any = Buffer.concat([len(1, Buffer.from('type.googleapis.com/google.rpc.RetryInfo')), len(2, retryInfo)]);
  return Buffer.concat([num(1, code), len(2, Buffer.from(message)), len(3, any)]);
}

function varint(v: number): Buffer {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}
/** A varint field (wire type 0) and a length-delimited one (wire type 2). */
const num = (no: number, v: number): Buffer => Buffer.concat([varint(no << 3), varint(v)]);
const len = (no: number, bytes: Buffer): Buffer => Buffer.concat([varint((no << 3) | 2), varint(bytes.length), bytes]);
