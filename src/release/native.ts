/**
 * better-sqlite3 compiled for the bundled runtime: against its headers
 * (node-gyp --nodedir, no download), by that runtime's own node (node-gyp
 * takes the build's settings from the node it runs on), with glibc-compat.h
 * and the two compat files of native/ so that the module needs no newer glibc
 * or libstdc++ than RHEL 8's (elf.ts checks it). Compiling SQLite takes about
 * a minute: the result is kept under .cache/native/, named by everything it
 * depends on. koffi needs no build: its prebuilt binaries use Node-API, which
 * every Node.js runs.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import type { Runtime } from './runtime.js';

/** npm's own node-gyp: the one `npm run package` names in the environment, or the one beside the npm on PATH. */
function nodeGyp(): string {
  const named = process.env.npm_config_node_gyp;
  if (named && existsSync(named)) return named;
  const globalRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const found = join(globalRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (!existsSync(found)) throw new Error(`node-gyp not found (${found}): npm ships it; set npm_config_node_gyp to its bin/node-gyp.js`);
  return found;
}

function run(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): void {
  try {
    execFileSync(cmd, args, { ...opts, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (e) {
    const r = e as { stdout?: string; stderr?: string; message: string };
    const tail = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-25).join('\n');
    throw new Error(`building better-sqlite3 for the bundled Node.js failed: ${cmd} ${args.join(' ')}\n${tail || r.message}`);
  }
}

function withoutNpmConfig(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !/^npm_config_/i.test(k)));
}

/** Fails unless the runtime's node loads the module (its ABI and the symbols it needs are the runtime's). */
function loadsOn(node: string, module: string): void {
  try {
    execFileSync(node, ['-e', 'process.dlopen({ exports: {} }, process.argv[1])', module], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    const r = e as { stderr?: string; message: string };
    const lines = (r.stderr ?? r.message).split('\n');
    const why = lines.find((l) => l.includes('NODE_MODULE_VERSION')) ?? lines.find((l) => l.includes('Error')) ?? r.message;
    throw new Error(`better-sqlite3 built for the bundled Node.js does not load on it (${module}): ${why.trim()}`);
  }
}

/** The path of better_sqlite3.node for the runtime, built now unless already kept. */
export function betterSqlite3For(root: string, runtime: Runtime): string {
  const src = join(root, 'node_modules', 'better-sqlite3');
  const compat = join(root, 'src', 'release', 'native');
  const files = ['glibc-compat.h', 'glibc-compat.c', 'libstdcxx-compat.cc', 'node_object_wrap-24.18.1.h'];
  const version = (JSON.parse(readFileSync(join(src, 'package.json'), 'utf8')) as { version: string }).version;
  const key = createHash('sha256');
  for (const f of files) key.update(readFileSync(join(compat, f)));
  key.update(execFileSync('gcc', ['--version'], { encoding: 'utf8' }));
  const out = join(
    root,
    '.cache',
    'native',
    `better-sqlite3-${version}-node-${runtime.version}-${runtime.platform}-${key.digest('hex').slice(0, 12)}`,
    'better_sqlite3.node',
  );
  if (existsSync(out)) {
    // a kept module from before a build setting was fixed is built again, not shipped
    try {
      loadsOn(join(runtime.dir, 'bin', 'node'), out);
      return out;
    } catch {
      rmSync(dirname(out), { recursive: true, force: true });
    }
  }

  const work = `${dirname(out)}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  for (const f of ['package.json', 'binding.gyp', 'deps', 'src']) cpSync(join(src, f), join(work, f), { recursive: true });
  const include = ['-include', join(compat, 'glibc-compat.h')];
  run('gcc', ['-O2', '-fPIC', ...include, '-c', join(compat, 'glibc-compat.c'), '-o', 'glibc-compat.o'], { cwd: work });
  run('g++', ['-O2', '-fPIC', ...include, '-c', join(compat, 'libstdcxx-compat.cc'), '-o', 'libstdcxx-compat.o'], { cwd: work });
  const env = {
    ...withoutNpmConfig(process.env),
    // node-gyp takes npm's settings from the environment over its own arguments: a
    // site's `nodedir` in npmrc (npm run passes it on as npm_config_nodedir) would
    // build against the development Node's headers
    npm_config_nodedir: runtime.dir,
    CFLAGS: include.join(' '),
    CXXFLAGS: [...include, '-include', join(compat, 'node_object_wrap-24.18.1.h')].join(' '),
    LDFLAGS: `${join(work, 'glibc-compat.o')} ${join(work, 'libstdcxx-compat.o')}`,
  };
  const node = join(runtime.dir, 'bin', 'node');
  run(node, [nodeGyp(), 'configure', '--release', `--nodedir=${runtime.dir}`], { cwd: work, env });
  // the module alone: the package has no use for better-sqlite3's test extension
  run('make', ['-C', 'build', `-j${availableParallelism()}`, 'BUILDTYPE=Release', 'better_sqlite3'], { cwd: work, env });
  const built = join(work, 'build', 'Release', 'better_sqlite3.node');
  loadsOn(node, built);
  mkdirSync(dirname(out), { recursive: true });
  renameSync(built, out);
  rmSync(work, { recursive: true, force: true });
  return out;
}
