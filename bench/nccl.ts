/**
 * The NCCL Inspector plugin's figures (issue 14).
 *
 * Tailer: a rank log of `lines` Inspector JSON lines (the 2.30.3 fixture's
 * collectives and point-to-point operations, sequence numbers advanced each
 * round so every line is a distinct operation), read by NcclPlugin.collect()
 * on a folder as the daemon does (FileTail + parseInspectorLine + Aggregator,
 * collections until caught up); FileTail alone (read + split into lines);
 * and, the same run and file, Node's own readFileSync().toString().split()
 * with and without JSON.parse per line, the platform's rate for the same work.
 *
 * Daemon: the real daemon with only the nccl plugin (10 s interval, OTLP to a
 * loopback receiver and the Prometheus endpoint), while this process appends
 * 1,000 lines/s to 8 rank logs (the 2.28.3 8-rank fixture, 125 lines/s each,
 * every 100 ms), beside the same daemon on an empty folder (idle). CPU and RSS
 * from /proc/<pid>, over a whole number of export intervals.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../src/core/log.js';
import { PointBuffer } from '../src/core/metrics/model.js';
import { NcclPlugin } from '../plugins/nccl/index.js';
import { FileTail } from '../plugins/nccl/tail.js';
import { ROOT } from '../test/helpers/paths.js';
import { freePort } from '../test/helpers/net.js';
import { procStat } from './daemon.js';

const CLI = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const TESTDATA = join(ROOT, 'plugins', 'nccl', 'testdata');

function fixture(dir: string, file: string): string[] {
  return readFileSync(join(TESTDATA, dir, file), 'utf8')
    .split('\n')
    .filter(Boolean);
}

/** A fixture line as a line of this host's process `pid`, its sequence number advanced by `snAdd`, written at `us`. */
function relabel(line: string, host: string, pid: number, snAdd: number, us: number): string {
  return line
    .replace(/"(coll|p2p)_sn":(\d+)/, (_m, k: string, n: string) => `"${k}_sn":${Number(n) + snAdd}`)
    .replace(/"dump_timestamp_us":\d+/, `"dump_timestamp_us":${us}`)
    .replace(/"hostname":"[^"]*"/, `"hostname":${JSON.stringify(host)}`)
    .replace(/"pid":\d+/, `"pid":${pid}`);
}

export interface NcclTailBench {
  lines: number;
  bytes: number;
  /** NcclPlugin.collect(): FileTail + parseInspectorLine + Aggregator, the daemon's path. */
  pluginLinesPerSecond: number;
  collects: number;
  /** Operations the plugin counted (nccl.operations): each line once. */
  operations: number;
  /** FileTail.poll() alone: read and split into strings. */
  tailLinesPerSecond: number;
  /** readFileSync().toString().split('\n') + JSON.parse per line (baseline). */
  nodeParseLinesPerSecond: number;
  /** readFileSync().toString().split('\n') alone (baseline of FileTail alone). */
  nodeSplitLinesPerSecond: number;
}

/** Lines per second of the tailer path over a `lines`-line rank log, best of `rounds` interleaved rounds. */
export async function benchNcclTail(lines = 500_000, rounds = 3): Promise<NcclTailBench> {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-nccl-'));
  const host = hostname();
  const pid = 2210437;
  const path = join(dir, `${host}-pid${pid}.log`);
  const tpl = fixture('v2.30.3-json-8rank-p2p', 'node01-pid2210437.log');
  const fd = openSync(path, 'w');
  const t0us = Date.now() * 1000;
  for (let i = 0; i < lines;) {
    const chunk: string[] = [];
    for (const end = Math.min(lines, i + 10_000); i < end; i++)
      chunk.push(relabel(tpl[i % tpl.length]!, host, pid, Math.floor(i / tpl.length) * tpl.length, t0us + i * 40));
    writeSync(fd, chunk.join('\n') + '\n');
  }
  closeSync(fd);
  const bytes = readFileSync(path).length;
  const log = createLogger('error', () => {});
  let plugin = 0;
  let tail = 0;
  let nodeParse = 0;
  let nodeSplit = 0;
  let collects = 0;
  let operations = 0;
  try {
    for (let r = 0; r < rounds; r++) {
      {
        const p = new NcclPlugin(
          { paths: [dir], discover: false, maxFileAgeMs: Infinity, maxSeries: 20_000, window: 256, hostNames: [host] },
          log,
        );
        const ops = (out: PointBuffer) => out.points.reduce((a, x) => a + (x.metric.name === 'nccl.operations' ? x.value : 0), 0);
        let n = 0;
        let done = 0;
        const t = performance.now();
        // the plugin reads a bounded amount per collection (64 MiB): collected until every line is counted
        while (done < lines && n < 100_000) {
          const out = new PointBuffer();
          await p.collect(out);
          n++;
          done = ops(out);
        }
        const s = (performance.now() - t) / 1000;
        p.close();
        if (done !== lines) throw new Error(`the plugin counted ${done} operations of ${lines} lines`);
        plugin = Math.max(plugin, lines / s);
        collects = n;
        operations = done;
      }
      {
        // opened as the plugin opens a log: 512 KiB a poll
        const ft = new FileTail(path, { maxLine: 256 << 10, maxRead: 512 << 10 });
        let n = 0;
        const t = performance.now();
        for (;;) {
          const got = ft.poll().lines.length;
          if (!got) break;
          n += got;
        }
        const s = (performance.now() - t) / 1000;
        ft.close();
        if (n !== lines) throw new Error(`FileTail read ${n} lines of ${lines}`);
        tail = Math.max(tail, lines / s);
      }
      {
        const t = performance.now();
        const all = readFileSync(path).toString().split('\n');
        let n = 0;
        for (const l of all) if (l) n += JSON.parse(l) ? 1 : 0;
        const s = (performance.now() - t) / 1000;
        if (n !== lines) throw new Error(`baseline parsed ${n} lines of ${lines}`);
        nodeParse = Math.max(nodeParse, lines / s);
      }
      {
        const t = performance.now();
        const n = readFileSync(path).toString().split('\n').length - 1;
        const s = (performance.now() - t) / 1000;
        if (n !== lines) throw new Error(`baseline split ${n} lines of ${lines}`);
        nodeSplit = Math.max(nodeSplit, lines / s);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    lines,
    bytes,
    pluginLinesPerSecond: plugin,
    collects,
    operations,
    tailLinesPerSecond: tail,
    nodeParseLinesPerSecond: nodeParse,
    nodeSplitLinesPerSecond: nodeSplit,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One daemon with only the nccl plugin on `folder`, its OTLP requests counted as they come. */
class NcclDaemon {
  private readonly rx: http.Server;
  private readonly child: ReturnType<typeof spawn>;
  private waiters: (() => void)[] = [];
  requests = 0;

  private constructor(
    rx: http.Server,
    child: ReturnType<typeof spawn>,
    readonly promPort: number,
  ) {
    this.rx = rx;
    this.child = child;
  }

  static async start(dir: string, folder: string, intervalS: number): Promise<NcclDaemon> {
    let d: NcclDaemon | undefined;
    const rx = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.end();
        if (!d) return;
        d.requests++;
        const w = d.waiters;
        d.waiters = [];
        for (const f of w) f();
      });
    });
    await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
    const rxPort = (rx.address() as AddressInfo).port;
    const promPort = await freePort();
    const cfg = join(dir, 'daemon.ini');
    writeFileSync(
      cfg,
      `[daemon]\nplugins = nccl\nsinks = otlp, prometheus\ninterval = ${intervalS}s\nstate_dir = ${join(dir, 'state')}\n` +
        `[otlp]\nendpoint = http://127.0.0.1:${rxPort}/v1/metrics\nexport_interval = ${intervalS}s\n` +
        `[prometheus]\nhost = 127.0.0.1\nport = ${promPort}\n[nccl]\npaths = ${folder}\ndiscover = false\n`,
    );
    const child = spawn(process.execPath, [CLI, 'daemon', '--config', cfg], { stdio: 'ignore' });
    d = new NcclDaemon(rx, child, promPort);
    return d;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves at the next OTLP request (an export: the same number of collections between two of them), or after `ms`. */
  nextExport(ms: number): Promise<void> {
    return new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      this.waiters.push(() => {
        clearTimeout(t);
        r();
      });
    });
  }

  /** The sum of nccl_operations over the Prometheus page: the lines the daemon counted. */
  async operations(): Promise<number> {
    const page = await new Promise<string>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${this.promPort}/metrics`, (res) => {
          let s = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (s += c));
          res.on('end', () => resolve(s));
        })
        .on('error', reject);
    });
    let n = 0;
    for (const m of page.matchAll(/^nccl_operations(?:_total)?(?:\{[^}]*\})? (\S+)/gm)) n += Number(m[1]);
    return n;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      await exited;
    }
    this.rx.close();
  }
}

/** Appends `perSecond` lines a second, spread over the 8 rank logs of the 2.28.3 8-rank fixture, every 100 ms. */
function startWriter(folder: string, perSecond: number): { stop(): void; written(): number } {
  const host = hostname();
  const ranks = Array.from({ length: 8 }, (_, r) => {
    const pid = 1639450 + r;
    return {
      pid,
      tpl: fixture('v2.28.3-json-8rank', `node01-pid${pid}.log`),
      fd: openSync(join(folder, `${host}-pid${pid}.log`), 'a'),
      n: 0,
    };
  });
  const t0 = performance.now();
  const each = perSecond / ranks.length;
  const tick = () => {
    const due = Math.floor(((performance.now() - t0) / 1000) * each);
    const us = Date.now() * 1000;
    for (const k of ranks) {
      const out: string[] = [];
      // sequence numbers run 0..11 per collective in the fixture: advanced by 12 each round
      for (; k.n < due; k.n++) out.push(relabel(k.tpl[k.n % k.tpl.length]!, host, k.pid, Math.floor(k.n / k.tpl.length) * 12, us));
      if (out.length) writeSync(k.fd, out.join('\n') + '\n');
    }
  };
  const timer = setInterval(tick, 100);
  return {
    stop() {
      clearInterval(timer);
      for (const k of ranks) closeSync(k.fd);
    },
    written: () => ranks.reduce((a, k) => a + k.n, 0),
  };
}

export interface NcclDaemonSide {
  cpuPercentOfOneCore: number;
  cpuMsPerTick: number;
  rssMb: number;
  peakRssMb: number;
  /** Operations the daemon counted (its Prometheus page) at the end. */
  operations: number;
}

export interface NcclDaemonBench {
  seconds: number;
  intervalS: number;
  ticks: number;
  linesPerSecond: number;
  linesWritten: number;
  loaded: NcclDaemonSide;
  idle: NcclDaemonSide;
}

/**
 * Two daemons side by side (the same seconds, the same machine state): one
 * following 8 rank logs that grow by `linesPerSecond`, one on an empty folder.
 * Each is measured over the whole export intervals nearest `seconds`, after 5 s
 * of start-up.
 */
export async function benchNcclDaemon(seconds = 60, intervalS = 10, linesPerSecond = 1000): Promise<NcclDaemonBench> {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-nccl-'));
  const busy = join(dir, 'busy');
  const empty = join(dir, 'idle');
  for (const d of [busy, empty, join(dir, 'a'), join(dir, 'b')]) mkdirSync(d);
  const writer = startWriter(busy, linesPerSecond);
  const loaded = await NcclDaemon.start(join(dir, 'a'), busy, intervalS);
  const idle = await NcclDaemon.start(join(dir, 'b'), empty, intervalS);
  try {
    await sleep(5000);
    const ticks = Math.max(1, Math.round(seconds / intervalS));
    const measure = async (d: NcclDaemon) => {
      await d.nextExport(2 * intervalS * 1000);
      const a = procStat(d.pid);
      const t0 = performance.now();
      for (let i = 0; i < ticks; i++) await d.nextExport(2 * intervalS * 1000);
      const b = procStat(d.pid);
      return { a, b, wall: (performance.now() - t0) / 1000 };
    };
    const [l, i] = await Promise.all([measure(loaded), measure(idle)]);
    const side = async (d: NcclDaemon, m: Awaited<ReturnType<typeof measure>>): Promise<NcclDaemonSide> => ({
      cpuPercentOfOneCore: ((m.b.cpuS - m.a.cpuS) / m.wall) * 100,
      cpuMsPerTick: ((m.b.cpuS - m.a.cpuS) * 1000) / ticks,
      rssMb: m.b.rssKb / 1024,
      peakRssMb: m.b.hwmKb / 1024,
      operations: await d.operations(),
    });
    const loadedSide = await side(loaded, l);
    const idleSide = await side(idle, i);
    return {
      seconds: (l.wall + i.wall) / 2,
      intervalS,
      ticks,
      linesPerSecond,
      linesWritten: writer.written(),
      loaded: loadedSide,
      idle: idleSide,
    };
  } finally {
    writer.stop();
    await loaded.stop();
    await idle.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
