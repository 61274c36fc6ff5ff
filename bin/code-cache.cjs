'use strict';
// Runs the pre-built bundles (dist/hook/hook.cjs for the Slurm hooks, dist/src/cli/light.cjs for the
// commands people type) with V8's code cache of an earlier run of the same command, kept in the
// package's cache/ folder. Node's own compile cache (module.enableCompileCache, which bin/run.js uses
// for everything else) keeps the code V8 compiled before a module ran: in a bundle that is its top
// level, while every module body (esbuild's lazy wrappers) and every function a command calls is
// compiled again at each start. A cache made at the end of a run holds those too: 2-8 ms of a hook's
// or a command's start on Node 24 (docs/performance.md).
//
// What the cache holds is code that runs as root (the hooks): it is read only from a folder and
// files root owns and no one else may write, written only by root, and named after the bundle
// file's identity (inode, mtime, size) and the runtime, so that a replaced bundle never meets
// the code of another. Plain CommonJS, not TypeScript: bin/run.js and slurm/hook-run load it
// before anything is built or bundled.
const fs = require('node:fs');
const { basename, dirname, join, resolve } = require('node:path');
const Module = require('node:module');
const vm = require('node:vm');

/** A folder or file root owns and neither its group nor others may write. */
function trusted(path, dir) {
  try {
    const s = fs.statSync(path);
    return s.uid === 0 && (s.mode & 0o022) === 0 && (dir ? s.isDirectory() : s.isFile());
  } catch {
    return false;
  }
}

/**
 * The code cache to read and the file to write it to for this bundle and this command
 * (`variant`: what the process runs, so what it compiles): the variant's own file, or
 * another command's of the same bundle (the top level and what they share) until root
 * has run this one.
 */
function cacheFiles(file, cacheDir, variant) {
  if (!cacheDir || !trusted(cacheDir, true)) return {};
  const st = fs.statSync(file);
  const key = `${basename(file)}.${process.version}-${process.arch}.${st.ino}-${Math.trunc(st.mtimeMs)}-${st.size}`;
  const own = join(cacheDir, `${key}.${variant.replace(/[^\w-]/g, '_')}.v8`);
  let read = trusted(own, false) ? own : undefined;
  if (!read) {
    const other = fs.readdirSync(cacheDir).find((n) => n.startsWith(`${key}.`) && n.endsWith('.v8'));
    if (other && trusted(join(cacheDir, other), false)) read = join(cacheDir, other);
  }
  return { read, own: process.getuid?.() === 0 ? own : undefined };
}

/** Written whole or not at all (another process may be writing the same one: the last rename wins). */
function save(script, path) {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, script.createCachedData(), { mode: 0o644, flag: 'wx' });
    fs.renameSync(tmp, path);
  } catch {
    fs.rmSync(tmp, { force: true });
    // a full or read-only disk: the next start compiles again
  }
}

/**
 * Evaluates a CommonJS bundle as Node's loader would (module, require, __filename,
 * __dirname) and returns its exports. cacheDir: the package's cache folder, or
 * undefined (a checkout has none); variant: the command, for its own cache file.
 */
function loadBundle(bundle, cacheDir, variant) {
  const file = resolve(bundle);
  const { read, own } = cacheFiles(file, cacheDir, variant);
  const script = new vm.Script(Module.wrap(fs.readFileSync(file, 'utf8')), {
    filename: file,
    cachedData: read ? fs.readFileSync(read) : undefined,
    // the bundle's import() of its external packages (koffi, OpenTelemetry), as in any module
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  // at the end of the run, when everything the command calls has been compiled
  if (own && (read !== own || script.cachedDataRejected)) process.once('exit', () => save(script, own));
  const mod = { exports: {}, filename: file, id: file, loaded: false };
  script.runInThisContext()(mod.exports, Module.createRequire(file), mod, file, dirname(file));
  mod.loaded = true;
  return mod.exports;
}

module.exports = { loadBundle };

// `node code-cache.cjs <cache folder or ""> <bundle> <args...>` (slurm/hook-run): the bundle as the main script
if (require.main === module) {
  const [cacheDir, bundle] = process.argv.slice(2, 4);
  process.argv.splice(1, 3, resolve(bundle)); // as node names its main script
  loadBundle(bundle, cacheDir || undefined, process.argv[2] ?? 'main');
}
