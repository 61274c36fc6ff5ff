/**
 * Runs a vendor tool (amd-smi, hl-smi) with execa: no shell, an argument
 * array, a timeout, bounded output, and an error that names the command and
 * says what went wrong.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const MAX_OUTPUT = 16 * 1024 * 1024;

/** Finds a command in PATH plus extra folders (slurmd and systemd give a short PATH). */
export function findTool(command: string, extraDirs: readonly string[] = [], firstDirs: readonly string[] = []): string | undefined {
  if (command.includes('/')) return existsSync(command) ? command : undefined;
  // a folder the admin configured wins over PATH; the usual install folders come after it
  const dirs = [...firstDirs, ...(process.env.PATH ?? '').split(delimiter), ...extraDirs].filter(Boolean);
  for (const d of dirs) {
    const p = join(d, command);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/** findTool, or an error that says where it looked and which setting names another place. */
export function requireTool(command: string, extraDirs: readonly string[], setting: string, firstDirs: readonly string[] = []): string {
  const p = findTool(command, extraDirs, firstDirs);
  if (!p) throw new Error(`${command} not found in ${firstDirs.map((d) => `${d}, `).join('')}PATH or ${extraDirs.join(', ')} (${setting})`);
  return p;
}

export async function runTool(path: string, args: readonly string[], timeoutMs: number, signal?: AbortSignal, env: Record<string, string> = {}): Promise<string> {
  const cmd = `${path} ${args.join(' ')}`;
  // loaded on first use: execa and its dependencies cost a daemon without vendor tools ~15 MB of RSS
  const { execa } = await import('execa');
  let r;
  try {
    r = await execa(path, args, { timeout: timeoutMs, maxBuffer: MAX_OUTPUT, reject: false, stdin: 'ignore', cancelSignal: signal, env: { LC_ALL: 'C', ...env } });
  } catch (e) {
    throw new Error(`${cmd}: ${(e as Error).message}`);
  }
  if (r.timedOut) throw new Error(`${cmd}: no answer within ${timeoutMs / 1000} s`);
  if (r.isMaxBuffer) throw new Error(`${cmd}: output larger than ${MAX_OUTPUT} bytes`);
  if (r.failed || r.exitCode !== 0) {
    const why = (r.stderr || r.stdout || '').split('\n').find((l) => l.trim()) ?? r.shortMessage ?? '';
    throw new Error(`${cmd}: ${r.exitCode !== undefined ? `exit code ${r.exitCode}` : 'failed'}${why ? `: ${why.trim().slice(0, 200)}` : ''}`);
  }
  return r.stdout;
}

/**
 * Awaits every promise; on failure throws the first failure in argument
 * order, not in time order, so a tool failing the same way every tick gives
 * the same error every tick (and is logged once, not once per race winner).
 */
export async function allInOrder<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
