/** One error path for every command: a CliError (or a ConfigError, exit 2) is one line on stderr and an exit code. */
import { ConfigError } from '../core/config/schema.js';
import { clip, printable, printableLines } from '../core/printable.js';

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** The asker may not see it: final, not a reason to look elsewhere (Slurm accounting, a backend). */
export class AccessDenied extends CliError {
  constructor(message: string) {
    super(message, 1);
  }
}

/** The error as a CliError when it is one the user can act on (bad config: exit 2); undefined for a bug. */
export function asCliError(e: unknown): CliError | undefined {
  if (e instanceof CliError) return e;
  if (e instanceof ConfigError) return new CliError(e.message, 2);
  return undefined;
}

export function printCliError(e: CliError): void {
  // a message may quote what a user wrote (a job name sacct printed, a label a backend returned): no escape reaches the terminal
  process.stderr.write(`l9gpu: ${printableLines(e.message)}\n`);
}

/**
 * A bug's error as one line: what it says and where it was thrown. Node's own
 * report of an uncaught error quotes the source line, and in the light CLI's
 * bundle (minified) that line is the whole file: tens of kilobytes of code.
 */
export function internalErrorLine(e: unknown): string {
  const err = e instanceof Error ? e : new Error(String(e));
  const frames = [...(err.stack ?? '').matchAll(/\n\s+at (.+)/g)].map((m) => m[1]!);
  // the first frame in l9gpu's code, not in the runtime (JSON.parse (<anonymous>), node:internal/...)
  const at = frames.find((f) => !/<anonymous>|\(node:|^node:/.test(f)) ?? frames[0];
  return `l9gpu: internal error (a bug: please report this line): ${err.name}: ${printable(clip(err.message, 300))}${
    at ? ` (at ` + `${printable(clip(at, 200))})` : ''
  }`;
}

/** Runs a command body; a CliError or ConfigError becomes one line on stderr and its exit code. */
export async function reportingCliErrors(exit: (code: number) => never, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (e) {
    const c = asCliError(e);
    if (!c) throw e;
    printCliError(c);
    exit(c.exitCode);
  }
}
