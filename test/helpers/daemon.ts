/** Runs the real CLI as a child process and watches its output. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findMetric, type MetricKind } from '../../src/core/metrics/registry.js';
import { PRODUCT, tempDir } from './paths.js';
import { waitFor } from './wait.js';

export interface JsonPoint {
  time: string;
  name: string;
  unit: string;
  kind: 'gauge' | 'sum' | 'histogram';
  monotonic?: boolean;
  /** A histogram's count. */
  value: number;
  /** Histograms only: the sum of the observations, the bounds, the per-bucket (not cumulative) counts, one more than the bounds. */
  sum?: number;
  bounds?: number[];
  counts?: number[];
  attributes: Record<string, string | number | boolean>;
  resource?: Record<string, string | number | boolean>;
}

/** An empty config file, so that tests never read the machine's /etc/l9gpu/l9gpu.ini. */
export const EMPTY_CONFIG = join(tempDir('l9gpu-empty-'), 'empty.ini');
writeFileSync(EMPTY_CONFIG, '; intentionally empty: embedded defaults\n');

let ownState: string | undefined;

/**
 * Called at the top of a file that runs beside others (the system lane): its daemons and CLI children keep their
 * state (the daemon's lock, store, socket) in one temporary folder of this test process instead of the node's
 * default /var/lib/l9gpu, wherever neither the child's environment nor its configuration file names a state_dir.
 * The folder is returned. A file that tests the node's default folder itself does not call it.
 */
export function ownStateDir(): string {
  ownState ??= tempDir('l9gpu-state-');
  return ownState;
}

/**
 * A CLI child's environment (cleanEnv): the config a --config argument names replaces L9GPU_CONFIG, and the file's
 * own state folder (ownStateDir) is added unless the environment or that config names a state_dir.
 */
function childEnv(args: string[], extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = cleanEnv(extra);
  const at = Math.max(args.indexOf('--config'), args.indexOf('-c'));
  if (at >= 0) delete env.L9GPU_CONFIG;
  if (!ownState || env.L9GPU_STATE_DIR !== undefined) return env;
  const config = at >= 0 ? args[at + 1] : env.L9GPU_CONFIG;
  if (config && existsSync(config) && /^\s*state_dir\s*=/m.test(readFileSync(config, 'utf8'))) return env;
  return { ...env, L9GPU_STATE_DIR: ownState };
}

/** Environment for a child: no OTEL_* or L9GPU_* leaking in from the caller's shell. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('OTEL_') && !k.startsWith('L9GPU_') && !k.startsWith('SLURM')) env[k] = v;
  return { ...env, L9GPU_CONFIG: EMPTY_CONFIG, ...extra };
}

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `l9gpu <args>` to completion, on an empty config unless the test sets
 * L9GPU_CONFIG or passes --config. Asynchronous: loopback peers served by the
 * test process itself must keep answering while the CLI runs.
 */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(PRODUCT.node, [PRODUCT.cli, ...args], { env: childEnv(args, env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`l9gpu ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The JSON-lines kind of a registry kind: an up-down sum is a sum whose monotonic is false. */
export function jsonKind(kind: MetricKind): JsonPoint['kind'] {
  return kind === 'gauge' || kind === 'histogram' ? kind : 'sum';
}

/**
 * Parses JSON lines and checks each against the registry: a known name, the
 * registry's unit and kind, a histogram's buckets whole (and only a
 * histogram's). Every test that reads points checks this.
 */
export function parseLines(stdout: string): JsonPoint[] {
  const pts = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as JsonPoint);
  for (const p of pts) {
    const def = findMetric(p.name);
    if (!def) throw new Error(`point with a name not in the registry: ${p.name}`);
    if (p.unit !== def.unit) throw new Error(`${p.name}: unit ${p.unit}, the registry says ${def.unit}`);
    if (p.kind !== jsonKind(def.kind)) throw new Error(`${p.name}: kind ${p.kind}, the registry says ${def.kind}`);
    if (p.kind !== 'histogram') {
      if ('sum' in p || 'bounds' in p || 'counts' in p) throw new Error(`${p.name}: a ${p.kind} with histogram fields`);
    } else if (
      typeof p.sum !== 'number' ||
      !Array.isArray(p.bounds) ||
      !Array.isArray(p.counts) ||
      p.counts.length !== p.bounds.length + 1 ||
      p.counts.reduce((a, b) => a + b, 0) !== p.value
    ) {
      throw new Error(
        `${p.name}: histogram fields do not fit: ${JSON.stringify({ value: p.value, sum: p.sum, bounds: p.bounds, counts: p.counts })}`,
      );
    }
  }
  return pts;
}

/**
 * The points a file sink has written so far, read incrementally: a test that
 * polls every 25 ms parses only the lines appended since its last look (the
 * file of a long suite reaches tens of MB), whole lines only. A rotated file
 * (a new inode, or shorter than what was read) is read from its start again,
 * as a fresh read of the path would.
 */
export class PointsFile {
  private parsed: JsonPoint[] = [];
  private readTo = 0;
  private ino = -1;

  constructor(readonly path: string) {}

  points(): JsonPoint[] {
    const fd = openSync(this.path, 'r');
    try {
      const st = fstatSync(fd);
      if (st.ino !== this.ino || st.size < this.readTo) {
        this.parsed = [];
        this.readTo = 0;
        this.ino = st.ino;
      }
      if (st.size > this.readTo) {
        const buf = Buffer.alloc(st.size - this.readTo);
        const n = readSync(fd, buf, 0, buf.length, this.readTo);
        const end = buf.subarray(0, n).lastIndexOf(0x0a) + 1;
        if (end > 0) {
          for (const p of parseLines(buf.toString('utf8', 0, end))) this.parsed.push(p);
          this.readTo += end;
        }
      }
    } finally {
      closeSync(fd);
    }
    return this.parsed;
  }
}

export class DaemonProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  exit: Promise<number | null>;
  readonly startedAt = Date.now();

  constructor(args: string[], env: Record<string, string> = {}) {
    this.child = spawn(PRODUCT.node, [PRODUCT.cli, 'daemon', ...args], { env: childEnv(args, env), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exit = new Promise((r) =>
      this.child.on('exit', (code, signal) => {
        // a daemon ended by a signal has no exit code: the assertions on it show stderr, which then says which
        if (signal)
          this.stderr += `\n[test helper: the daemon was ended by ${signal}${
            this.stopping ? ` after the helper sent ` + `${this.stopping}` : ''
          }]\n`;
        r(code);
      }),
    );
  }

  /** The signal stop() sent, if it did. */
  private stopping: NodeJS.Signals | undefined;

  /**
   * Waits for a line matching re, written after `since` (an earlier stderr.length:
   * what a test caused, not an older line that happens to match). A failure
   * shows the end of what the daemon said instead.
   */
  waitStderr(re: RegExp, timeoutMs = 15_000, since = 0): Promise<RegExpMatchArray> {
    return waitFor(
      `stderr matching ${re}${since ? ` after its first ${since} characters` : ''}`,
      () => this.stderr.slice(since).match(re) ?? undefined,
      timeoutMs,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; the daemon's stderr ends:\n${this.stderr.slice(-3000)}`);
    });
  }

  /** The daemon's peak resident memory so far (VmHWM), in MB: a fault must not grow it past the daemon's bound. */
  peakRssMb(): number {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  }

  private parsed: JsonPoint[] = [];
  private parsedTo = 0;

  /** Every point written so far; each call parses only the lines written since the last (stdout only grows). */
  points(): JsonPoint[] {
    const end = this.stdout.lastIndexOf('\n') + 1;
    if (end > this.parsedTo) {
      for (const p of parseLines(this.stdout.slice(this.parsedTo, end))) this.parsed.push(p);
      this.parsedTo = end;
    }
    return this.parsed;
  }

  /**
   * The whole lines written since `mark` (an earlier stdout.length). A mark taken
   * while a line was half written starts at the next line: the half would not parse.
   */
  pointsSince(mark: number): JsonPoint[] {
    let start = 0;
    if (mark > 0) {
      const nl = this.stdout.indexOf('\n', mark - 1);
      if (nl < 0) return [];
      start = nl + 1;
    }
    const end = this.stdout.lastIndexOf('\n') + 1;
    return end > start ? parseLines(this.stdout.slice(start, end)) : [];
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    // a daemon stopped a moment after its spawn (a loaded machine, a test whose condition an earlier daemon's file
    // met) dies by the signal's default action before its handler is there (Node's own, from its start, re-raises
    // it): wait for its start line, as systemd's stop finds a started service; 10 s at most, for a daemon that
    // logs above info
    if (signal === 'SIGTERM' || signal === 'SIGINT')
      await waitFor(
        `the daemon (pid ${this.child.pid}) started`,
        () => this.child.exitCode !== null || this.child.signalCode !== null || /l9gpu daemon started/.test(this.stderr) || undefined,
        10_000,
      ).catch(() => undefined);
    if (this.child.exitCode !== null) return this.child.exitCode;
    this.stopping = signal;
    this.child.kill(signal);
    const t = setTimeout(() => {
      this.stopping = 'SIGKILL';
      this.child.kill('SIGKILL');
    }, timeoutMs);
    const code = await this.exit;
    clearTimeout(t);
    return code;
  }
}
