/**
 * The one HTTP(S) client every outgoing request goes through: the sinks'
 * POSTs, the engines' /metrics pages, PromQL, the Kubernetes API, doctor's
 * probes. What each of them needs is written here once:
 *
 * - a deadline for the whole answer (a server that sends its headers and
 *   then stalls is as dead as one that never answers);
 * - a bound on the bytes read (the rest is never read: memory stays bounded);
 * - redirects followed only within the configured origin, and credentials
 *   (configured headers, tokens, a URL's user information) sent only to it;
 * - the credentials masked in every text that may echo them (an error, a
 *   backend's answer);
 * - TLS from the configured files (a private CA, a client certificate),
 *   taken again when they are rotated on disk, and a TLS failure told apart
 *   from an outage (tls-files.ts).
 *
 * node:http and node:https are loaded at the first request: every scraping
 * plugin's module imports this one, and the light commands load them all.
 */
import type http from 'node:http';
import type https from 'node:https';
import { requireBuiltin } from '../builtin.js';
import { maskSecrets, redactUrl, urlSecrets } from '../redact.js';
import { TlsSource, tlsProblem, type TlsFiles, type TlsProblem } from './tls-files.js';

export type Credentials = () => Readonly<Record<string, string>>;

export interface HttpClientOptions {
  /** The configured URL: its origin is the one credentials go to and redirects stay within. */
  readonly url: string;
  /** How messages name the endpoint's setting, e.g. "[otlp] endpoint". */
  readonly what?: string;
  readonly timeoutMs: number;
  /** The most bytes of an answer's body read. */
  readonly maxResponseBytes: number;
  /** Headers that carry secrets (Authorization, API keys, tenant ids), asked at each request (a token file read again when it changes). */
  readonly credentials?: Credentials;
  /** The TLS files; ignored for http://. */
  readonly tls?: TlsFiles;
  /** Connections kept open to the origin (default 1: one reused every interval costs less CPU than a handshake per request). */
  readonly maxSockets?: number;
  /** Same-origin redirects followed (GET and HEAD only; default 0). */
  readonly redirects?: number;
  /** Do not check the server's certificate (a kubelet's self-signed serving certificate, where the operator says so). */
  readonly insecureSkipVerify?: boolean;
}

export interface RequestOptions {
  readonly method?: 'GET' | 'HEAD' | 'POST';
  /** A URL of the configured origin (default: the configured URL itself). */
  readonly url?: string;
  /** Headers without secrets. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer;
  readonly signal?: AbortSignal;
  /**
   * The body chunk by chunk instead of gathered: return true to stop reading
   * (the connection is closed; the answer is `cut: 'stopped'`), or a text to
   * fail the request with.
   */
  readonly onData?: (chunk: Buffer) => boolean | string | void;
}

/** An answer: its status line came. */
export interface HttpResponse {
  readonly status: number;
  readonly statusMessage: string;
  readonly headers: http.IncomingHttpHeaders;
  /** The body as read (empty when onData took it). */
  readonly body: Buffer;
  /** Why the body is not whole: over maxResponseBytes, past the deadline, the connection failed, or onData stopped it. */
  readonly cut?: 'too-large' | 'timeout' | 'error' | 'stopped';
  readonly cutReason?: string;
}

export type FailureKind = 'tls' | 'network' | 'timeout' | 'aborted' | 'redirect' | 'refused';

/** A request that got no answer (no status line), or whose redirect was not followed. Its message is masked. */
export class HttpFailure extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly code?: string,
    /** For kind tls: what it means and which setting fixes it. */
    readonly tls?: TlsProblem,
  ) {
    super(message);
    this.name = 'HttpFailure';
  }
}

/** A URL part percent-decoded, or as written where a stray % makes it undecodable. */
function decoded(x: string): string {
  try {
    return decodeURIComponent(x);
  } catch {
    return x;
  }
}

const loadHttp = (): typeof http => requireBuiltin('node:http') as typeof http;
const loadHttps = (): typeof https => requireBuiltin('node:https') as typeof https;

/** Headers that carry no secret: the rest are masked where an answer echoes them. */
const AUTH_SCHEMES = new Set(['basic', 'bearer', 'token', 'digest', 'negotiate', 'apikey', 'api-key']);
const PLAIN = new Set(['content-type', 'content-encoding', 'content-length', 'user-agent', 'accept', 'accept-encoding']);

export class HttpClient {
  private readonly base: URL;
  private readonly https: boolean;
  private readonly tls: TlsSource | undefined;
  private agent: http.Agent | undefined;
  private tlsVersion = -1;
  /** The configured URL's user information, as the Basic credential a browser would send for it. */
  private readonly userinfo: string | undefined;
  private closed = false;
  readonly where: string;

  constructor(private readonly o: HttpClientOptions) {
    this.base = new URL(o.url);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') throw new Error(`${redactUrl(o.url)}: not an http(s) URL`);
    this.https = this.base.protocol === 'https:';
    // readTlsMaterial throws a ConfigError naming the key: a wrong file is said when the client is made
    this.tls = this.https && o.tls && (o.tls.ca || o.tls.cert || o.tls.key) ? new TlsSource(o.tls) : undefined;
    if (this.base.username || this.base.password) {
      this.userinfo = `Basic ${Buffer.from(`${decoded(this.base.username)}:${decoded(this.base.password)}`).toString('base64')}`;
    }
    this.where = redactUrl(o.url);
  }

  /** The origin credentials go to. */
  get origin(): string {
    return this.base.origin;
  }

  /** Why the TLS files on disk are not in use (a rotation left them broken), if they are not. */
  get tlsProblem(): string | undefined {
    return this.tls?.problem;
  }

  /** The text with every credential this client sends (and whatever has the shape of one) masked. */
  mask(text: string): string {
    const secrets = [...urlSecrets(this.base)];
    const c = this.credentialHeaders();
    for (const [k, v] of Object.entries(c)) {
      if (PLAIN.has(k.toLowerCase())) continue;
      // "Basic <credential>": the credential is the secret, the scheme's name a word every text may hold
      const [first, ...rest] = v.split(/\s+/);
      if (rest.length && AUTH_SCHEMES.has(first!.toLowerCase())) secrets.push(rest.join(' '), ...rest);
      else secrets.push(v, ...v.split(/\s+/));
    }
    return maskSecrets(text, secrets);
  }

  private credentialHeaders(): Record<string, string> {
    const c: Record<string, string> = { ...(this.o.credentials?.() ?? {}) };
    if (this.userinfo && !Object.keys(c).some((k) => k.toLowerCase() === 'authorization')) c.authorization = this.userinfo;
    return c;
  }

  private agentNow(): http.Agent {
    const material = this.tls?.get();
    if (this.agent && (!this.tls || this.tls.version === this.tlsVersion)) return this.agent;
    this.agent?.destroy();
    this.tlsVersion = this.tls?.version ?? 0;
    const common = { keepAlive: true, maxSockets: this.o.maxSockets ?? 1 };
    this.agent = this.https
      ? new (loadHttps().Agent)({
          ...common,
          ...(material?.ca ? { ca: material.ca } : {}),
          ...(material?.cert ? { cert: material.cert, key: material.key } : {}),
          ...(this.o.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
        })
      : new (loadHttp().Agent)(common);
    return this.agent;
  }

  close(): void {
    this.closed = true;
    this.agent?.destroy();
    this.agent = undefined;
  }

  /** One request, with redirects followed within the origin (GET and HEAD). */
  async request(r: RequestOptions = {}): Promise<HttpResponse> {
    let at = new URL(r.url ?? this.o.url);
    if (at.origin !== this.base.origin)
      throw new Error(`${redactUrl(at.href)} is not at ${this.base.origin}: a client sends only to its own origin`);
    const method = r.method ?? 'GET';
    const deadline = performance.now() + this.o.timeoutMs;
    for (let hops = 0; ; hops++) {
      const res = await this.once(at, method, r, deadline);
      const location = res.headers.location;
      if (res.status < 300 || res.status > 399 || !location || (method !== 'GET' && method !== 'HEAD') || !this.o.redirects) return res;
      let next: URL;
      try {
        next = new URL(location, at);
      } catch {
        throw new HttpFailure(`${this.where}: HTTP ${res.status} redirects to an unreadable location`, 'redirect');
      }
      next.username = '';
      next.password = '';
      // an origin carries no user information: it may be shown
      if (next.origin !== this.base.origin) {
        throw new HttpFailure(
          `${this.where}: HTTP ${res.status} redirects to another origin (${next.origin}): not ` +
            `followed, the configured credentials are only for ${this.base.origin}`,
          'redirect',
        );
      }
      if (hops >= this.o.redirects) throw new HttpFailure(`${this.where}: more than ${this.o.redirects} redirects`, 'redirect');
      at = next;
    }
  }

  private once(at: URL, method: string, r: RequestOptions, deadline: number): Promise<HttpResponse> {
    if (this.closed) return Promise.reject(new HttpFailure(`${this.where}: the client is closed`, 'aborted'));
    const agent = this.agentNow();
    const mod = this.https ? loadHttps() : loadHttp();
    const target = new URL(at.href);
    target.username = '';
    target.password = '';
    const headers: Record<string, string> = { ...r.headers, ...this.credentialHeaders() };
    if (r.body) headers['content-length'] = String(r.body.length);
    const max = this.o.maxResponseBytes;
    return new Promise<HttpResponse>((resolve, reject) => {
      let settled = false;
      let answer: { status: number; statusMessage: string; headers: http.IncomingHttpHeaders } | undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (cut?: HttpResponse['cut'], cutReason?: string): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        r.signal?.removeEventListener('abort', onAbort);
        if (cut) req.destroy();
        resolve({
          ...answer!,
          body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
          ...(cut ? { cut, ...(cutReason ? { cutReason } : {}) } : {}),
        });
      };
      const failed = (f: HttpFailure): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        r.signal?.removeEventListener('abort', onAbort);
        req.destroy();
        reject(f);
      };
      const onAbort = (): void => {
        if (answer) done('error', 'aborted');
        else failed(new HttpFailure(`${this.where}: aborted`, 'aborted', 'ABORT_ERR'));
      };
      const req = mod.request(target, { method, agent, headers }, (res) => {
        answer = { status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', headers: res.headers };
        if (method === 'HEAD') {
          res.resume();
          return done();
        }
        if (Number(res.headers['content-length'] ?? 0) > max) {
          res.resume();
          return done('too-large', `the answer is ${res.headers['content-length']} bytes, over the ${max} limit`);
        }
        res.on('data', (c: Buffer) => {
          if (settled) return;
          size += c.length;
          if (size > max) return done('too-large', `the answer is over the ${max} byte limit`);
          if (r.onData) {
            const v = r.onData(c);
            if (v === true) done('stopped');
            else if (typeof v === 'string') done('error', v);
          } else chunks.push(c);
        });
        res.on('error', (e) => done('error', this.mask(e.message)));
        res.on('aborted', () => done('error', 'the connection closed before the answer ended'));
        res.on('end', () => done());
      });
      const timer = setTimeout(
        () => {
          if (answer) done('timeout', `its answer did not end within ${this.o.timeoutMs} ms`);
          else failed(new HttpFailure(`${this.where}: no answer within ${this.o.timeoutMs} ms`, 'timeout', 'ETIMEDOUT'));
        },
        Math.max(0, deadline - performance.now()),
      );
      if (r.signal) {
        if (r.signal.aborted) queueMicrotask(onAbort);
        else r.signal.addEventListener('abort', onAbort, { once: true });
      }
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (answer) return done('error', this.mask(e.message));
        const t = this.https ? tlsProblem(e) : undefined;
        if (t) return failed(new HttpFailure(`${this.where}: ${this.mask(t.reason)}`, 'tls', e.code, t));
        failed(new HttpFailure(e.code ? `${e.code} ${at.host}` : `${this.where}: ${this.mask(e.message)}`, 'network', e.code));
      });
      req.end(r.body);
    });
  }
}

export function createHttpClient(o: HttpClientOptions): HttpClient {
  return new HttpClient(o);
}
