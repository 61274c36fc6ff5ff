/**
 * The light entry of `l9gpu daemon`: parses the same flags as the oclif
 * command with node:util and starts the daemon without loading oclif, which
 * would cost the long-running process ~12 MB of RSS for nothing. Help goes
 * through oclif (bin/run.js routes --help there).
 */
import { parseArgs } from 'node:util';
import { DAEMON_FLAGS, type DaemonFlags } from './daemon-flags.js';
import { parseArgsOptions, typedFlags, type FlagSpec } from './flag-spec.js';
import { runDaemon } from './run-daemon.js';

export async function main(argv: string[]): Promise<never> {
  let flags: DaemonFlags;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: parseArgsOptions(DAEMON_FLAGS),
    });
    if (positionals.length) throw new Error(`unexpected argument: ${positionals[0]}`);
    const parsed: Record<string, unknown> = { ...values };
    const specs: readonly FlagSpec[] = DAEMON_FLAGS;
    for (const f of specs) {
      const v = parsed[f.name];
      if (f.multiple && Array.isArray(v)) parsed[f.name] = v.flatMap((x: string) => x.split(',')).filter(Boolean);
      if (f.options && typeof v === 'string' && !f.options.includes(v))
        throw new Error(`--${f.name}: "${v}" is not one of ${f.options.join(', ')}`);
    }
    flags = typedFlags(DAEMON_FLAGS, parsed);
  } catch (e) {
    process.stderr.write(`l9gpu: ${(e as Error).message.replace(/\. To specify.*$/s, '')} (see l9gpu daemon --help)\n`);
    process.exit(2);
  }
  return runDaemon(flags);
}
