/**
 * The release tree an offline node runs from (/opt/l9gpu): the built code, the
 * production node_modules with the native modules built on this machine, the
 * hooks, the unit, the docs. Assembled from a built checkout (`npm run build`),
 * never from the network: the node_modules already here are the ones the tests ran.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { nodeCheckScript, type NodeTarget } from './node-check.js';

/** The build: the Node it targets (node-check.ts) and what names it. */
export interface BuildInfo extends NodeTarget {
  readonly name: string;
  readonly commit: string;
}

/** What of the checkout goes into the tree: code, the files read at run time, what an admin reads. */
const TOP_LEVEL = ['bin', 'package.json', 'package-lock.json', 'README.md', 'docs', 'systemd', 'dashboards'];
/** Built output that is not the product. */
const DIST_LEFT_OUT = new Set(['test', 'bench', 'package', join('src', 'release')]);
/** The hooks' shell entries (slurmd runs them; the .ts beside them are compiled into dist/). */
const SLURM_SCRIPTS = ['prolog', 'epilog', 'ctld-epilog', 'hook-run'];
/** Read at run time from the package root (src/attribution/kubernetes/podresources-client.ts). */
const RUNTIME_ASSETS = ['src/attribution/kubernetes/podresources/api.proto'];

export function readBuildInfo(root: string): BuildInfo {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; engines?: { node?: string } };
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['-C', root, 'rev-parse', '--short=12', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    // a tree exported without .git: the version alone names it
  }
  return {
    name: pkg.name,
    version: pkg.version,
    platform: `${process.platform}-${process.arch}`,
    nodeAbi: process.versions.modules,
    nodeVersion: process.versions.node,
    nodeMin: /(\d+\.\d+(?:\.\d+)?)/.exec(pkg.engines?.node ?? '')?.[1] ?? process.versions.node,
    commit,
  };
}

/** Fails with what to run when the checkout is not built. */
function requireBuilt(root: string): void {
  for (const f of ['dist/src/cli/daemon-main.js', 'dist/hook/hook.cjs', 'dist/src/cli/light.cjs', 'dist/help.json', 'node_modules/better-sqlite3/build/Release/better_sqlite3.node']) {
    if (!existsSync(join(root, f))) throw new Error(`${f} is missing: run \`npm ci\` and \`npm run build\` first (npm run package builds, but does not install)`);
  }
}

/** The production dependencies' folders, as npm resolved them (optional platform packages included only when installed). */
function productionModules(root: string): string[] {
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'ignore'] });
  return out.split('\n').map((l) => relative(root, l.trim())).filter((p) => p.startsWith('node_modules/'));
}

/**
 * What a module carries that nothing loads at run time: better-sqlite3's SQLite
 * sources and build intermediates (25 MB of its 27), type declarations, source maps.
 */
function keep(path: string): boolean {
  if (/better-sqlite3\/(deps|src)(\/|$)/.test(path)) return false;
  if (/better-sqlite3\/build\//.test(path) && !/better-sqlite3\/build\/Release(\/better_sqlite3\.node)?$/.test(path)) return false;
  return !/\.d\.[cm]?ts$|\.map$/.test(path);
}

export function assembleTree(root: string, dest: string, info: BuildInfo): void {
  requireBuilt(root);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  for (const f of TOP_LEVEL) if (existsSync(join(root, f))) cpSync(join(root, f), join(dest, f), { recursive: true });
  mkdirSync(join(dest, 'dist'));
  for (const e of readdirSync(join(root, 'dist'))) {
    // the packager itself (dist/src/release) is built output too, and not the product
    if (!DIST_LEFT_OUT.has(e)) cpSync(join(root, 'dist', e), join(dest, 'dist', e), { recursive: true, filter: (p) => !p.endsWith('.map') && !DIST_LEFT_OUT.has(relative(join(root, 'dist'), p)) });
  }
  mkdirSync(join(dest, 'slurm'));
  for (const s of SLURM_SCRIPTS) cpSync(join(root, 'slurm', s), join(dest, 'slurm', s));
  for (const a of RUNTIME_ASSETS) cpSync(join(root, a), join(dest, a), { recursive: true });
  for (const m of productionModules(root)) {
    // npm lists a parent before the modules nested in it, which are copied on their own
    mkdirSync(dirname(join(dest, m)), { recursive: true });
    cpSync(join(root, m), join(dest, m), { recursive: true, filter: (p) => keep(p) && !relative(join(root, m), p).startsWith('node_modules') });
  }
  writeFileSync(join(dest, 'bin/check-node'), nodeCheckScript(info));
  // every executable the hooks and slurmd call by path, whatever the checkout's modes and the umask were
  for (const x of ['bin/run.js', 'bin/check-node', ...SLURM_SCRIPTS.filter((s) => s !== 'hook-run').map((s) => `slurm/${s}`)]) {
    if (existsSync(join(dest, x))) chmodSync(join(dest, x), 0o755);
  }
  writeFileSync(join(dest, 'BUILD-INFO.json'), JSON.stringify(info, null, 2) + '\n');
}

/** Size of a tree in KiB, as dpkg's Installed-Size counts it. */
export function treeKiB(dir: string): number {
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) bytes += statSync(p).size;
    }
  };
  walk(dir);
  return Math.ceil(bytes / 1024);
}

export const artifactBase = (info: BuildInfo): string => `${info.name}-${info.version}-${info.platform}`;
