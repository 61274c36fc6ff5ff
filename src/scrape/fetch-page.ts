/**
 * One GET of a /metrics page through the core's HTTP client (a deadline for
 * the whole answer, a size limit, a keep-alive connection per target reused
 * every interval): 200 only, UTF-8 text only, cut at a number of lines, its
 * bytes taken from a budget as they come.
 */
import { createHttpClient, type HttpFailure } from '../core/net/http-client.js';
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
  // a page is bounded by maxBytes, and by a hold; a page's own Content-Length over maxBytes is refused unread
  const client = createHttpClient({ url, timeoutMs, maxResponseBytes: maxBytes });
  const where = client.where;
  return {
    close: () => client.close(),
    get: async (signal, hold, maxLines = Infinity) => {
      const bytes = idle.pop() ?? new ByteBuffer();
      const give = (): void => {
        bytes.reset();
        if (idle.length < 2) idle.push(bytes);
      };
      let lines = 0;
      let cut = false;
      let res;
      try {
        res = await client.request({
          headers: { accept: ACCEPT, 'accept-encoding': 'identity' },
          signal,
          onData: (c) => {
            if (maxLines !== Infinity) {
              let at = -1;
              while (lines < maxLines && (at = c.indexOf(10, at + 1)) >= 0) lines++;
              if (lines >= maxLines && at >= 0) {
                c = c.subarray(0, at + 1);
                cut = true;
              }
            }
            if (hold && !hold.take(c.length)) return `the page is over ${hold.what}`;
            bytes.raw(c);
            return cut;
          },
        });
      } catch (e) {
        give();
        const f = e as HttpFailure;
        throw new Error(
          f.kind === 'aborted'
            ? `${where}: aborted`
            : f.kind === 'timeout'
              ? `${where}: no whole answer within ${timeoutMs} ms`
              : f.message.startsWith(where)
                ? f.message
                : `${where}: ${f.message}`,
        );
      }
      if (res.status !== 200) {
        give();
        throw new Error(`${where}: HTTP ${res.status}${res.statusMessage ? ` ${clip(res.statusMessage, 60)}` : ''}`);
      }
      if (res.cut && res.cut !== 'stopped') {
        give();
        const why =
          res.cut === 'too-large'
            ? (res.cutReason ?? '').replace(/^the answer/, 'the page')
            : res.cut === 'timeout'
              ? `no whole answer within ${timeoutMs} ms`
              : (res.cutReason ?? 'the answer broke off');
        throw new Error(`${where}: ${why}`);
      }
      let text: string | undefined;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.buf.subarray(0, bytes.pos));
      } catch {
        text = undefined;
      }
      const size = bytes.pos;
      give();
      if (text === undefined) throw new Error(`${where}: the page is not UTF-8 text`);
      return { text, contentType: res.headers['content-type'], bytes: size, ...(cut ? { cut } : {}) };
    },
  };
}
