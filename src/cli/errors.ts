/** One error path for every command: a CliError (or a ConfigError, exit 2) is one line on stderr and an exit code. */
import { ConfigError } from '../core/config/schema.js';

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
  process.stderr.write(`l9gpu: ${e.message}\n`);
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
