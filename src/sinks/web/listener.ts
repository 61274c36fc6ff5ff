/**
 * The pull endpoint's listener, bounded against its network peers: anyone
 * who reaches the port can open connections, send slowly, send too much, or
 * start TLS handshakes, and none of that may cost the daemon its memory, its
 * descriptors or a real scraper's answer. So:
 *
 * - connections per peer (its address) and in all are bounded; at the bound
 *   in all, a connection with no request in progress is closed for the new
 *   one: the oldest that has not sent a whole request yet, else the one idle
 *   longest, so that a scraper's next connection gets in while others sit
 *   idle, and its keep-alive connection (a request every interval) is the
 *   last to go; a peer's new connections are rate-bounded too (a burst,
 *   then a few a second), which also bounds its TLS handshakes;
 * - a connection must finish its TLS handshake and send a whole request head
 *   within header_timeout, finish each exchange (the request read, the page
 *   written to it) within request_timeout, and is closed after idle_timeout
 *   without a request;
 * - a request head is at most max_header_bytes; a request with a body is
 *   refused (a GET of a page has none);
 * - on a TLS port, plain HTTP gets the answer Go's server gives it (400,
 *   "Client sent an HTTP request to an HTTPS server.") and nothing else.
 *
 * Every bound hit is counted by reason (l9gpu.listener.refused) and the
 * first of each reason is logged.
 */
import type http from 'node:http';
import type net from 'node:net';
import type tls from 'node:tls';
import { requireBuiltin } from '../../core/builtin.js';
import type { Logger } from '../../core/log.js';
import { TokenBuckets } from '../../core/token-buckets.js';
import type { ServerTls } from './tls-server.js';

export interface ListenerLimits {
  readonly maxConnections: number;
  readonly maxPerPeer: number;
  /** New connections a peer may open each second (twice that in a burst). */
  readonly newPerPeerPerSecond: number;
  readonly headerTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxHeaderBytes: number;
}

export const REFUSAL_REASONS = [
  'per_peer',
  'connection_rate',
  'evicted',
  'total',
  'header_timeout',
  'request_timeout',
  'idle_timeout',
  'header_too_large',
  'body',
  'bad_request',
  'tls_handshake',
  'plain_http',
  'client_cert',
  'auth',
  'auth_throttled',
  'rate_limited',
  'method',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

const WORDS: Record<RefusalReason, string> = {
  per_peer: 'a peer at its connection bound ([prometheus] max_connections_per_peer): new connection closed',
  connection_rate: 'a peer opening connections faster than its bound: new connection closed',
  evicted: 'connections at [prometheus] max_connections: the one idle longest closed for a new one',
  total: 'connections at [prometheus] max_connections, all busy: new connection closed',
  header_timeout: 'no whole request head within [prometheus] header_timeout: connection closed',
  request_timeout: 'an exchange not done within [prometheus] request_timeout: connection closed',
  idle_timeout: 'a connection idle for [prometheus] idle_timeout: closed',
  header_too_large: 'a request head over [prometheus] max_header_bytes: 431',
  body: 'a request with a body: 413',
  bad_request: 'a request that is not HTTP: 400',
  tls_handshake: 'a TLS handshake that failed',
  plain_http: 'plain HTTP on the TLS port: 400',
  client_cert: 'a client certificate the web_config does not allow',
  auth: 'wrong or missing basic-auth credentials: 401',
  auth_throttled: 'a peer past its bcrypt comparisons: 401 without one',
  rate_limited: 'past the web_config rate_limit: 429',
  method: 'a method other than GET or HEAD: 405',
};

/** Go's net/http answer to plain HTTP on a TLS port. */
const PLAIN_ON_TLS = 'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n';

interface Conn {
  readonly peer: string;
  readonly raw: net.Socket;
  /** The socket HTTP runs on (the TLS socket on a TLS port), once the handshake is done. */
  http?: net.Socket;
  busy: boolean;
  /** It has sent a whole request (a scraper's does at once; a connection of a flood, or a slow one, has not). */
  served: boolean;
  timer?: NodeJS.Timeout;
}

export type RequestHandler = (req: http.IncomingMessage, res: http.ServerResponse, peer: string) => void;

/** IPv4 peers seen through an IPv6 socket as themselves. */
const peerOf = (s: net.Socket): string => (s.remoteAddress ?? '?').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');

export class BoundedListener {
  readonly counts = new Map<RefusalReason, number>();
  private readonly conns = new Map<net.Socket, Conn>();
  private readonly byHttp = new WeakMap<net.Socket, Conn>();
  /** Sockets whose request the HTTP parser refused (counted and answered once). */
  private readonly clientErrors = new WeakSet<net.Socket>();
  private readonly perPeer = new Map<string, number>();
  private readonly rate: TokenBuckets;
  private server: net.Server | undefined;
  private readonly http: http.Server;
  private closing = false;

  constructor(
    private readonly limits: ListenerLimits,
    private readonly handler: RequestHandler,
    /** The TLS in effect for a new connection (a rotated certificate, a changed web_config), or null for plain HTTP. */
    private readonly tlsNow: () => ServerTls | null,
    private readonly log: Logger,
  ) {
    this.rate = new TokenBuckets(2 * limits.newPerPeerPerSecond, 1000 / limits.newPerPeerPerSecond);
    const H = requireBuiltin('node:http') as typeof http;
    this.http = H.createServer(
      {
        maxHeaderSize: limits.maxHeaderBytes,
        // the head's deadline counts from the connection's first byte for a new one; checked every second, not every 30
        headersTimeout: limits.headerTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.idleTimeoutMs,
        connectionsCheckingInterval: 1000,
      },
      (req, res) => this.onRequest(req, res),
    );
    this.http.on('clientError', (e: NodeJS.ErrnoException, socket: net.Socket) => this.onClientError(e, socket));
    // an idle keep-alive connection past idle_timeout (Node's keepAliveTimeout arms the socket's timeout)
    this.http.on('timeout', (socket: net.Socket) => {
      this.count('idle_timeout');
      socket.destroy();
    });
  }

  /** Connections open now. */
  get open(): number {
    return this.conns.size;
  }

  private count(r: RefusalReason): void {
    this.counts.set(r, (this.counts.get(r) ?? 0) + 1);
    this.log.once(
      `listener-${r}`,
      r === 'auth' || r === 'idle_timeout' || r === 'evicted' ? 'info' : 'warn',
      `prometheus endpoint: ${WORDS[r]} (counted in l9gpu.listener.refused; said once)`,
    );
  }

  async listen(port: number, host: string): Promise<number> {
    const N = requireBuiltin('node:net') as typeof net;
    const server = N.createServer({ noDelay: true }, (raw) => this.onConnection(raw));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, backlog: 511 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (e) => this.log.error('prometheus endpoint error', { error: e.message }));
    this.server = server;
    return (server.address() as net.AddressInfo).port;
  }

  private onConnection(raw: net.Socket): void {
    raw.on('error', () => {});
    if (this.closing) return void raw.destroy();
    const peer = peerOf(raw);
    if (!this.rate.take(peer)) return this.refuse(raw, 'connection_rate');
    if ((this.perPeer.get(peer) ?? 0) >= this.limits.maxPerPeer) return this.refuse(raw, 'per_peer');
    if (this.conns.size >= this.limits.maxConnections && !this.evictIdle()) return this.refuse(raw, 'total');
    const c: Conn = { peer, raw, busy: false, served: false };
    this.conns.set(raw, c);
    this.perPeer.set(peer, (this.perPeer.get(peer) ?? 0) + 1);
    raw.once('close', () => this.forget(c));
    const tlsConf = this.tlsNow();
    // the handshake and the first request head within header_timeout: Node's own headersTimeout counts from a
    // request's first byte, and a connection that sends nothing would be held for ever
    c.timer = setTimeout(() => {
      this.count(c.http || !tlsConf ? 'header_timeout' : 'tls_handshake');
      raw.destroy();
    }, this.limits.headerTimeoutMs);
    if (!tlsConf) {
      c.http = raw;
      this.byHttp.set(raw, c);
      this.http.emit('connection', raw);
      return;
    }
    raw.once('data', (first: Buffer) => {
      raw.pause();
      // a TLS record starts with 22 (handshake); an HTTP request with a method's letters
      if (first[0] !== 0x16) {
        clearTimeout(c.timer);
        this.count('plain_http');
        if (/^[A-Z]+ /.test(first.toString('latin1', 0, 16))) raw.end(PLAIN_ON_TLS, () => raw.destroy());
        else raw.destroy();
        return;
      }
      raw.unshift(first);
      const T = requireBuiltin('node:tls') as typeof tls;
      const t = new T.TLSSocket(raw, {
        isServer: true,
        secureContext: tlsConf.context,
        requestCert: tlsConf.requestCert,
        rejectUnauthorized: tlsConf.rejectUnauthorized,
        ALPNProtocols: ['http/1.1'],
      });
      t.on('error', () => {
        if (!c.http) this.count('tls_handshake');
        raw.destroy();
      });
      t.once('secure', () => {
        const why = tlsConf.check(t);
        if (why) {
          this.count('client_cert');
          this.log.debug('prometheus endpoint: client certificate refused', { peer, why });
          t.destroy();
          return;
        }
        c.http = t;
        this.byHttp.set(t, c);
        this.http.emit('connection', t);
      });
    });
  }

  private refuse(raw: net.Socket, why: RefusalReason): void {
    this.count(why);
    raw.destroy();
  }

  /**
   * Closes a connection for a new one: the oldest that has not sent a request yet, else the one idle longest (the
   * map keeps them in the order they came, a connection put last again at each of its requests). By arrival alone,
   * a scraper's keep-alive connection, the oldest, was the first closed under a flood (and its next one met a listen
   * queue the flood filled: a scrape missed).
   */
  private evictIdle(): boolean {
    let idle: Conn | undefined;
    for (const c of this.conns.values()) {
      if (c.busy) continue;
      if (!c.served) {
        idle = c;
        break;
      }
      idle ??= c;
    }
    if (!idle) return false;
    this.count('evicted');
    this.forget(idle);
    idle.raw.destroy();
    return true;
  }

  private forget(c: Conn): void {
    if (!this.conns.delete(c.raw)) return;
    clearTimeout(c.timer);
    const n = (this.perPeer.get(c.peer) ?? 1) - 1;
    if (n <= 0) this.perPeer.delete(c.peer);
    else this.perPeer.set(c.peer, n);
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const c = this.byHttp.get(req.socket);
    if (c) {
      c.busy = true;
      c.served = true;
      clearTimeout(c.timer);
      // last in the order of eviction: idle the least long
      if (this.conns.delete(c.raw)) this.conns.set(c.raw, c);
    }
    // the whole exchange, the page written included (a client that does not read its answer holds it no longer)
    const deadline = setTimeout(() => {
      this.count('request_timeout');
      req.socket.destroy();
    }, this.limits.requestTimeoutMs);
    res.once('close', () => {
      clearTimeout(deadline);
      if (c) c.busy = false;
    });
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) {
      this.count('body');
      res
        .writeHead(413, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' })
        .end('a request to this endpoint has no body\n');
      req.socket.destroySoon?.();
      return;
    }
    this.handler(req, res, c?.peer ?? peerOf(req.socket));
  }

  private onClientError(e: NodeJS.ErrnoException, socket: net.Socket): void {
    // the parser says its error again for each piece of the request that comes before the socket is closed (a 1 MiB
    // header line: twice): one count, and one answer, a connection
    if (this.clientErrors.has(socket)) return void socket.destroy();
    this.clientErrors.add(socket);
    const answer = (status: string): void => {
      if (socket.writable && socket.bytesWritten === 0)
        socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`, () => socket.destroy());
      else socket.destroy();
    };
    if (e.code === 'HPE_HEADER_OVERFLOW') {
      this.count('header_too_large');
      return answer('431 Request Header Fields Too Large');
    }
    if (e.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      this.count('header_timeout');
      return answer('408 Request Timeout');
    }
    if (e.code === 'ECONNRESET' || e.code === 'EPIPE') return void socket.destroy();
    this.count('bad_request');
    answer('400 Bad Request');
  }

  /** A reason counted as the handler saw it (auth, rate_limited, method). */
  refused(r: RefusalReason): void {
    this.count(r);
  }

  async close(): Promise<void> {
    this.closing = true;
    const s = this.server;
    this.server = undefined;
    for (const c of this.conns.values()) c.raw.destroy();
    this.conns.clear();
    this.perPeer.clear();
    this.http.closeAllConnections();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}
