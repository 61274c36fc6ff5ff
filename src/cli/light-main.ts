/**
 * The light entry of the CLI, bundled by esbuild into dist/src/cli/light.cjs:
 * the commands people type all day (--version, jobs, jobs show, gpus, health, doctor) run from one
 * pre-bundled file without the CLI framework, so they start about as fast as
 * node itself. It runs a command only when every argument parses; anything
 * else (--help, a typo, an unknown flag) goes to the oclif CLI, which says
 * what is wrong and shows the help.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { useNativeBinding } from '../store/open.js';
import { VERSION } from '../core/resource.js';
import { asCliError, internalErrorLine, printCliError } from './errors.js';
import { checkFlags, parseArgsOptions, type FlagSpec, type FlagValues } from './flag-spec.js';
import { JOBS_FLAGS, JOBS_SHOW_FLAGS, jobsList, jobsShow } from './jobs-commands.js';
import { DOCTOR_FLAGS } from './doctor-flags.js';
import { GPUS_FLAGS } from './gpus-flags.js';
import { HEALTH_FLAGS } from './health-flags.js';
import { CTLD_EPILOG_FLAGS } from './ctld-epilog-flags.js';

interface LightCommand {
  words: readonly string[];
  flags: readonly FlagSpec[];
  args: number;
  /** Resolves to the exit code (undefined: 0). */
  run(flags: FlagValues, args: string[]): Promise<number | void>;
}

// longest first: "jobs show" before "jobs"
const COMMANDS: readonly LightCommand[] = [
  { words: ['jobs', 'show'], flags: JOBS_SHOW_FLAGS, args: 1, run: (f, a) => jobsShow(a[0]!, f) },
  { words: ['jobs'], flags: JOBS_FLAGS, args: 0, run: (f) => jobsList(f) },
  // Kubernetes mode's names of the same two
  { words: ['pods', 'show'], flags: JOBS_SHOW_FLAGS, args: 1, run: (f, a) => jobsShow(a[0]!, f) },
  { words: ['pods'], flags: JOBS_FLAGS, args: 0, run: (f) => jobsList(f) },
  // loaded when asked for: they bring every plugin and sink, which jobs never needs
  { words: ['gpus'], flags: GPUS_FLAGS, args: 0, run: async (f) => (await import('./gpus-command.js')).gpus(f) },
  { words: ['slurm', 'ctld-epilog'], flags: CTLD_EPILOG_FLAGS, args: 0, run: async (f) => (await import('./ctld-epilog-command.js')).ctldEpilog(f) },
  { words: ['health'], flags: HEALTH_FLAGS, args: 0, run: async (f) => (await import('./health-command.js')).health(f) },
  { words: ['doctor'], flags: DOCTOR_FLAGS, args: 0, run: async (f) => (await import('./doctor-command.js')).doctor(f) },
];

/** Runs the command and resolves to its exit code, or to undefined: not one this entry takes (oclif does). */
export async function runLight(argv: readonly string[]): Promise<number | undefined> {
  if (argv.includes('--help') || argv.includes('-h')) return undefined;
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    // the line oclif prints
    process.stdout.write(`l9gpu/${VERSION} ${process.platform}-${process.arch} node-${process.version}\n`);
    return 0;
  }
  const cmd = COMMANDS.find((c) => c.words.every((w, i) => argv[i] === w));
  if (!cmd) return undefined;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv.slice(cmd.words.length), options: parseArgsOptions(cmd.flags), allowPositionals: true, strict: true });
  } catch {
    return undefined;
  }
  const flags = checkFlags(cmd.flags, parsed.values);
  if (!flags || parsed.positionals.length !== cmd.args) return undefined;
  // from here the process is this command's: an error thrown where nothing awaits it is a bug said in one line too
  process.on('uncaughtException', bug).on('unhandledRejection', bug);
  try {
    return (await cmd.run(flags, parsed.positionals)) ?? 0;
  } catch (e) {
    const c = asCliError(e);
    if (!c) {
      process.stderr.write(internalErrorLine(e) + '\n');
      return 1;
    }
    printCliError(c);
    return c.exitCode;
  }
}

function bug(e: unknown): never {
  process.stderr.write(internalErrorLine(e) + '\n');
  process.exit(1);
}

// the bundle (dist/src/cli/light.cjs) sits three folders below the package root; it skips the bindings
// package's search of a dozen paths for the native module
if (typeof __dirname === 'string') useNativeBinding(join(__dirname, '..', '..', '..', 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'));
