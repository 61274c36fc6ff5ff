/**
 * The real daemon's footprint: 8 sim GPUs plus the host plugin at a 10 s
 * interval, exporting to a loopback OTLP receiver and serving the Prometheus
 * endpoint (scraped every 15 s). CPU and RSS are read from /proc/<pid>.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const TICK = Number(process.env.CLK_TCK ?? 100);

function procStat(pid: number): { cpuS: number; rssKb: number; hwmKb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { cpuS: (Number(f[11]) + Number(f[12])) / TICK, rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') };
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
}

export async function benchDaemon(seconds = 60, intervalS = 10): Promise<DaemonResult> {
  let requests = 0;
  const rx = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.end();
    });
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
  const rxPort = (rx.address() as AddressInfo).port;
  const promPort = await new Promise<number>((r) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-'));
  const cfg = join(dir, 'bench.ini');
  writeFileSync(cfg, `[daemon]\nplugins = sim, host\nsinks = otlp, prometheus\ninterval = ${intervalS}s\n[sim]\ngpus = 8\n[otlp]\nendpoint = http://127.0.0.1:${rxPort}/v1/metrics\nexport_interval = ${intervalS}s\n[prometheus]\nhost = 127.0.0.1\nport = ${promPort}\n`);
  const child = spawn(process.execPath, [CLI, 'daemon', '--config', cfg], { stdio: 'ignore' });
  const pid = child.pid!;
  const scrape = setInterval(() => http.get(`http://127.0.0.1:${promPort}/metrics`, (r) => r.resume()).on('error', () => {}), 15_000);
  // measure after start-up (module loading is a one-off, not steady state)
  await new Promise((r) => setTimeout(r, 5000));
  const a = procStat(pid);
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const b = procStat(pid);
  const wall = (Date.now() - t0) / 1000;
  clearInterval(scrape);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rx.close();
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
  };
}
