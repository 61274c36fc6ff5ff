/**
 * Prometheus pull endpoint. Holds the latest batch of every source and
 * renders it at scrape time (prom-text.ts) under the registry's Prometheus
 * names (unit words, _total, _ratio: prometheusName()), which are what a
 * backend gives the same metrics pushed over OTLP with Prometheus naming.
 * A source that stops reporting ages out after three of its intervals, so
 * series of ended jobs and lost GPUs disappear.
 *
 * Each batch is rendered once, at the first scrape after it came, into its
 * source's buffer (used again for the source's next batch), and the page is
 * put together once, until a batch comes or ages out: a scraper asking ten
 * times a second between two ticks costs a write of the same bytes, not a
 * page of strings each time. A page's buffer is used again for a later page
 * once no response is writing it.
 */
import { namingOf } from '../core/metrics/conventions.js';
import { PROMETHEUS_SECTION } from './sections.js';
import type http from 'node:http';
import { gzipSync } from 'node:zlib';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { ConfigError } from '../core/config/schema.js';
import { ByteBuffer } from '../core/byte-buffer.js';
import type { Attributes, Batch, Emitter } from '../core/metrics/model.js';
import { metric, PERSONAL_ATTRIBUTES, type MetricDef } from '../core/metrics/registry.js';
import { batchLines, constantLabels, metricHeader, NO_METRICS, pagePieces, targetInfo, type Constant } from './prom-text.js';
import { BoundedListener, REFUSAL_REASONS } from './web/listener.js';
import { takeWebConfig, WebState } from './web/web-state.js';
import { WebConfigError } from './web/web-config.js';
import { portFree, serverHeader } from '../core/probe.js';
import { VERSION } from '../core/resource.js';
import type { ProbeResult } from '../core/plugin.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';

const STALE_INTERVALS = 3;
/** A peer's new connections a second (twice that in a burst): a scraper opens one and keeps it. */
const NEW_PER_PEER_PER_SECOND = 20;

const LISTENER_CONNECTIONS = metric('l9gpu.listener.connections');
const LISTENER_REFUSED = metric('l9gpu.listener.refused');

/** Where only this machine's programs can connect. */
export function loopbackOnly(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host) || /^::ffff:127\./i.test(host);
}

/**
 * Whether the page leaves off the labels that name people: `auto` hides them
 * on a page served beyond loopback to anyone who connects (no basic auth, no
 * verified client certificate).
 */
export function hidesPersonal(mode: 'auto' | 'show' | 'hide', host: string, authenticated: boolean): boolean {
  return mode === 'hide' || (mode === 'auto' && !authenticated && !loopbackOnly(host));
}

/** The web_config of a section, read (and checked) as the sink would: a ConfigError naming the key. */
function webStateOf(c: Config, log: SinkContext['log']): WebState | undefined {
  const file = readSection(c, PROMETHEUS_SECTION).web_config;
  if (!file) return undefined;
  try {
    return new WebState(file, log);
  } catch (e) {
    if (e instanceof WebConfigError)
      throw new ConfigError(`[prometheus] web_config: ${e.message}`, { section: 'prometheus', key: 'web_config' });
    throw e;
  }
}

const SERVER = `l9gpu/${VERSION}`;

/**
 * The web_config readable and usable (a problem otherwise, with the key), and
 * the port free or held by a running l9gpu (a healthy node: the daemon serves
 * it); anything else on it is a problem. A TLS port is asked over TLS (the
 * certificate not checked: only who answers is asked).
 */
async function probePort(c: Config): Promise<ProbeResult> {
  const s = readSection(c, PROMETHEUS_SECTION);
  let tls = false;
  let clientCert = false;
  if (s.web_config) {
    try {
      const w = takeWebConfig(s.web_config);
      tls = !!w.tls;
      clientCert = w.config.tls?.clientAuth === 'RequireAndVerifyClientCert' || w.config.tls?.clientAuth === 'RequireAnyClientCert';
    } catch (e) {
      return { ok: false, detail: `[prometheus] web_config: ${(e as Error).message}` };
    }
  }
  const host = s.host ?? '0.0.0.0';
  const port = s.port;
  const free = await portFree(host, port);
  if (free.ok || !free.detail.includes('is in use')) return free;
  const who = await serverHeader(host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, port, s.path, tls);
  if (who?.startsWith('l9gpu/')) return { ok: true, detail: `${host}:${port} is served by a running l9gpu daemon (${who})` };
  // a page that asks every client for a certificate answers no one without: who holds the port is not asked
  if (who === undefined && clientCert)
    return {
      ok: true,
      detail: `${host}:${port} is in use, by a server that asks for a client certificate (as web_config does): not asked further`,
    };
  return { ok: false, detail: `${host}:${port} is in use by another program${who ? ` (${who})` : ''} ([prometheus] port)` };
}

const NONE = Buffer.from(NO_METRICS);

/** A source's latest batch. */
interface Latest {
  readonly time: number;
  readonly intervalMs: number;
  readonly points: number;
  /** Until rendered. */
  batch: Batch | undefined;
  /** Its lines, by metric, once rendered: views of the source's buffer. */
  lines?: Map<MetricDef, Buffer>;
  /** Whether a GET has served it (its points are counted as exported once). */
  served?: boolean;
}

/** A buffer pages are put together in, and how many responses are writing the page in it now. */
interface PageBuffer {
  readonly buf: Buffer;
  readers: number;
}

/** A page: its bytes (a view of `in`), and the same gzipped once a scraper asked for it. */
interface Page {
  readonly bytes: Buffer;
  readonly in: PageBuffer;
  gzip?: Buffer;
}

/**
 * Whether the client takes gzip (RFC 9110 Accept-Encoding: `gzip`, `x-gzip`
 * or `*`, any q but 0). Prometheus asks for it on every scrape: the page is
 * about a tenth of its size gzipped, for a quarter of a millisecond of CPU
 * once per page (docs/performance.md).
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let star = false;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const wanted = q === undefined || Number(q.slice(2)) > 0;
    if (coding === 'gzip' || coding === 'x-gzip') return wanted;
    if (coding === '*') star = wanted;
  }
  return star;
}

class PrometheusSink implements Sink {
  readonly name = 'prometheus';
  readonly stats = new SinkStats();
  /** Each source's latest batch until it is rendered, then only its lines (the points are not held for them). */
  private readonly latest = new Map<string, Latest>();
  /** The page of the batches in `latest`, until a batch comes or ages out. */
  private page: Page | undefined;
  /** Each source's buffer its batch is rendered into, batch after batch. */
  private readonly rendered = new Map<string, ByteBuffer>();
  /** Page buffers no response is writing (two kept). */
  private readonly idle: PageBuffer[] = [];
  private readonly headers = new Map<MetricDef, Buffer>();
  /** The label sets of stable attributes (an engine's series), made once for as long as they live. */
  private labelSets = new WeakMap<Attributes, string>();
  private head: Buffer | undefined;
  private constant: Constant = constantLabels({});
  private listener: BoundedListener | undefined;
  /** The web_config in effect (TLS, users, headers), if one is configured. */
  private readonly web: WebState | undefined;
  /** The attribute keys left off the page, while they are (personal_labels). */
  private hide: ReadonlySet<string> | undefined;
  private webVersion = -1;
  /** The port actually bound (differs from the config when it says 0). */
  port = 0;

  /** The names on the page ([prometheus] semantic_conventions). */
  private readonly naming: (b: Batch) => Batch;

  constructor(private readonly ctx: SinkContext) {
    this.naming = namingOf(readSection(ctx.config, PROMETHEUS_SECTION).semantic_conventions);
    // read here: a web_config that cannot be used is a configuration error before anything listens
    this.web = webStateOf(ctx.config, ctx.log);
    this.privacy();
  }

  /** Whether the labels that name people are left off now (they follow a web_config changed on disk). */
  private privacy(): void {
    const version = this.web?.version ?? 0;
    if (version === this.webVersion) return;
    this.webVersion = version;
    const s = readSection(this.ctx.config, PROMETHEUS_SECTION);
    const hide = hidesPersonal(s.personal_labels, s.host ?? '0.0.0.0', this.web?.authenticated ?? false)
      ? new Set<string>(PERSONAL_ATTRIBUTES)
      : undefined;
    if ((hide === undefined) === (this.hide === undefined)) return;
    this.hide = hide;
    // the rendered lines and cached label sets were made the other way: every source's next batch is rendered anew
    for (const [source, l] of this.latest) if (!l.batch) this.latest.delete(source);
    this.rendered.clear();
    this.labelSets = new WeakMap();
    this.drop();
  }

  collectSelf(out: Emitter): void {
    if (!this.listener) return;
    out.add(LISTENER_CONNECTIONS, this.listener.open, {});
    for (const r of REFUSAL_REASONS) out.add(LISTENER_REFUSED, this.listener.counts.get(r) ?? 0, { 'l9gpu.listener.reason': r });
  }

  async start(): Promise<void> {
    const s = readSection(this.ctx.config, PROMETHEUS_SECTION);
    const labels = s.resource_labels;
    const keep = labels.length ? new RegExp(`^(${labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`) : undefined;
    this.constant = constantLabels(this.ctx.resource, keep);
    const host = s.host ?? '0.0.0.0';
    const web = this.web;
    const listener = new BoundedListener(
      {
        maxConnections: s.max_connections,
        maxPerPeer: s.max_connections_per_peer,
        newPerPeerPerSecond: NEW_PER_PEER_PER_SECOND,
        headerTimeoutMs: s.header_timeout * 1000,
        requestTimeoutMs: s.request_timeout * 1000,
        idleTimeoutMs: s.idle_timeout * 1000,
        maxHeaderBytes: s.max_header_bytes,
      },
      (req, res, peer) => this.serve(req, res, peer),
      () => {
        web?.refresh();
        return web?.tls ?? null;
      },
      this.ctx.log,
    );
    try {
      this.port = await listener.listen(s.port, host);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      await listener.close();
      throw new Error(
        err.code === 'EADDRINUSE'
          ? `cannot listen on ${host}:${s.port}: the port is in use ([prometheus] port)`
          : `cannot listen on ${host}:${s.port}: ${err.message}`,
      );
    }
    this.listener = listener;
    const scheme = web?.tls ? 'https' : 'http';
    this.ctx.log.info('prometheus endpoint listening', {
      url: `${scheme}://${host}:${this.port}${s.path}`,
      ...(web
        ? {
            web_config: web.file,
            auth: web.config.users.size
              ? 'basic'
              : web.config.tls?.clientAuth === 'RequireAndVerifyClientCert'
                ? 'client certificate'
                : 'none',
          }
        : {}),
      ...(this.hide ? { personal_labels: 'hidden (served beyond loopback without authentication: docs/security.md)' } : {}),
    });
  }

  /** One request: the web_config's headers, rate limit and basic auth first, then the page. */
  private serve(req: http.IncomingMessage, res: http.ServerResponse, peer: string): void {
    // says who serves the port: doctor tells a running l9gpu from another program on it
    res.setHeader('server', SERVER);
    const web = this.web;
    if (!web) return this.answer(req, res);
    web.refresh();
    this.privacy();
    for (const [k, v] of Object.entries(web.config.headers)) res.setHeader(k, v);
    if (!web.allow()) {
      this.listener?.refused('rate_limited');
      res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end('Too Many Requests\n');
      return;
    }
    if (!web.auth.enabled) return this.answer(req, res);
    void web.auth.check(req.headers.authorization, peer).then((r) => {
      if (r === 'ok') return this.answer(req, res);
      this.listener?.refused(r === 'throttled' ? 'auth_throttled' : 'auth');
      if (res.destroyed) return;
      res
        .writeHead(401, { 'www-authenticate': 'Basic', 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' })
        .end('Unauthorized\n');
    });
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = readSection(this.ctx.config, PROMETHEUS_SECTION).path;
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      this.listener?.refused('method');
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url !== path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`l9gpu metrics are at ${path}\n`);
      return;
    }
    let page: Page;
    try {
      // HEAD asks whether the page is there: nothing is exported to it
      page = this.render(req.method === 'GET');
    } catch (e) {
      this.stats.errors++;
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`l9gpu: ${(e as Error).message}\n`);
      return;
    }
    const type = { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', vary: 'accept-encoding' };
    if (acceptsGzip(req.headers['accept-encoding'])) {
      // its own bytes, not a view of the page's buffer: nothing to hold while it is written
      const gz = (page.gzip ??= gzipSync(page.bytes));
      res.writeHead(200, { ...type, 'content-encoding': 'gzip', 'content-length': gz.length });
      res.end(req.method === 'HEAD' ? undefined : gz);
      return;
    }
    res.writeHead(200, { ...type, 'content-length': page.bytes.length });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    // the page's buffer is not put a page in again until this response is done with it
    const held = page.in;
    held.readers++;
    res.once('close', () => this.release(held));
    res.end(page.bytes);
  }

  write(given: Batch): void {
    const batch = this.naming(given);
    this.latest.set(batch.source, { time: batch.time, intervalMs: batch.intervalMs, points: batch.points.length, batch });
    this.drop();
  }

  /** The page is no longer the batches': its buffer is used again once no response writes it. */
  private drop(): void {
    if (!this.page) return;
    const held = this.page.in;
    this.page = undefined;
    this.release(held);
  }

  private release(b: PageBuffer): void {
    b.readers--;
    if (b.readers === 0 && this.idle.length < 2) this.idle.push(b);
  }

  /** A buffer for a page of `bytes`: an idle one it fits in (not by far), or a new one with room for some growth. */
  private pageBuffer(bytes: number): PageBuffer {
    for (let i = 0; i < this.idle.length; i++) {
      const b = this.idle[i]!;
      if (b.buf.length >= bytes && b.buf.length <= 2 * bytes + 4096) {
        this.idle.splice(i, 1);
        return b;
      }
    }
    return { buf: Buffer.allocUnsafe(bytes + (bytes >> 3)), readers: 0 };
  }

  /**
   * The page. `exported` counts each batch's points once, on the first GET
   * that serves them, as a push sink counts a point once when the backend
   * takes it. Served again (the next scrape, a second Prometheus) they count
   * no more; a batch replaced before any scrape came was never exported and
   * never counts.
   */
  render(count = true): Page {
    const now = Date.now();
    for (const [source, l] of this.latest) {
      if (now - l.time > STALE_INTERVALS * l.intervalMs) {
        this.latest.delete(source);
        this.rendered.delete(source);
        this.drop();
      } else if (count && !l.served) {
        l.served = true;
        this.stats.exported += l.points;
      }
    }
    if (this.page) return this.page;
    const parts: Map<MetricDef, Buffer>[] = [];
    for (const [source, l] of this.latest) {
      if (l.batch) {
        let into = this.rendered.get(source);
        if (!into) this.rendered.set(source, (into = new ByteBuffer(16 * 1024, 4 << 20)));
        // no otel_scope_* labels: one scope (l9gpu), they would only add noise to every series
        l.lines = batchLines(l.batch, into, this.constant, {
          cache: this.labelSets,
          hide: this.hide,
          duplicate: () => this.stats.dropped++,
        });
        l.batch = undefined;
      }
      parts.push(l.lines!);
    }
    this.head ??= Buffer.from(targetInfo(this.ctx.resource));
    const pieces = pagePieces(this.head, parts, (def) => this.header(def), NONE);
    let bytes = 0;
    for (const p of pieces) bytes += p.length;
    const into = this.pageBuffer(bytes);
    let at = 0;
    for (const p of pieces) at += p.copy(into.buf, at);
    // held by the sink while it is the page (a reader), by each response writing it
    into.readers = 1;
    return (this.page = { bytes: into.buf.subarray(0, bytes), in: into });
  }

  private header(def: MetricDef): Buffer {
    let h = this.headers.get(def);
    if (!h) this.headers.set(def, (h = Buffer.from(metricHeader(def))));
    return h;
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.web?.close();
    const l = this.listener;
    this.listener = undefined;
    await l?.close();
  }
}

export const prometheusSink: SinkManifest = {
  name: 'prometheus',
  description: 'Prometheus pull endpoint (default :9464/metrics)',
  section: PROMETHEUS_SECTION,
  create: (ctx) => new PrometheusSink(ctx),
  describe: (c: Config) => {
    const s = readSection(c, PROMETHEUS_SECTION);
    if (!s.web_config) return `listening on http://${s.host}:${s.port}${s.path}`;
    let how = 'web_config unreadable';
    try {
      const w = takeWebConfig(s.web_config).config;
      const auth = [
        w.users.size ? `basic auth (${w.users.size} user${w.users.size > 1 ? 's' : ''})` : '',
        w.tls?.clientAuth === 'RequireAndVerifyClientCert' ? 'client certificates' : '',
      ]
        .filter(Boolean)
        .join(' and ');
      how = `${w.tls ? 'TLS' : 'no TLS'}, ${auth || 'no authentication'}`;
    } catch {
      // the probe says why
    }
    return (
      `listening on ${s.web_config && how.startsWith('TLS') ? 'https' : 'http'}://${s.host}:${s.port}${s.path} ` +
      `(web_config ${s.web_config}: ${how})`
    );
  },
  probe: (c: Config) => probePort(c),
};
