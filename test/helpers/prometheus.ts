/** A real Prometheus 2.42 (Debian 12 package) scraping a target on loopback. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './net.js';
import { stopProcess } from './process.js';
import { ROOT, tempDir } from './paths.js';
import type { PromSample } from './victoriametrics.js';
import { waitFor } from './wait.js';

export const PROMETHEUS_BIN = process.env.L9GPU_TEST_PROMETHEUS_BIN ?? '/usr/bin/prometheus';
export const PROMTOOL_BIN = process.env.L9GPU_TEST_PROMTOOL_BIN ?? '/usr/bin/promtool';
/** Prometheus 3.5 (Debian unstable's package, unpacked by test/setup/install-test-deps.sh): UTF-8 names, its own Accept header. */
export const PROMETHEUS3_BIN = process.env.L9GPU_TEST_PROMETHEUS3_BIN ?? join(ROOT, '.cache', 'sid-peers', 'usr', 'bin', 'prometheus');

/** How a scrape reaches the target beyond plain HTTP: Prometheus' scrape_config keys. */
export interface ScrapeOptions {
  /** The Prometheus to run: 2.42 (Debian 12) or 3.5 (Debian unstable). */
  readonly version?: 2 | 3;
  readonly scheme?: 'http' | 'https';
  readonly basicAuth?: { readonly username: string; readonly password: string };
  /** tls_config: the CA the target's certificate is checked against, the client certificate. */
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string; readonly serverName?: string };
  readonly metricsPath?: string;
}

/**
 * The Prometheus HTTP query API, which Prometheus, VictoriaMetrics and Mimir
 * share: where Grafana's Prometheus data source sends a dashboard's queries.
 */
export class PromApi {
  constructor(readonly url: string) {}

  private async get<T>(path: string, params: URLSearchParams, what: string): Promise<T> {
    const r = await fetch(`${this.url}${path}?${params}`);
    const j = (await r.json()) as { status: string; data: T; error?: string };
    if (j.status !== 'success') throw new Error(`${what}: ${j.error}`);
    return j.data;
  }

  /** An instant query (at `time`, Unix seconds, or now). */
  async query(promql: string, time?: number): Promise<PromSample[]> {
    const p = new URLSearchParams({ query: promql });
    if (time !== undefined) p.set('time', String(time));
    return (await this.get<{ result: PromSample[] }>('/api/v1/query', p, `query ${promql}`)).result;
  }

  /** A range query, as a time series panel runs it (Unix seconds; step in seconds). */
  async queryRange(promql: string, start: number, end: number, step: number): Promise<PromSample[]> {
    const p = new URLSearchParams({ query: promql, start: String(start), end: String(end), step: String(step) });
    return (await this.get<{ result: PromSample[] }>('/api/v1/query_range', p, `query_range ${promql}`)).result;
  }

  /** The values of a label on the series a selector matches between start and end: Grafana's label_values(selector, label). */
  async labelValues(label: string, match: string, start: number, end: number): Promise<string[]> {
    const p = new URLSearchParams({ 'match[]': match, start: String(start), end: String(end) });
    return this.get<string[]>(`/api/v1/label/${encodeURIComponent(label)}/values`, p, `label_values(${match}, ${label})`);
  }
}

export class Prometheus {
  private proc: ChildProcess | undefined;
  private dir = '';
  port = 0;
  log = '';

  /** Scrapes the targets (host:port of pull endpoints) as one job, l9gpu. */
  async start(targets: string | string[], scrapeInterval = '1s', o: ScrapeOptions = {}): Promise<this> {
    this.port = await freePort();
    this.dir = tempDir('l9gpu-prom-');
    const cfg = join(this.dir, 'prometheus.yml');
    const list = (Array.isArray(targets) ? targets : [targets]).map((t) => `'${t}'`).join(', ');
    let job = `  - job_name: l9gpu\n    static_configs:\n      - targets: [${list}]\n`;
    if (o.scheme) job += `    scheme: ${o.scheme}\n`;
    if (o.metricsPath) job += `    metrics_path: ${o.metricsPath}\n`;
    if (o.basicAuth)
      job +=
        `    basic_auth:\n      username: ${JSON.stringify(o.basicAuth.username)}\n      password: ` +
        `${JSON.stringify(o.basicAuth.password)}\n`;
    if (o.tls) {
      job += '    tls_config:\n';
      if (o.tls.ca) job += `      ca_file: ${o.tls.ca}\n`;
      if (o.tls.cert) job += `      cert_file: ${o.tls.cert}\n      key_file: ${o.tls.key}\n`;
      if (o.tls.serverName) job += `      server_name: ${o.tls.serverName}\n`;
    }
    writeFileSync(cfg, `global:\n  scrape_interval: ${scrapeInterval}\n  scrape_timeout: ${scrapeInterval}\nscrape_configs:\n${job}`);
    this.proc = spawn(
      o.version === 3 ? PROMETHEUS3_BIN : PROMETHEUS_BIN,
      [
        `--config.file=${cfg}`,
        `--storage.tsdb.path=${join(this.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${this.port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.proc.on('error', (e) => (this.log += `spawn failed: ${e.message}\n`));
    this.proc.stdout!.on('data', (d: Buffer) => (this.log += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.log += d.toString()));
    await waitFor('Prometheus ready', async () => (await fetch(`${this.url}/-/ready`).catch(() => undefined))?.ok, 30_000);
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The query API of this (started) Prometheus. */
  get api(): PromApi {
    return new PromApi(this.url);
  }

  query(promql: string, time?: number): Promise<PromSample[]> {
    return this.api.query(promql, time);
  }

  async stop(): Promise<void> {
    await stopProcess(this.proc);
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `promtool check metrics`: Prometheus' own linter for an exposition page. */
export function promtoolCheckMetrics(text: string): { status: number | null; output: string } {
  const r = spawnSync(PROMTOOL_BIN, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
