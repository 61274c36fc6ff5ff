/**
 * The light entry of the CLI, bundled by esbuild into dist/src/cli/light.cjs:
 * every `light` row of the command table (command-table.ts: the
 * commands people type all day, and those Slurm runs) run from one
 * pre-bundled file without the CLI framework, so they start about as fast as
 * node itself. It runs a command only when every argument parses; anything
 * else (--help, a typo, an unknown flag) goes to the oclif CLI, which says
 * what is wrong and shows the help.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { useNativeBinding } from '../store/native-binding.js';
import { asCliError, internalErrorLine, printCliError } from './errors.js';
import { checkFlags, parseArgsOptions } from './flag-spec.js';
import { COMMANDS as TABLE } from './command-table.js';

// the command table's light rows, longest first: "jobs show" before "jobs"
const COMMANDS = TABLE.filter((c) => c.entry === 'light')
  .map((c) => ({ ...c, words: c.id.split(' ') }))
  .sort((a, b) => b.words.length - a.words.length);

/** Runs the command and resolves to its exit code, or to undefined: not one this entry takes (oclif does). */
export async function runLight(argv: readonly string[]): Promise<number | undefined> {
  if (argv.includes('--help') || argv.includes('-h')) return undefined;
  const cmd = COMMANDS.find((c) => c.words.every((w, i) => argv[i] === w));
  if (!cmd) return undefined;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv.slice(cmd.words.length), options: parseArgsOptions(cmd.flags), allowPositionals: true, strict: true });
  } catch {
    return undefined;
  }
  const flags = checkFlags(cmd.flags, parsed.values);
  if (!flags || parsed.positionals.length !== (cmd.arg ? 1 : 0)) return undefined;
  // from here the process is this command's: an error thrown where nothing awaits it is a bug said in one line too
  process.on('uncaughtException', bug).on('unhandledRejection', bug);
  try {
    return (await cmd.run!(flags, parsed.positionals)) ?? 0;
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
if (typeof __dirname === 'string')
  useNativeBinding(join(__dirname, '..', '..', '..', 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'));
