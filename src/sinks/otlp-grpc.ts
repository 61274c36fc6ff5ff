/** OTLP/gRPC: the sink's encoded ExportMetricsServiceRequest sent as MetricsService/Export (being written). */
import type { Credentials } from '../core/net/http-client.js';
import type { TlsFiles } from '../core/net/tls-files.js';
import type { Poster } from './http-post.js';

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

export function createGrpcPoster(o: GrpcPosterOptions): Poster {
  throw new Error(`OTLP/gRPC to ${o.url}: not written yet`);
}
