/** One HTTP(S) POST with a hard timeout, classified for the retry queue. */
import http from 'node:http';
import https from 'node:https';

export type SendResult =
  | { ok: true; status: number; body: Buffer }
  | { ok: false; retryable: boolean; reason: string; retryAfterMs?: number };

const MAX_RESPONSE_BYTES = 1 << 20;

export interface Poster {
  post(body: Buffer, headers: Record<string, string>): Promise<SendResult>;
  close(): void;
}

export function createPoster(url: string, timeoutMs: number): Poster {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
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
        const req = mod.request(u, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size <= MAX_RESPONSE_BYTES) chunks.push(c);
          });
          res.on('error', (e) => finish({ ok: false, retryable: true, reason: e.message }));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const text = Buffer.concat(chunks);
            if (status >= 200 && status < 300) return finish({ ok: true, status, body: text });
            const retryable = status === 408 || status === 429 || status >= 500;
            const ra = Number(res.headers['retry-after']);
            const snippet = text.toString('utf8', 0, Math.min(text.length, 200)).replace(/\s+/g, ' ').trim();
            finish({
              ok: false,
              retryable,
              reason: `HTTP ${status}${snippet ? `: ${snippet}` : ''}`,
              ...(Number.isFinite(ra) && ra > 0 ? { retryAfterMs: Math.min(ra, 300) * 1000 } : {}),
            });
          });
        });
        const timer = setTimeout(() => {
          req.destroy(new Error(`timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        req.on('error', (e: NodeJS.ErrnoException) => finish({ ok: false, retryable: true, reason: e.code ? `${e.code} ${u.host}` : e.message }));
        req.end(body);
      }),
  };
}
