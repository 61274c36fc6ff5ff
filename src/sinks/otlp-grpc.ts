/**
 * OTLP/gRPC: the sink's encoded ExportMetricsServiceRequest sent as one unary
 * MetricsService/Export call (@grpc/grpc-js, loaded when the first poster is
 * made: this module itself is imported only for protocol = grpc). The bytes
 * go as they are (the serializer is the identity); the answer's bytes come
 * back for the sink to read the partial success from. The HTTP headers the
 * sink hands post() are not sent: gRPC has its own content-type, the user
 * agent is the channel's (grpc.primary_user_agent), and the credentials go
 * as metadata, asked at each call.
 *
 * What a failure means follows the OTLP specification (opentelemetry-proto,
 * docs/specification.md, "OTLP/gRPC Throttling" and "Failures"): CANCELLED,
 * DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS are sent
 * again; RESOURCE_EXHAUSTED only when the status carries a google.rpc.RetryInfo
 * (the server says it will recover), whose delay is waited; every other code
 * is not. A TLS failure is a configuration problem, named with the setting
 * that fixes it: grpc-js says only UNAVAILABLE with a text, so a connection it
 * could not set up is tried once more by hand (diagnose()), where Node.js
 * gives the error its code and tlsProblem() its meaning.
 */
import { createRequire } from 'node:module';
import type net from 'node:net';
import type tls from 'node:tls';
import type * as Grpc from '@grpc/grpc-js';
import { requireBuiltin } from '../core/builtin.js';
import type { Credentials } from '../core/net/http-client.js';
import { hasTls, TlsSource, tlsProblem, type TlsFiles, type TlsMaterial, type TlsProblem } from '../core/net/tls-files.js';
import { maskSecrets } from '../core/redact.js';
import { VERSION } from '../core/resource.js';
import { MAX_RESPONSE_BYTES, type Poster, type SendResult } from './http-post.js';

export interface GrpcPosterOptions {
  /** http://host:port (plaintext, h2c) or https://host:port (TLS); only the origin counts. */
  readonly url: string;
  /** With an https:// URL: plaintext all the same (OTEL_EXPORTER_OTLP_INSECURE). */
  readonly insecure: boolean;
  readonly tls: TlsFiles;
  /** Sent as the call's metadata (keys lower-cased). */
  readonly credentials: Credentials;
  readonly timeoutMs: number;
  /** Compress each message with gzip (grpc-encoding: gzip). */
  readonly gzip: boolean;
  /** The settings that fix each kind of TLS failure, as messages name them. */
  readonly tlsKeys: { readonly ca: string; readonly cert: string; readonly endpoint: string };
}

const EXPORT = '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export';
const same = (b: Buffer): Buffer => b;

/** Sent again whatever the status says (the specification's retryable codes, RESOURCE_EXHAUSTED apart). */
const RETRYABLE = new Set(['CANCELLED', 'DEADLINE_EXCEEDED', 'ABORTED', 'OUT_OF_RANGE', 'UNAVAILABLE', 'DATA_LOSS']);
/** The longest RetryInfo delay taken: a server asking for more is waited this long. */
const MAX_RETRY_DELAY_MS = 300_000;
const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';

/** A connection grpc-js could not set up, unless its text says why in a way no TLS setting fixes (refused, unreachable, no such name). */
const CONNECT_FAILED = /^No connection established\b/;
const NOT_TLS = /\b(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)\b/;

export function createGrpcPoster(o: GrpcPosterOptions): Poster {
  const grpc = createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc;
  const u = new URL(o.url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${u.origin}: not an http:// or https:// endpoint`);
  const secure = u.protocol === 'https:' && !o.insecure;
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  // the files are read (and checked: a ConfigError naming the key) now, and again when they change on disk
  const source = secure && hasTls(o.tls) ? new TlsSource(o.tls) : undefined;
  const options: Grpc.ClientOptions = {
    'grpc.primary_user_agent': `l9gpu/${VERSION}`,
    'grpc.max_receive_message_length': MAX_RESPONSE_BYTES,
    'grpc.enable_channelz': 0,
    ...(o.gzip ? { 'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip } : {}),
  };
  let client: Grpc.Client | undefined;
  let material: TlsMaterial = {};
  let version = -1;
  let closed = false;

  const channel = (): Grpc.Client => {
    if (source) material = source.get();
    const v = source?.version ?? 0;
    if (client && v === version) return client;
    client?.close();
    const creds = secure
      ? grpc.credentials.createSsl(material.ca ?? null, material.key ?? null, material.cert ?? null)
      : grpc.credentials.createInsecure();
    client = new grpc.Client(`${u.hostname}:${port}`, creds, options);
    version = v;
    return client;
  };

  const mask = (text: string): string => {
    const secrets: string[] = [];
    for (const v of Object.values(o.credentials())) {
      // "Bearer <token>": the token is the secret, not the scheme's name
      const [, ...rest] = v.split(/\s+/);
      secrets.push(v, ...(rest.length ? [rest.join(' ')] : []));
    }
    return maskSecrets(text, secrets);
  };

  const failure = async (e: Grpc.ServiceError): Promise<SendResult> => {
    const name = grpc.status[e.code] ?? `status ${e.code}`;
    const details = tidy(e.details ?? e.message);
    if (e.code === grpc.status.UNAVAILABLE && CONNECT_FAILED.test(details)) {
      // the next call dials afresh rather than waiting out grpc-js's reconnect backoff: the queue keeps its own
      client?.close();
      client = undefined;
      if (!NOT_TLS.test(details)) {
        const p = await diagnose(u.hostname, port, secure ? material : undefined, Math.min(o.timeoutMs, 5000), u.protocol === 'https:');
        if (p) return { ok: false, retryable: true, reason: `${name}: ${mask(tidy(p.reason))}`, config: o.tlsKeys[p.fix] };
      }
    }
    const delay = retryDelayMs(e.metadata?.get('grpc-status-details-bin')[0]);
    const retryable = RETRYABLE.has(name) || (name === 'RESOURCE_EXHAUSTED' && delay !== undefined);
    return { ok: false, retryable, reason: `${name}: ${mask(details)}`, ...(retryable && delay ? { retryAfterMs: delay } : {}) };
  };

  return {
    close: () => {
      closed = true;
      client?.close();
      client = undefined;
    },
    post: (body) =>
      new Promise<SendResult>((resolve) => {
        if (closed) return resolve({ ok: false, retryable: true, reason: 'the OTLP/gRPC client is closed' });
        let md: Grpc.Metadata;
        let c: Grpc.Client;
        try {
          md = new grpc.Metadata();
          for (const [k, v] of Object.entries(o.credentials())) {
            const key = k.toLowerCase();
            md.set(key, key.endsWith('-bin') ? Buffer.from(v) : v);
          }
          c = channel();
        } catch (e) {
          return resolve({ ok: false, retryable: true, reason: mask((e as Error).message) });
        }
        c.makeUnaryRequest(EXPORT, same, same, body, md, { deadline: Date.now() + o.timeoutMs }, (e, v) => {
          if (!e) resolve({ ok: true, status: 0, body: v ?? Buffer.alloc(0) });
          else void failure(e).then(resolve);
        });
      }),
  };
}

/** grpc-js's details on one line, without its timestamps (a reason said once must read the same at every try) or an empty resolution note.
 * */
function tidy(text: string): string {
  return text
    .replace(/ \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/g, '')
    .replace(/\s*Resolution note:\s*$/, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 400);
}

/** The HTTP/2 client preface and an empty SETTINGS frame: what makes a server that took the session answer. */
const H2_PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

/** Codes of a TLS failure that say the server speaks TLS (an alert it sent), as opposed to bytes that are no TLS at all. */
const ALERT = /^ERR_SSL_.*ALERT/;

/**
 * Why grpc-js could not set up a connection, found by setting one up by hand
 * with the same material: Node.js's error then has its code, and tlsProblem()
 * says which setting fixes it. `material` undefined: the channel is
 * plaintext, and a server that answers a TLS handshake means the endpoint
 * should be https:// (or, `https`, not insecure). A server that takes the handshake and then closes the
 * connection before a word, with a client certificate offered, refused the
 * certificate (a Node.js server does so without an alert). Undefined: no TLS
 * problem found (an outage, or a server that answers now).
 */
function diagnose(
  hostname: string,
  port: number,
  material: TlsMaterial | undefined,
  timeoutMs: number,
  https: boolean,
): Promise<TlsProblem | undefined> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const speaksTls =
    `${hostname}:${port} speaks TLS ` +
    `(${https ? 'the endpoint is https:// but insecure asks for plaintext' : 'is the endpoint https://?'})`;
  const isIp = (requireBuiltin('node:net') as typeof net).isIP(host) !== 0;
  return new Promise((resolve) => {
    const sock = (requireBuiltin('node:tls') as typeof tls).connect({
      host,
      port,
      ...(isIp ? {} : { servername: host }),
      ALPNProtocols: ['h2'],
      ...(material ?? {}),
      rejectUnauthorized: material !== undefined,
    });
    let shaken = false;
    let settled = false;
    const done = (p: TlsProblem | undefined): void => {
      if (settled) return;
      settled = true;
      sock.destroy();
      resolve(p);
    };
    const refused = (): TlsProblem | undefined =>
      shaken && material?.cert
        ? {
            fix: 'cert',
            reason:
              'the server closed the connection right after the TLS handshake, without a word: it did not take the client certificate',
          }
        : undefined;
    sock.setTimeout(timeoutMs, () => done(undefined));
    sock.once('secureConnect', () => {
      shaken = true;
      if (!material) return done({ fix: 'endpoint', reason: speaksTls });
      sock.write(H2_PREFACE);
    });
    sock.once('data', () => done(undefined));
    sock.once('error', (e: NodeJS.ErrnoException) => {
      if (material) return done(tlsProblem(e) ?? refused());
      done(ALERT.test(e.code ?? '') ? { fix: 'endpoint', reason: `${speaksTls}: ${e.message} (${e.code})` } : undefined);
    });
    sock.once('close', () => done(refused()));
  });
}

/**
 * The delay of the google.rpc.RetryInfo in a grpc-status-details-bin trailer
 * (a google.rpc.Status { code = 1; message = 2; repeated google.protobuf.Any
 * details = 3 }, each Any { type_url = 1; value = 2 }, RetryInfo {
 * google.protobuf.Duration retry_delay = 1 }, Duration { seconds = 1; nanos = 2 }),
 * in ms, at most MAX_RETRY_DELAY_MS; 0 for a RetryInfo without a usable delay.
 * Undefined: no RetryInfo, or bytes that are no such message.
 */
export function retryDelayMs(details: Grpc.MetadataValue | undefined): number | undefined {
  if (!Buffer.isBuffer(details)) return undefined;
  const status = protoFields(details);
  if (!status) return undefined;
  for (const any of status) {
    if (any.no !== 3 || !any.bytes) continue;
    const a = protoFields(any.bytes);
    const typeUrl = a?.find((f) => f.no === 1 && f.bytes)?.bytes;
    if (!a || !typeUrl || Buffer.from(typeUrl).toString('utf8') !== RETRY_INFO) continue;
    const info = protoFields(a.find((f) => f.no === 2 && f.bytes)?.bytes ?? new Uint8Array(0));
    if (!info) return undefined;
    const duration = protoFields(info.find((f) => f.no === 1 && f.bytes)?.bytes ?? new Uint8Array(0));
    if (!duration) return undefined;
    // int64 and int32 varints: a negative one is read as 2^64 less its size, which is no delay
    const seconds = duration.find((f) => f.no === 1 && f.wire === 0)?.value ?? 0;
    const nanos = duration.find((f) => f.no === 2 && f.wire === 0)?.value ?? 0;
    if (seconds >= 2 ** 63 || nanos >= 2 ** 31) return 0;
    return Math.min(MAX_RETRY_DELAY_MS, Math.round(seconds * 1000 + nanos / 1e6));
  }
  return undefined;
}

interface ProtoField {
  readonly no: number;
  readonly wire: number;
  /** A varint's value (as a double: a 64-bit one loses its low bits, which no use here reads). */
  readonly value?: number;
  /** A length-delimited field's bytes. */
  readonly bytes?: Uint8Array;
}

/** The fields of one protobuf message, at most 256 of them; undefined for bytes that are no message (truncated, a bad wire type). */
function protoFields(b: Uint8Array): ProtoField[] | undefined {
  const out: ProtoField[] = [];
  let pos = 0;
  const varint = (): number | undefined => {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10 && pos < b.length; i++) {
      const c = b[pos++]!;
      v += (c & 0x7f) * mul;
      if (c < 0x80) return v;
      mul *= 128;
    }
    return undefined;
  };
  while (pos < b.length) {
    if (out.length >= 256) return undefined;
    const key = varint();
    if (key === undefined) return undefined;
    const no = Math.floor(key / 8);
    const wire = key % 8;
    if (no === 0) return undefined;
    if (wire === 0) {
      const value = varint();
      if (value === undefined) return undefined;
      out.push({ no, wire, value });
    } else if (wire === 2) {
      const n = varint();
      if (n === undefined || n > b.length - pos) return undefined;
      out.push({ no, wire, bytes: b.subarray(pos, pos + n) });
      pos += n;
    } else if (wire === 1 || wire === 5) {
      pos += wire === 1 ? 8 : 4;
      if (pos > b.length) return undefined;
      out.push({ no, wire });
    } else return undefined;
  }
  return out;
}
