/** A real VictoriaMetrics 1.112 on loopback (installed by test/setup/install-test-deps.sh). */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { parseExposition, type Sample } from '../../src/scrape/exposition.js';
import { freePort } from './net.js';
import { stopProcess } from './process.js';
import { ROOT, tempDir } from './paths.js';
import { waitFor } from './wait.js';

export const VM_BIN = process.env.L9GPU_TEST_VM_BIN ?? join(ROOT, '.cache', 'victoria-metrics', 'usr', 'bin', 'victoria-metrics');

export interface PromSample {
  metric: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

export interface VmOptions {
  port?: number;
  /** -opentelemetry.usePrometheusNaming (unit suffixes appear in names). */
  prometheusNaming?: boolean;
  /** Its own TLS (-tls -tlsCertFile -tlsKeyFile); `ca`: what this helper checks the certificate against. */
  tls?: { cert: string; key: string; ca: string };
  /** -httpAuth.username and -httpAuth.password: basic auth on every endpoint. */
  auth?: { username: string; password: string };
}

export class VictoriaMetrics {
  private proc: ChildProcess | undefined;
  private dir = '';
  private opts: VmOptions = {};
  port = 0;
  log = '';

  async start(opts: VmOptions = {}): Promise<this> {
    if (!existsSync(VM_BIN))
      throw new Error(`VictoriaMetrics not found at ${VM_BIN}: run test/setup/install-test-deps.sh (as root) or set L9GPU_TEST_VM_BIN`);
    this.opts = opts;
    this.port = opts.port ?? (await freePort());
    this.dir = tempDir('l9gpu-vm-');
    const args = [
      `-storageDataPath=${join(this.dir, 'data')}`,
      `-httpListenAddr=127.0.0.1:${this.port}`,
      '-search.latencyOffset=0s',
      '-loggerLevel=ERROR',
      '-search.disableCache',
    ];
    if (opts.prometheusNaming) args.push('-opentelemetry.usePrometheusNaming');
    if (opts.tls) args.push('-tls', `-tlsCertFile=${opts.tls.cert}`, `-tlsKeyFile=${opts.tls.key}`);
    if (opts.auth) args.push(`-httpAuth.username=${opts.auth.username}`, `-httpAuth.password=${opts.auth.password}`);
    this.proc = spawn(VM_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout!.on('data', (d: Buffer) => (this.log += d.toString()));
    this.proc.stderr!.on('data', (d: Buffer) => (this.log += d.toString()));
    await waitFor('VictoriaMetrics /health', async () => (await this.get('/health').catch(() => undefined))?.status === 200, 20_000);
    return this;
  }

  get url(): string {
    return `${this.opts.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /** One GET of this VictoriaMetrics, with its CA and credentials where it has them. */
  async get(pathAndQuery: string): Promise<{ status: number; text: string }> {
    const o = this.opts;
    const mod = o.tls ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.get(
        `${this.url}${pathAndQuery}`,
        {
          ...(o.tls ? { ca: readFileSync(o.tls.ca) } : {}),
          ...(o.auth ? { auth: `${o.auth.username}:${o.auth.password}` } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
    });
  }

  get otlpEndpoint(): string {
    return `${this.url}/opentelemetry/v1/metrics`;
  }

  private async api<T>(path: string, params: Record<string, string | string[]>): Promise<T> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const x of Array.isArray(v) ? v : [v]) q.append(k, x);
    const r = await this.get(`${path}?${q}`);
    const j = JSON.parse(r.text) as { status: string; data: T; error?: string };
    if (j.status !== 'success') throw new Error(`${path}: ${j.error}`);
    return j.data;
  }

  /** Instant query (now, or at timeMs); VictoriaMetrics looks back 5 minutes for the latest point of each series. */
  async query(promql: string, timeMs?: number): Promise<PromSample[]> {
    return (
      await this.api<{ result: PromSample[] }>('/api/v1/query', {
        query: promql,
        ...(timeMs === undefined ? {} : { time: String(timeMs / 1000) }),
      })
    ).result;
  }

  async series(match: string): Promise<Record<string, string>[]> {
    return this.api<Record<string, string>[]>('/api/v1/series', { 'match[]': match, start: String(Math.floor(Date.now() / 1000) - 3600) });
  }

  async names(): Promise<string[]> {
    return this.api<string[]>('/api/v1/label/__name__/values', {});
  }

  /** Raw samples of a selector over the last hour (export API: every stored point, no step alignment). */
  async exportRaw(match: string): Promise<{ metric: Record<string, string>; values: number[]; timestamps: number[] }[]> {
    const { text } = await this.get(
      `/api/v1/export?${new URLSearchParams({ 'match[]': match, start: String(Math.floor(Date.now() / 1000) - 3600) })}`,
    );
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }

  /**
   * VictoriaMetrics' own /metrics (vm_new_timeseries_created_total, process_cpu_seconds_total...), every sample, as
   * of this call: it makes the page at most once a second and answers the last one until then, so a page made
   * after the first answer is waited for (a new page differs from the last: it counts the requests for /metrics).
   */
  async ownMetrics(): Promise<Sample[]> {
    const page = async () => (await this.get('/metrics')).text;
    const cached = await page();
    const text = await waitFor(
      'a /metrics page made after the call',
      async () => {
        const t = await page();
        return t !== cached ? t : undefined;
      },
      10_000,
      100,
    );
    return parseExposition(text).flatMap((f) => f.samples);
  }

  /** Makes just-ingested data visible to queries. */
  async flush(): Promise<void> {
    await this.get('/internal/force_flush');
  }

  async stop(): Promise<void> {
    await stopProcess(this.proc);
    this.proc = undefined;
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
