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
import { PROMETHEUS_SECTION } from './sections.js';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { ByteBuffer } from '../core/byte-buffer.js';
import type { Attributes, Batch } from '../core/metrics/model.js';
import type { MetricDef } from '../core/metrics/registry.js';
import { batchLines, constantLabels, metricHeader, NO_METRICS, pagePieces, targetInfo } from './prom-text.js';
import { portFree, serverHeader } from '../core/probe.js';
import { VERSION } from '../core/resource.js';
import type { ProbeResult } from '../core/plugin.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';

const STALE_INTERVALS = 3;

const SERVER = `l9gpu/${VERSION}`;

/** Free, or held by a running l9gpu (a healthy node: the daemon serves it); anything else on it is a problem. */
async function probePort(c: Config): Promise<ProbeResult> {
  const s = readSection(c, PROMETHEUS_SECTION);
  const host = s.host ?? '0.0.0.0';
  const port = s.port;
  const free = await portFree(host, port);
  if (free.ok || !free.detail.includes('is in use')) return free;
  const who = await serverHeader(host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, port, s.path);
  if (who?.startsWith('l9gpu/')) return { ok: true, detail: `${host}:${port} is served by a running l9gpu daemon (${who})` };
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
  private readonly labelSets = new WeakMap<Attributes, string>();
  private head: Buffer | undefined;
  private constant = '';
  private server: http.Server | undefined;
  /** The port actually bound (differs from the config when it says 0). */
  port = 0;

  constructor(private readonly ctx: SinkContext) {}

  async start(): Promise<void> {
    const s = readSection(this.ctx.config, PROMETHEUS_SECTION);
    const labels = s.resource_labels;
    const keep = labels.length ? new RegExp(`^(${labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`) : undefined;
    this.constant = constantLabels(this.ctx.resource, keep);
    const path = s.path;
    const host = s.host ?? '0.0.0.0';
    const port = s.port;
    const server = http.createServer((req, res) => {
      // says who serves the port: doctor tells a running l9gpu from another program on it
      res.setHeader('server', SERVER);
      const url = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
      } else if (url === path) {
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
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`l9gpu metrics are at ${path}\n`);
      }
    });
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(new Error(e.code === 'EADDRINUSE' ? `cannot listen on ${host}:${port}: the port is in use ([prometheus] port)` : `cannot listen on ${host}:${port}: ${e.message}`)),
      );
      server.listen(port, host, () => resolve());
    });
    server.on('error', (e) => this.ctx.log.error('prometheus endpoint error', { error: e.message }));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    this.ctx.log.info('prometheus endpoint listening', { url: `http://${host}:${this.port}${path}` });
  }

  write(batch: Batch): void {
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
        l.lines = batchLines(l.batch, into, this.constant, this.labelSets);
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
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    await new Promise<void>((r) => {
      s.close(() => r());
      s.closeAllConnections();
    });
  }
}

export const prometheusSink: SinkManifest = {
  name: 'prometheus',
  description: 'Prometheus pull endpoint (default :9464/metrics)',
  section: PROMETHEUS_SECTION,
  create: (ctx) => new PrometheusSink(ctx),
  describe: (c: Config) => {
    const s = readSection(c, PROMETHEUS_SECTION);
    return `listening on http://${s.host}:${s.port}${s.path}`;
  },
  probe: (c: Config) => probePort(c),
};
