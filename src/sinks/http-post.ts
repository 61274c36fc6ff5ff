/** One HTTP(S) POST with a hard timeout, classified for the retry queue. */
import { httpModule } from '../core/http-module.js';
import { maskSecrets, urlSecrets } from '../core/redact.js';

export type SendResult =
  | { ok: true; status: number; body: Buffer }
  | { ok: false; retryable: boolean; reason: string; retryAfterMs?: number };

const MAX_RESPONSE_BYTES = 1 << 20;

/** Worth sending again: a timeout, throttling, or the server's own trouble. */
const retryableStatus = (s: number): boolean => s === 408 || s === 429 || s >= 500;

export interface Poster {
  post(body: Buffer, headers: Record<string, string>): Promise<SendResult>;
  close(): void;
}

/** Headers that carry no secret: the rest (authorization, api keys, tenant ids) are masked where an answer echoes them. */
const PLAIN_HEADERS = new Set(['content-type', 'content-encoding', 'content-length', 'user-agent', 'accept']);


export function createPoster(url: string, timeoutMs: number): Poster {
  const u = new URL(url);
  // what a backend's error answer may echo back (the request line, its credentials): never into a log line
  const inUrl = urlSecrets(u);
  const mod = httpModule(u);
  // keep-alive: one connection reused every interval costs less CPU than a handshake per export
  const agent = new mod.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    close: () => agent.destroy(),
    post: (body, headers) =>
      new Promise<SendResult>((resolve) => {
        let done = false;
        const finish = (r: SendResult): void => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve(r);
        };
        /** A 2xx status line came: the backend has the data, whatever happens to the rest of its answer. */
        let accepted: number | undefined;
        /** The status of a refusal, once its status line came. */
        let refused: number | undefined;
        const req = mod.request(u, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) accepted = status;
          else refused = status;
          const chunks: Buffer[] = [];
          let size = 0;
          // a body not read in full: accepted data is not sent again (that would duplicate it at the backend), only
          // its partial-success detail is lost; a refusal stays a refusal
          const unread = (why: string): void => {
            if (accepted !== undefined) finish({ ok: true, status, body: Buffer.alloc(0) });
            else finish({ ok: false, retryable: retryableStatus(status), reason: `HTTP ${status} (${why})` });
            res.destroy();
          };
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_RESPONSE_BYTES) return unread('an answer larger than 1 MiB');
            chunks.push(c);
          });
          res.on('error', (e) => unread(e.message));
          res.on('end', () => {
            const text = Buffer.concat(chunks);
            if (accepted !== undefined) return finish({ ok: true, status, body: text });
            const ra = Number(res.headers['retry-after']);
            // masked before it is cut: half a secret is still a leak
            const secrets = [...inUrl, ...Object.entries(headers).filter(([k]) => !PLAIN_HEADERS.has(k.toLowerCase())).flatMap(([, v]) => [v, ...v.split(/\s+/)])];
            const snippet = maskSecrets(text.toString('utf8', 0, Math.min(text.length, 4096)), secrets).slice(0, 200).replace(/\s+/g, ' ').trim();
            finish({
              ok: false,
              retryable: retryableStatus(status),
              reason: `HTTP ${status}${snippet ? `: ${snippet}` : ''}`,
              ...(Number.isFinite(ra) && ra > 0 ? { retryAfterMs: Math.min(ra, 300) * 1000 } : {}),
            });
          });
        });
        const timer = setTimeout(() => {
          if (accepted !== undefined) finish({ ok: true, status: accepted, body: Buffer.alloc(0) });
          else if (refused !== undefined) finish({ ok: false, retryable: retryableStatus(refused), reason: `HTTP ${refused} (its answer did not end within ${timeoutMs} ms)` });
          req.destroy(new Error(`timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        req.on('error', (e: NodeJS.ErrnoException) => finish({ ok: false, retryable: true, reason: e.code ? `${e.code} ${u.host}` : e.message }));
        req.end(body);
      }),
  };
}
