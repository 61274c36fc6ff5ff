/**
 * Runs a tool (amd-smi, hl-smi, scontrol, sacct, id): no shell, an argument
 * array, a timeout, bounded output, and an error that names the command and
 * says what went wrong. node:child_process rather than execa: importing
 * execa and its dependencies costs the daemon 13 MB of RSS (measured:
 * bare node 43.2 MB, after import('execa') 56.5 MB), a fifth of its budget,
 * for what one spawn() does here.
 */
import type ChildProcess from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { requireBuiltin } from './builtin.js';

const MAX_OUTPUT = 16 * 1024 * 1024;

/** A tool's answer over MAX_OUTPUT: the answer's own size (a caller may pass over that one question), not the tool's failure. */
export class ToolOutputTooLarge extends Error {}

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

/** A GPU vendor's tool where its plugin looks, in words (what says the vendor's GPUs belong here), or undefined. */
export function toolInstalled(command: string, extraDirs: readonly string[]): string | undefined {
  const p = findTool(command, extraDirs);
  return p && `${p} is installed`;
}

/** findTool, or an error that says where it looked and which setting names another place. */
export function requireTool(command: string, extraDirs: readonly string[], setting: string, firstDirs: readonly string[] = []): string {
  const p = findTool(command, extraDirs, firstDirs);
  if (!p) throw new Error(`${command} not found in ${firstDirs.map((d) => `${d}, `).join('')}PATH or ${extraDirs.join(', ')} (${setting})`);
  return p;
}

const MAX_STDERR = 64 * 1024;
/** How long the pipes may stay open after the tool exits (a child it left behind holding them). */
const EXIT_GRACE_MS = 200;

export function runTool(
  path: string,
  args: readonly string[],
  timeoutMs: number,
  signal?: AbortSignal,
  env: Record<string, string> = {},
): Promise<string> {
  const cmd = `${path} ${args.join(' ')}`;
  return new Promise<string>((resolve, reject) => {
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let settled = false;
    // a tool stuck in the kernel may never exit: the answer (an error) does not wait for it
    const finish = (e: Error | null, value = ''): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      signal?.removeEventListener('abort', onAbort);
      if (e) {
        killGroup();
        reject(e);
      } else resolve(value);
    };
    // its own process group: a wrapper script's children (which keep the pipes open) go with it
    const child = (requireBuiltin('node:child_process') as typeof ChildProcess).spawn(path, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C', ...env },
      detached: true,
    });
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* the group is gone already */
      }
    };
    let grace: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => finish(new Error(`${cmd}: no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    const onAbort = (): void => finish(new Error(`${cmd}: cancelled`));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => finish(new Error(`${cmd}: ${e.message}`)));
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (outBytes > MAX_OUTPUT) return finish(new ToolOutputTooLarge(`${cmd}: output larger than ${MAX_OUTPUT} bytes`));
      out.push(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (err.length < MAX_STDERR) err += d;
    });
    const done = (code: number | null, sig: NodeJS.Signals | null): void => {
      const stdout = Buffer.concat(out)
        .toString('utf8')
        .replace(/\r?\n$/, '');
      if (code === 0) {
        finish(null, stdout);
        killGroup();
        return;
      }
      const why = (err || stdout).split('\n').find((l) => l.trim()) ?? '';
      finish(new Error(`${cmd}: ${code !== null ? `exit code ${code}` : `killed by ${sig}`}${why ? `: ${why.trim().slice(0, 200)}` : ''}`));
    };
    child.on('close', done);
    // the tool exited but a child it left holds the pipes open: what was written by then is its answer
    child.on('exit', (code, sig) => {
      grace = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        done(code, sig);
      }, EXIT_GRACE_MS);
    });
  });
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
