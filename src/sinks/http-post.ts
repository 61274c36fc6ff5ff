/** One POST of a push sink through the core's HTTP client, its answer classified for the retry queue. */
import { HttpFailure, type HttpClient } from '../core/net/http-client.js';

export type SendResult =
  | { ok: true; status: number; body: Buffer }
  | {
      ok: false;
      retryable: boolean;
      reason: string;
      retryAfterMs?: number;
      /** A configuration problem (a certificate not verified, a client certificate refused): the setting that fixes it. */
      config?: string;
    };

const MAX_RESPONSE_BYTES = 1 << 20;

/** Worth sending again: a timeout, throttling, or the server's own trouble. */
const retryableStatus = (s: number): boolean => s === 408 || s === 429 || s >= 500;

export interface Poster {
  post(body: Buffer, headers: Record<string, string>): Promise<SendResult>;
  close(): void;
}

export { MAX_RESPONSE_BYTES };

/**
 * `tlsKeys`: the settings that fix each kind of TLS failure, as messages name
 * them (`[otlp] certificate`, `[otlp] client_certificate`, `[otlp] endpoint`).
 */
export function createPoster(client: HttpClient, tlsKeys: { ca: string; cert: string; endpoint: string }): Poster {
  return {
    close: () => client.close(),
    post: async (body, headers) => {
      let res;
      try {
        res = await client.request({ method: 'POST', body, headers });
      } catch (e) {
        if (e instanceof HttpFailure && e.kind === 'tls' && e.tls) {
          return { ok: false, retryable: true, reason: e.message, config: tlsKeys[e.tls.fix] };
        }
        return { ok: false, retryable: true, reason: (e as Error).message };
      }
      const status = res.status;
      // a 2xx status line came: the backend has the data, whatever happens to the rest of its answer (sending it
      // again would duplicate it there); only its partial-success detail is lost
      if (status >= 200 && status < 300) return { ok: true, status, body: res.cut ? Buffer.alloc(0) : res.body };
      if (res.cut === 'too-large' || res.cut === 'timeout' || res.cut === 'error') {
        return {
          ok: false,
          retryable: retryableStatus(status),
          reason: `HTTP ${status} (${res.cut === 'too-large' ? 'an answer larger than 1 MiB' : (res.cutReason ?? res.cut)})`,
        };
      }
      const ra = Number(res.headers['retry-after']);
      // masked before it is cut: half a secret is still a leak
      const snippet = client
        .mask(res.body.toString('utf8', 0, Math.min(res.body.length, 4096)))
        .slice(0, 200)
        .replace(/\s+/g, ' ')
        .trim();
      return {
        ok: false,
        retryable: retryableStatus(status),
        reason: `HTTP ${status}${snippet ? `: ${snippet}` : ''}`,
        ...(Number.isFinite(ra) && ra > 0 ? { retryAfterMs: Math.min(ra, 300) * 1000 } : {}),
      };
    },
  };
}
