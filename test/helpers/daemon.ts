/** Runs the real CLI as a child process and watches its output. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { CLI } from './paths.js';
import { waitFor } from './wait.js';

export interface JsonPoint {
  time: string;
  name: string;
  unit: string;
  kind: 'gauge' | 'sum';
  monotonic?: boolean;
  value: number;
  attributes: Record<string, string | number | boolean>;
  resource?: Record<string, string | number | boolean>;
}

/** Environment for a child: no OTEL_* or L9GPU_* leaking in from the caller's shell. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OTEL_') && !k.startsWith('L9GPU_') && !k.startsWith('SLURM')) env[k] = v;
  return { ...env, L9GPU_CONFIG: '/nonexistent/l9gpu-test-has-no-config.ini', ...extra };
}

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `l9gpu <args>` to completion. L9GPU_CONFIG points nowhere unless a test sets it or passes --config. */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): RunResult {
  const e = cleanEnv(env);
  if (args.includes('--config') || args.includes('-c')) delete e.L9GPU_CONFIG;
  const r = spawnSync(process.execPath, [CLI, ...args], { env: e, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function parseLines(stdout: string): JsonPoint[] {
  return stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as JsonPoint);
}

export class DaemonProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  exit: Promise<number | null>;

  constructor(args: string[], env: Record<string, string> = {}) {
    const e = cleanEnv(env);
    if (args.includes('--config') || args.includes('-c')) delete e.L9GPU_CONFIG;
    this.child = spawn(process.execPath, [CLI, 'daemon', ...args], { env: e, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exit = new Promise((r) => this.child.on('exit', (code) => r(code)));
  }

  waitStderr(re: RegExp, timeoutMs = 15_000): Promise<RegExpMatchArray> {
    return waitFor(`stderr matching ${re}`, () => this.stderr.match(re) ?? undefined, timeoutMs);
  }

  points(): JsonPoint[] {
    const end = this.stdout.lastIndexOf('\n');
    return end < 0 ? [] : parseLines(this.stdout.slice(0, end));
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    this.child.kill(signal);
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const code = await this.exit;
    clearTimeout(t);
    return code;
  }
}
