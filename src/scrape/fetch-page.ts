/**
 * One GET of a /metrics page, bounded: a deadline for the whole answer (an
 * engine that sends headers and then stalls is as dead as one that never
 * answers), a size limit, 200 only, text only. A keep-alive agent per target:
 * one connection reused every interval.
 */
import { httpModule } from '../core/http-module.js';
import { ByteBuffer } from '../core/byte-buffer.js';
import { clip } from '../core/printable.js';
import { redactUrl } from '../core/redact.js';

export interface Page {
  readonly text: string;
  readonly contentType: string | undefined;
  readonly bytes: number;
  /** Reading stopped at maxLines: the text ends at a whole line, the rest of the page was never read. */
  readonly cut?: boolean;
}

/** Bytes a page may hold, shared with other pages (one user's): take() says whether n more fit, and keeps them. */
export interface PageHold {
  take(n: number): boolean;
  /** What the bound is, for the error. */
  readonly what: string;
}

export interface PageFetcher {
  /** `hold`: the page's bytes are taken from it as they come; the caller gives them back once the page is read. */
  /**
   * `maxLines`: reading stops after that many lines (the connection is
   * closed): a page of a quarter of a million series is never held, only what
   * the series bound can use of it.
   */
  get(signal?: AbortSignal, hold?: PageHold, maxLines?: number): Promise<Page>;
  close(): void;
}

/**
 * Buffers a page's bytes are gathered in until it is decoded, used again (a
 * page a second, each gathered anew, was a page of memory outside the heap
 * waiting for V8's next collection). Pages read at once each take one; two
 * are kept.
 */
const idle: ByteBuffer[] = [];

/**
 * The Accept header: OpenMetrics first, asked for with `escaping=allow-utf-8`
 * as Prometheus 3 asks, text 0.0.4 as the fallback. Without the escaping,
 * prometheus_client 0.23 and later (SGLang's /metrics, vLLM's before its
 * instrumentator route) answer `escaping=underscores` and rename the samples
 * of colon names (`sglang_token_usage`) but not their # TYPE lines
 * (`sglang:token_usage`; client_python#1177): every family empty.
 */
const ACCEPT = 'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

export function createPageFetcher(url: string, timeoutMs: number, maxBytes: number): PageFetcher {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${redactUrl(url)}: only http and https are scraped`);
  const mod = httpModule(u);
  const agent = new mod.Agent({ keepAlive: true, maxSockets: 1 });
  const where = redactUrl(url);
  return {
    close: () => agent.destroy(),
    get: (signal, hold, maxLines = Infinity) =>
      new Promise<Page>((resolve, reject) => {
        let done = false;
        const fail = (why: string): void => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          req.destroy();
          reject(new Error(`${where}: ${why}`));
        };
        const req = mod.request(u, { method: 'GET', agent, headers: { accept: ACCEPT, 'accept-encoding': 'identity' }, signal }, (res) => {
          const status = res.statusCode ?? 0;
          if (status !== 200) {
            res.resume();
            return fail(`HTTP ${status}${res.statusMessage ? ` ${clip(res.statusMessage, 60)}` : ''}`);
          }
          const declared = Number(res.headers['content-length']);
          if (declared > maxBytes) return fail(`the page is ${declared} bytes, over the ${maxBytes} limit`);
          const bytes = idle.pop() ?? new ByteBuffer();
          let size = 0;
          let lines = 0;
          let cut = false;
          const finish = (): void => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            if (cut) req.destroy();
            let text: string | undefined;
            try {
              text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.buf.subarray(0, bytes.pos));
            } catch {
              text = undefined;
            }
            bytes.reset();
            if (idle.length < 2) idle.push(bytes);
            if (text === undefined) return reject(new Error(`${where}: the page is not UTF-8 text`));
            resolve({ text, contentType: res.headers['content-type'], bytes: size, ...(cut ? { cut } : {}) });
          };
          res.on('data', (c: Buffer) => {
            if (done) return;
            if (maxLines !== Infinity) {
              let at = -1;
              while (lines < maxLines && (at = c.indexOf(10, at + 1)) >= 0) lines++;
              if (lines >= maxLines && at >= 0) {
                c = c.subarray(0, at + 1);
                cut = true;
              }
            }
            size += c.length;
            if (size > maxBytes) return fail(`the page is over the ${maxBytes} byte limit`);
            if (hold && !hold.take(c.length)) return fail(`the page is over ${hold.what}`);
            bytes.raw(c);
            if (cut) finish();
          });
          res.on('error', (e) => fail(e.message));
          res.on('end', finish);
        });
        const timer = setTimeout(() => fail(`no whole answer within ${timeoutMs} ms`), timeoutMs);
        req.on('error', (e: NodeJS.ErrnoException) => fail(e.code === 'ABORT_ERR' ? 'aborted' : e.code ? `${e.code} ${u.host}` : e.message));
        req.end();
      }),
  };
}
