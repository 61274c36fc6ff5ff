/**
 * Prometheus pull endpoint. Holds the latest batch of every source and
 * renders it at scrape time (prom-text.ts) under the registry's Prometheus
 * names (unit words, _total, _ratio: prometheusName()), which are what a
 * backend gives the same metrics pushed over OTLP with Prometheus naming.
 * A source that stops reporting ages out after three of its intervals, so
 * series of ended jobs and lost GPUs disappear.
 */
import { PROMETHEUS_SECTION } from './sections.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../core/config/load.js';
import type { Batch } from '../core/metrics/model.js';
import { renderExposition } from './prom-text.js';
import { portFree, serverHeader } from '../core/probe.js';
import { VERSION } from '../core/resource.js';
import type { ProbeResult } from '../core/plugin.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';

const STALE_INTERVALS = 3;

const SERVER = `l9gpu/${VERSION}`;

/** Free, or held by a running l9gpu (a healthy node: the daemon serves it); anything else on it is a problem. */
async function probePort(c: Config): Promise<ProbeResult> {
  const host = c.str('prometheus', 'host') ?? '0.0.0.0';
  const port = c.num('prometheus', 'port')!;
  const free = await portFree(host, port);
  if (free.ok || !free.detail.includes('is in use')) return free;
  const who = await serverHeader(host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, port, c.str('prometheus', 'path') ?? '/metrics');
  if (who?.startsWith('l9gpu/')) return { ok: true, detail: `${host}:${port} is served by a running l9gpu daemon (${who})` };
  return { ok: false, detail: `${host}:${port} is in use by another program${who ? ` (${who})` : ''} ([prometheus] port)` };
}

class PrometheusSink implements Sink {
  readonly name = 'prometheus';
  readonly stats = new SinkStats();
  private readonly latest = new Map<string, Batch>();
  /** Batches a GET has served (weak: a batch replaced or aged out goes with its entry). */
  private readonly served = new WeakSet<Batch>();
  private server: http.Server | undefined;
  private keep: RegExp | undefined;
  /** The port actually bound (differs from the config when it says 0). */
  port = 0;

  constructor(private readonly ctx: SinkContext) {}

  async start(): Promise<void> {
    const labels = this.ctx.config.list('prometheus', 'resource_labels');
    this.keep = labels.length ? new RegExp(`^(${labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`) : undefined;
    const path = this.ctx.config.str('prometheus', 'path') ?? '/metrics';
    const host = this.ctx.config.str('prometheus', 'host') ?? '0.0.0.0';
    const port = this.ctx.config.num('prometheus', 'port')!;
    const server = http.createServer((req, res) => {
      // says who serves the port: doctor tells a running l9gpu from another program on it
      res.setHeader('server', SERVER);
      const url = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
      } else if (url === path) {
        let body: string;
        try {
          // HEAD asks whether the page is there: nothing is exported to it
          body = this.render(req.method === 'GET');
        } catch (e) {
          this.stats.errors++;
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`l9gpu: ${(e as Error).message}\n`);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(req.method === 'HEAD' ? undefined : body);
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
    this.latest.set(batch.source, batch);
  }

  /**
   * The page; `exported` counts each batch's points once, on the first GET that
   * serves them, as a push sink counts a point once when the backend takes it.
   * Served again (the next scrape, a second Prometheus) they count no more;
   * a batch replaced before any scrape came was never exported and never counts.
   */
  render(count = true): string {
    const now = Date.now();
    const live: Batch[] = [];
    for (const [source, b] of this.latest) {
      if (now - b.time > STALE_INTERVALS * b.intervalMs) this.latest.delete(source);
      else live.push(b);
    }
    if (count) {
      for (const b of live) {
        if (this.served.has(b)) continue;
        this.served.add(b);
        this.stats.exported += b.points.length;
      }
    }
    // no otel_scope_* labels: one scope (l9gpu), they would only add noise to every series
    return renderExposition(live, this.ctx.resource, this.keep);
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
  describe: (c: Config) => `listening on http://${c.str('prometheus', 'host')}:${c.num('prometheus', 'port')}${c.str('prometheus', 'path')}`,
  probe: (c: Config) => probePort(c),
};
