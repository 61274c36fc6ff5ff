#!/usr/bin/env node
// `l9gpu daemon` is a long-running process: it starts without the CLI framework
// (see src/cli/daemon-main.ts); the hooks, the everyday commands and the help texts do too,
// each as its row of the command table says (src/cli/command-table.ts). Everything else goes through oclif.
import module, { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// node:fs through require: importing it makes its ESM facade read every export, and the ReadStream
// getter loads the fs streams (~10 % of a light command's start-up on Node 24)
const { readFileSync, statSync } = createRequire(import.meta.url)('node:fs');

// The package's compile cache (cache/ beside bin/: Node 22+ keeps V8's compiled code of what is
// loaded next, so the daemon's and oclif's modules start without being parsed again; the bundles
// keep theirs through code-cache.cjs). Used only when root owns it and no one else can write it:
// the hooks and the daemon run what it holds as root. A checkout has none.
const cache = fileURLToPath(new URL('../cache', import.meta.url));
try {
  const s = statSync(cache);
  if (module.enableCompileCache && s.isDirectory() && s.uid === 0 && (s.mode & 0o022) === 0) module.enableCompileCache(cache);
} catch {
  // no cache folder: nothing to use
}
/** A bundle's exports, run with the package's code cache (code-cache.cjs), loaded only for a bundle's command. */
const loadBundle = (file, variant) => createRequire(import.meta.url)('./code-cache.cjs').loadBundle(file, cache, variant);

let args = process.argv.slice(2);
// `l9gpu help <command>` as `l9gpu <command> --help`; `l9gpu version` as `l9gpu --version`
if (args[0] === 'help') args = [...args.slice(1), '--help'];
else if (args[0] === 'version' && args.length === 1) args = ['--version'];
const help = args.includes('--help') || args.includes('-h');
// `<command> --help` and bare `l9gpu`: the text oclif renders, written at build time (src/cli/write-help.ts)
const words = args.filter((a) => a !== '--help' && a !== '-h');
const texts = (help || args.length === 0) && !words.some((w) => w.startsWith('-')) ? helpTexts() : undefined;
const shown = texts !== undefined && Object.hasOwn(texts, words.join(' '));
// how the command starts, from the command table (dist/commands.json, src/cli/command-table.ts): the longest id its words name
const [entry, id] = shown || help ? [] : routeOf(args);
if (shown) {
  process.stdout.write(texts[words.join(' ')].split('\0UA\0').join(userAgent()));
} else if (entry === 'version') {
  // the line oclif prints, without loading any bundle for it
  process.stdout.write(`${userAgent()}\n`);
} else if (entry === 'hook') {
  // the hooks run on every job start and end: the single-file bundle, never the CLI framework (argv: the hook's kind after it)
  const hook = fileURLToPath(new URL('../dist/hook/hook.cjs', import.meta.url));
  process.argv.splice(1, 2, hook);
  loadBundle(hook, process.argv[2] ?? 'hook');
} else if (entry === 'light') {
  // the commands people type all day, and those Slurm runs (health checks, the slurmctld epilog): one pre-bundled
  // file, no CLI framework (src/cli/light-main.ts);
  // what it does not take (a typo, an unknown flag) goes to oclif, which says what is wrong
  const { runLight } = loadBundle(fileURLToPath(new URL('../dist/src/cli/light.cjs', import.meta.url)), id);
  const code = await runLight(args);
  if (code !== undefined) process.exitCode = code;
  else await (await import('@oclif/core')).execute({ dir: import.meta.url, args });
} else if (entry === 'daemon') {
  const { main } = await import('../dist/src/cli/daemon-main.js');
  await main(args.slice(1));
} else {
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url, args });
}

/** l9gpu/<version> <platform>-<arch> node-<version>: oclif's user agent, the version line. */
function userAgent() {
  return `l9gpu/${JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version} ${process.platform}-${process.arch} node-${process.version}`;
}

/** The texts of dist/help.json (src/cli/write-help.ts); undefined when the checkout is not built. */
function helpTexts() {
  try {
    return JSON.parse(readFileSync(new URL('../dist/help.json', import.meta.url), 'utf8'));
  } catch {
    return undefined; // not built by npm run build: oclif renders it
  }
}

/** The entry (light, daemon, hook; version for --version) and id of the command the arguments name, or []: oclif's. */
function routeOf(argv) {
  let routes;
  try {
    routes = JSON.parse(readFileSync(new URL('../dist/commands.json', import.meta.url), 'utf8'));
  } catch {
    return []; // not built by npm run build: oclif runs every command
  }
  for (let n = Math.min(argv.length, 2); n > 0; n--) {
    const id = argv.slice(0, n).join(' ');
    if (Object.hasOwn(routes, id)) return [routes[id], id];
  }
  return [];
}
