/**
 * The real daemon's footprint at a 10 s interval with the host plugin,
 * exporting to a loopback OTLP receiver and serving the Prometheus endpoint
 * (scraped once per tick, gzip asked), on these paths: 8 sim GPUs; the nvml plugin (koffi's
 * async calls) on the fake libnvidia-ml with 8 GPUs; and the
 * same with Slurm attribution (a running job on all 8 GPUs, the store, the
 * rollups, the reconciler and the jobs socket). CPU and RSS from /proc/<pid>.
 * `engine-at-budget` is the hostile suite's case of that name: a vLLM page of
 * as many series as [limits] series_per_endpoint lets through, scraped every
 * second with Slurm attribution, and /metrics read ten times a second.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { buildFakeNvml, fakeDescription } from './nvml.js';
import { openStore } from '../src/store/open.js';
import { recordStart } from '../src/store/jobs.js';
import { slurmControllerDown } from '../test/helpers/slurm-down.js';
import { ROOT } from '../test/helpers/paths.js';
import { freePort } from '../test/helpers/net.js';
import { DEFAULT_LIMITS } from '../src/core/limits.js';

const CLI = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const TICK = Number(process.env.CLK_TCK ?? 100);

/**
 * A process's CPU time (s), RSS and peak RSS (kB), from /proc. The CPU time is the scheduler's own
 * count (`schedstat`, ns) summed over the process's threads: utime + stime in `stat` come in steps of
 * the 10 ms clock tick, as coarse as a whole 10 s tick's work. A thread that ended is in `stat` alone,
 * so where `stat` counts more (past one clock step) it is taken instead.
 */
export function procStat(pid: number): { cpuS: number; rssKb: number; hwmKb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read: stat has it
    }
  }
  const ticks = (Number(f[11]) + Number(f[12])) / TICK;
  return { cpuS: ticks > ns / 1e9 + 1 / TICK ? ticks : ns / 1e9, rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') };
}

export interface DaemonResult {
  seconds: number;
  intervalS: number;
  ticks: number;
  cpuPercentOfOneCore: number;
  cpuMsPerTick: number;
  rssMb: number;
  peakRssMb: number;
  bareNodePeakRssMb: number;
  otlpRequests: number;
  /** The same-run baseline: an idle Node process with the daemon's timer (`setInterval` at the interval), measured over the same window. */
  idleCpuMsPerTick: number;
  idlePeakRssMb: number;
  /** Series on the daemon's last scraped page. */
  series: number;
  /** node_exporter beside the daemon in the same window, scraped alike ({ nodeExporter: true }), or why it did not run. */
  nodeExporter?: PeerResult | { missing: string };
}

/** A peer agent's figures over the daemon's window. */
export interface PeerResult {
  cpuMsPerTick: number;
  peakRssMb: number;
  series: number;
  version: string;
}

/** Debian sid's prometheus-node-exporter, unpacked by test/setup/install-test-deps.sh (never installed). */
export const NODE_EXPORTER = join(ROOT, '.cache', 'sid-peers', 'usr', 'bin', 'prometheus-node-exporter');

/** Series of a Prometheus text page: its sample lines. */
const seriesOf = (page: string): number => page.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;

export interface DaemonOptions {
  /** Node flags for the daemon (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  /** Extra environment for the daemon. */
  env?: NodeJS.ProcessEnv;
  /** Seconds after the start before the measured window (default 5: module loading is a one-off, not steady state). */
  warmupS?: number;
  /** A file for the daemon's stdout and stderr (V8's traces, its log); by default they are dropped. */
  output?: string;
  /** Run node_exporter (its default collectors) beside the daemon, scraped on the daemon's schedule, measured in the same window. */
  nodeExporter?: boolean;
}

export type DaemonPath = 'sim' | 'nvml' | 'nvml+slurm' | 'nvml+engines' | 'engine-at-budget';

/** The page each scraped plugin gets on the nvml+engines path: the largest recorded one of each. */
const ENGINE_PAGES: Record<string, string> = {
  vllm: 'built-vllm-0.10-large',
  sglang: 'built-sglang-collector-00ae9c15',
  tgi: 'tgi-datadog-fixture-excerpt',
  triton: 'triton-datadog-fixture',
  nim: 'nim-llama-3.1-8b-datadog-fixture',
  dcgm: 'built-dcgm-4.5.3-4.8.2-k8s-mig',
};

export async function benchDaemon(seconds = 60, intervalS = 10, path: DaemonPath = 'sim', opts: DaemonOptions = {}): Promise<DaemonResult> {
  let requests = 0;
  const rx = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.end();
    });
  });
  // VictoriaMetrics keeps an idle connection a minute (-http.idleConnTimeout=1m), Node's server 5 s: at a 10 s
  // export interval Node's default would make the daemon connect again for every request, as no backend does
  rx.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
  const rxPort = (rx.address() as AddressInfo).port;
  const promPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-'));
  const cfg = join(dir, 'bench.ini');
  const env: NodeJS.ProcessEnv = { ...process.env };
  let attribution = '';
  let slurm = '';
  if (path !== 'sim') {
    env.L9GPU_NVML_LIBRARY = buildFakeNvml(dir);
    env.FAKE_NVML_CONFIG = join(dir, 'nvml.json');
    env.FAKE_NVML_STATIC = '1';
    writeFileSync(env.FAKE_NVML_CONFIG, JSON.stringify(fakeDescription(8)));
  }
  if (path === 'nvml+slurm' || path === 'engine-at-budget') {
    const down = slurmControllerDown(dir, 'benchnode');
    const db = openStore(down.state);
    const uuids = (fakeDescription(8) as { devices: { uuid: string }[] }).devices.map((d) => ({ uuid: d.uuid, shared: false }));
    recordStart(db, { jobId: '4242', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' }, uuids, 'prolog');
    db.close();
    attribution = down.daemon;
    slurm = down.slurm;
  }
  let engines = '';
  let pages: http.Server | undefined;
  if (path === 'nvml+engines') {
    const text = Object.fromEntries(
      Object.entries(ENGINE_PAGES).map(([p, c]) => [p, readFileSync(join(ROOT, 'plugins', p, 'testdata', c, 'page.prom'))]),
    );
    pages = http.createServer((req, res) => res.end(text[(req.url ?? '/').slice(1)] ?? ''));
    await new Promise<void>((r) => pages!.listen(0, '127.0.0.1', () => r()));
    const port = (pages.address() as AddressInfo).port;
    engines = Object.keys(ENGINE_PAGES)
      .map((p) => `[${p}]\nendpoints = http://127.0.0.1:${port}/${p}\n`)
      .join('');
  }
  if (path === 'engine-at-budget') {
    // the hostile fixture's page (test/fixtures/hostile-user.mjs engine): one family, a series a model
    let text = '# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n';
    for (let i = 0; i < DEFAULT_LIMITS.seriesPerEndpoint - 10; i++)
      text += `vllm:num_requests_running{engine="0",model_name="m${i}"} 1.0\n`;
    const body = Buffer.from(text);
    pages = http.createServer((_req, res) => res.end(body));
    await new Promise<void>((r) => pages!.listen(0, '127.0.0.1', () => r()));
    engines = `[vllm]\nendpoints = http://127.0.0.1:${(pages.address() as AddressInfo).port}/metrics\n`;
  }
  const plugins =
    path === 'sim'
      ? 'sim, host'
      : path === 'nvml+engines'
        ? `nvml, host, ${Object.keys(ENGINE_PAGES).join(', ')}`
        : path === 'engine-at-budget'
          ? 'nvml, host, vllm'
          : 'nvml, host';
  writeFileSync(
    cfg,
    `[daemon]\nplugins = ${plugins}\nsinks = otlp, prometheus\ninterval = ${intervalS}s\n${attribution}[sim]\ngpus ` +
      `= 8\n[otlp]\nendpoint = http://127.0.0.1:${rxPort}/v1/metrics\nexport_interval = ${intervalS}s\n[prometheus]\nhost ` +
      `= 127.0.0.1\nport = ${promPort}\n${slurm}${engines}`,
  );
  // stdout and stderr through one descriptor: two opened on the file would write over each other's lines
  const out = opts.output ? openSync(opts.output, 'w') : undefined;
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), CLI, 'daemon', '--config', cfg], {
    stdio: out === undefined ? 'ignore' : ['ignore', out, out],
    env: { ...env, ...opts.env },
  });
  if (out !== undefined) closeSync(out);
  const pid = child.pid!;
  // the baseline: what Node itself costs to keep a timer of this interval, beside the daemon in the same minutes
  // (it ends itself once its parent is gone: a bench that throws leaves no timer running)
  const idle = spawn(
    process.execPath,
    ['-e', `const p = process.ppid; setInterval(() => { try { process.kill(p, 0); } catch { process.exit(); } }, ${intervalS * 1000})`],
    { stdio: 'ignore' },
  );
  const peer = opts.nodeExporter ? await startNodeExporter() : undefined;
  // scraped once per tick as Prometheus scrapes: gzip asked, the connection kept between scrapes (its client keeps
  // idle connections 5 minutes; Node's default agent drops them after 5 s, which would connect again every scrape)
  const scraper = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const pagesSeen = new Map<number, string>();
  const get = (port: number) =>
    http
      .get(`http://127.0.0.1:${port}/metrics`, { agent: scraper, headers: { 'accept-encoding': 'gzip' } }, (r) => {
        const parts: Buffer[] = [];
        const body = r.headers['content-encoding'] === 'gzip' ? r.pipe(createGunzip()) : r;
        body.on('data', (c: Buffer) => parts.push(c));
        body.on('end', () => pagesSeen.set(port, Buffer.concat(parts).toString()));
        body.on('error', () => {});
      })
      .on('error', () => {});
  const scrape = setInterval(
    () => {
      get(promPort);
      if (peer && 'port' in peer) get(peer.port);
    },
    path === 'engine-at-budget' ? 100 : intervalS * 1000,
  );
  // measure after start-up (module loading is a one-off, not steady state)
  await new Promise((r) => setTimeout(r, (opts.warmupS ?? 5) * 1000));
  const a = procStat(pid);
  const ia = procStat(idle.pid!);
  const pa = peer && 'pid' in peer ? procStat(peer.pid) : undefined;
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const b = procStat(pid);
  const ib = procStat(idle.pid!);
  const pb = peer && 'pid' in peer ? procStat(peer.pid) : undefined;
  const wall = (Date.now() - t0) / 1000;
  clearInterval(scrape);
  scraper.destroy();
  idle.kill('SIGTERM');
  if (peer && 'child' in peer) peer.child.kill('SIGTERM');
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rx.close();
  pages?.close();
  const bare = spawnSync(process.execPath, ['-e', 'console.log(process.resourceUsage().maxRSS)'], { encoding: 'utf8' });
  const ticks = wall / intervalS;
  return {
    seconds: wall,
    intervalS,
    ticks,
    cpuPercentOfOneCore: ((b.cpuS - a.cpuS) / wall) * 100,
    cpuMsPerTick: ((b.cpuS - a.cpuS) * 1000) / ticks,
    rssMb: b.rssKb / 1024,
    peakRssMb: b.hwmKb / 1024,
    bareNodePeakRssMb: Number(bare.stdout.trim()) / 1024,
    otlpRequests: requests,
    idleCpuMsPerTick: ((ib.cpuS - ia.cpuS) * 1000) / ticks,
    idlePeakRssMb: ib.hwmKb / 1024,
    series: seriesOf(pagesSeen.get(promPort) ?? ''),
    ...(peer
      ? {
          nodeExporter:
            'missing' in peer
              ? peer
              : {
                  cpuMsPerTick: ((pb!.cpuS - pa!.cpuS) * 1000) / ticks,
                  peakRssMb: pb!.hwmKb / 1024,
                  series: seriesOf(pagesSeen.get(peer.port) ?? ''),
                  version: peer.version,
                },
        }
      : {}),
  };
}

/** node_exporter on a free loopback port with its default collectors, once it answers; or why it cannot run. */
async function startNodeExporter(): Promise<{ child: ChildProcess; pid: number; port: number; version: string } | { missing: string }> {
  if (!existsSync(NODE_EXPORTER)) return { missing: `${NODE_EXPORTER} not found (bash test/setup/install-test-deps.sh unpacks it)` };
  const v = spawnSync(NODE_EXPORTER, ['--version'], { encoding: 'utf8' });
  const version = /version (\S+)/.exec(`${v.stdout}${v.stderr}`)?.[1] ?? '?';
  const port = await freePort();
  const child = spawn(NODE_EXPORTER, [`--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((r) =>
      http
        .get(`http://127.0.0.1:${port}/metrics`, (res) => {
          res.resume();
          r(res.statusCode === 200);
        })
        .on('error', () => r(false)),
    );
    if (up) return { child, pid: child.pid!, port, version };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  return { missing: 'node_exporter did not answer in 10 s' };
}
