/**
 * An engine's /metrics as prometheus_client's make_asgi_app() serves it
 * (SGLang; vLLM before its instrumentator route): the page is chosen from the
 * Accept header by choose_encoder (prometheus_client/exposition.py, v0.25.0,
 * ported line for line below) out of pages the real library wrote
 * (a case folder made by its record.py). The folder's negotiation.json holds
 * the real function's answers; test/system/prometheus-client.test.ts holds this port
 * to them, so the server here negotiates as the library does.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface Negotiated {
  /** The page file of the case folder the library writes for that Accept. */
  readonly page: string;
  readonly contentType: string;
}

const ESCAPINGS = ['allow-utf-8', 'underscores', 'dots', 'values'];

/** _get_version: the first "version=" token's value, "" when none. */
function version(toks: string[]): string {
  for (const tok of toks) {
    if (!tok.includes('=')) continue;
    const t = tok.trim();
    const at = t.indexOf('=');
    if (t.slice(0, at) === 'version') return t.slice(at + 1);
  }
  return '';
}

/** _get_escaping: the first "escaping=" token's scheme, underscores when none or unknown. */
function escaping(toks: string[]): string {
  for (const tok of toks) {
    if (!tok.includes('=')) continue;
    const t = tok.trim();
    const at = t.indexOf('=');
    if (t.slice(0, at) !== 'escaping') continue;
    const v = t.slice(at + 1);
    return ESCAPINGS.includes(v) ? v : 'underscores';
  }
  return 'underscores';
}

/** parse_version(v) >= (1, 0, 0), as Python compares the tuples (an int part against a str one raises: a 500 there). */
function atLeast1(v: string): boolean {
  const parts = v.split('.').map((p) => (/^\s*[-+]?\d+\s*$/.test(p) ? Number(p) : p));
  const want = [1, 0, 0];
  for (let i = 0; i < Math.min(parts.length, want.length); i++) {
    const p = parts[i]!;
    if (typeof p === 'string') throw new Error(`prometheus_client: version ${v}: '>=' not supported between str and int`);
    if (p !== want[i]) return p > want[i]!;
  }
  return parts.length >= want.length;
}

/** choose_encoder(accept_header): which page the library writes and the content type it says. */
export function chooseEncoder(accept: string | undefined, textPages: readonly string[] = []): Negotiated {
  for (const accepted of (accept ?? '').split(',')) {
    const toks = accepted.split(';');
    const type = toks[0]!.trim();
    if (type === 'application/openmetrics-text') {
      const v = version(toks);
      const e = escaping(toks);
      if (!v) return { page: 'page.om-underscores', contentType: 'application/openmetrics-text; version=1.0.0; charset=utf-8' };
      if (atLeast1(v))
        return { page: `page.om-${e}`, contentType: `application/openmetrics-text; version=${v}; charset=utf-8; escaping=${e}` };
    } else if (type === 'text/plain') {
      const v = version(toks);
      const e = escaping(toks);
      // text 1.0.0 under an escaping is page.prom's bytes unless the library wrote a page of its own for it
      if (v && atLeast1(v))
        return {
          page: textPages.includes(`page.text-${e}`) ? `page.text-${e}` : 'page.prom',
          contentType: `text/plain; version=1.0.0; charset=utf-8; escaping=${e}`,
        };
    }
  }
  return { page: 'page.prom', contentType: 'text/plain; version=0.0.4; charset=utf-8' };
}

export interface NegotiatingServer {
  readonly url: string;
  /** What each request asked for and got, in order. */
  readonly served: { accept: string | undefined; page: string; contentType: string }[];
  close(): Promise<void>;
}

/** The answer the library gave that wrote `page` (negotiation.json): its content type. */
export function recordedAnswer(dir: string, page: string): Negotiated {
  const recorded = JSON.parse(readFileSync(join(dir, 'negotiation.json'), 'utf8')) as ({ accept: string } & Negotiated)[];
  const r = recorded.find((x) => x.page === page);
  if (!r) throw new Error(`${dir}: negotiation.json has no answer that writes ${page}`);
  return { page: r.page, contentType: r.contentType };
}

/**
 * Serves a case folder's pages on 127.0.0.1 as make_asgi_app does, or
 * `pinned`: that page with that content type whatever the Accept (a server
 * that answers one way only).
 */
export async function servePrometheusClient(dir: string, pinned?: Negotiated): Promise<NegotiatingServer> {
  const textPages = ESCAPINGS.map((e) => `page.text-${e}`).filter((f) => existsSync(join(dir, f)));
  const served: NegotiatingServer['served'] = [];
  const server = http.createServer((req, res) => {
    let chosen: Negotiated;
    try {
      chosen = pinned ?? chooseEncoder(req.headers.accept, textPages);
    } catch (e) {
      res.writeHead(500).end((e as Error).message);
      return;
    }
    served.push({ accept: req.headers.accept, ...chosen });
    res.writeHead(200, { 'content-type': chosen.contentType });
    res.end(readFileSync(join(dir, chosen.page)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`,
    served,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
