/**
 * The release tree an offline node runs from (/opt/l9gpu): the built code, the
 * production node_modules, the Node.js runtime they run on (node/, from
 * runtime.ts) with better-sqlite3 compiled for it (native.ts), the hooks, the
 * unit, the docs. Assembled from a built checkout (`npm run build`), never
 * from the network: the node_modules already here are the ones the tests ran.
 * Every file is checked against the oldest system the package promises (elf.ts).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { beyondOldest, readElfNeeds, type ElfNeeds } from './elf.js';
import { betterSqlite3For } from './native.js';
import type { Runtime } from './runtime.js';
import { checkNodeScript, type PackageTarget } from './system-check.js';
import { MIGRATIONS } from '../store/schema.js';

/** Where the package puts things on a node (the .deb, the .rpm, install.sh and the image alike). */
export const PREFIX = '/opt/l9gpu';
export const STATE_DIR = '/var/lib/l9gpu';
export const CONFIG_DIR = '/etc/l9gpu';
/** The bundled runtime, and the compile cache (root's: the hooks run what it holds as root). */
export const NODE = `${PREFIX}/node/bin/node`;
export const COMPILE_CACHE = `${PREFIX}/cache`;

/** The build: what names it and the runtime it ships. */
export interface BuildInfo extends PackageTarget {
  readonly name: string;
  readonly commit: string;
  /** The store schema this version's code migrates to (PRAGMA user_version): the packages refuse a store newer than it. */
  readonly schema: number;
}

/** What of the checkout goes into the tree: code, the files read at run time, what an admin reads. */
const TOP_LEVEL = ['bin', 'package.json', 'package-lock.json', 'README.md', 'docs', 'systemd', 'dashboards'];
/** Built output that is not the product. */
const DIST_LEFT_OUT = new Set(['test', 'bench', 'package', join('src', 'release')]);
/**
 * The golden-file cases' adapters (plugins/<name>/golden.ts, and src/scrape/golden.ts that the scraped ones share):
 * test/unit/golden.test.ts's, never loaded by the daemon.
 */
const GOLDEN_ADAPTER = /(^|\/)golden\.js$/;

/** Whether a built file (relative to dist/) is the product's. */
function shipped(rel: string): boolean {
  return !rel.endsWith('.map') && !DIST_LEFT_OUT.has(rel) && !GOLDEN_ADAPTER.test(rel.split(sep).join('/'));
}
/** The hooks' shell entries (slurmd runs them; the .ts beside them are compiled into dist/). */
const SLURM_SCRIPTS = ['prolog', 'epilog', 'ctld-epilog', 'hook-run'];
/** Read at run time from the package root (src/attribution/kubernetes/podresources-client.ts). */
const RUNTIME_ASSETS = ['src/attribution/kubernetes/podresources/api.proto'];

export function readBuildInfo(root: string, runtime: Runtime): BuildInfo {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['-C', root, 'rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    // a tree exported without .git: the version alone names it
  }
  return {
    name: pkg.name,
    version: pkg.version,
    commit,
    platform: runtime.platform,
    nodeVersion: runtime.version,
    nodeAbi: runtime.abi,
    schema: MIGRATIONS.length,
  };
}

/** Fails with what to run when the checkout is not built. */
function requireBuilt(root: string): void {
  for (const f of [
    'dist/src/cli/daemon-main.js',
    'dist/hook/hook.cjs',
    'dist/src/cli/light.cjs',
    'dist/help.json',
    'dist/commands.json',
    'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
  ]) {
    if (!existsSync(join(root, f)))
      throw new Error(`${f} is missing: run \`npm ci\` and \`npm run build\` first (npm run package builds, but does not install)`);
  }
}

/** The production dependencies' folders, as npm resolved them (optional platform packages included only when installed). */
function productionModules(root: string): string[] {
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 16 << 20,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out
    .split('\n')
    .map((l) => relative(root, l.trim()))
    .filter((p) => p.startsWith('node_modules/'));
}

/** better-sqlite3's module: the one built here for the development Node is replaced by the one for the bundled runtime. */
const SQLITE_MODULE = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';

/**
 * What a module carries that nothing loads at run time: better-sqlite3's SQLite
 * sources and build intermediates (25 MB of its 27), koffi's musl build (the
 * package is for glibc systems), type declarations, source maps.
 */
function keep(path: string): boolean {
  if (/better-sqlite3\/(deps|src)(\/|$)/.test(path)) return false;
  if (/better-sqlite3\/build\//.test(path) && !/better-sqlite3\/build\/Release$/.test(path)) return false;
  if (/koffi-linux-[^/]+\/musl_/.test(path)) return false;
  return !/\.d\.[cm]?ts$|\.map$/.test(path);
}

export function assembleTree(root: string, dest: string, info: BuildInfo, runtime: Runtime): void {
  requireBuilt(root);
  const sqlite = betterSqlite3For(root, runtime);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  for (const f of TOP_LEVEL) if (existsSync(join(root, f))) cpSync(join(root, f), join(dest, f), { recursive: true });
  mkdirSync(join(dest, 'dist'));
  for (const e of readdirSync(join(root, 'dist'))) {
    // the packager itself (dist/src/release) is built output too, and not the product
    if (!DIST_LEFT_OUT.has(e))
      cpSync(join(root, 'dist', e), join(dest, 'dist', e), { recursive: true, filter: (p) => shipped(relative(join(root, 'dist'), p)) });
  }
  mkdirSync(join(dest, 'slurm'));
  for (const s of SLURM_SCRIPTS) cpSync(join(root, 'slurm', s), join(dest, 'slurm', s));
  for (const a of RUNTIME_ASSETS) cpSync(join(root, a), join(dest, a), { recursive: true });
  for (const m of productionModules(root)) {
    // npm lists a parent before the modules nested in it, which are copied on their own
    mkdirSync(dirname(join(dest, m)), { recursive: true });
    cpSync(join(root, m), join(dest, m), {
      recursive: true,
      filter: (p) => keep(p) && !relative(join(root, m), p).startsWith('node_modules'),
    });
  }
  copyFileSync(sqlite, join(dest, SQLITE_MODULE));
  // the runtime: the binary and its license (the headers were for the build only)
  mkdirSync(join(dest, 'node/bin'), { recursive: true });
  copyFileSync(join(runtime.dir, 'bin/node'), join(dest, 'node/bin/node'));
  copyFileSync(join(runtime.dir, 'LICENSE'), join(dest, 'node/LICENSE'));
  // `l9gpu` run by path (/usr/bin/l9gpu) starts on the bundled runtime, never a node found on PATH
  const run = readFileSync(join(dest, 'bin/run.js'), 'utf8');
  writeFileSync(join(dest, 'bin/run.js'), run.replace(/^#!.*\n/, `#!${NODE}\n`));
  writeFileSync(join(dest, 'bin/check-node'), checkNodeScript(info));
  // filled by root's runs (postinst, the hooks): bin/run.js and slurm/hook-run use it only when root owns it
  mkdirSync(join(dest, 'cache'));
  // every executable the hooks and slurmd call by path, whatever the checkout's modes and the umask were
  for (const x of [
    'bin/run.js',
    'bin/check-node',
    'node/bin/node',
    ...SLURM_SCRIPTS.filter((s) => s !== 'hook-run').map((s) => `slurm/${s}`),
  ]) {
    if (existsSync(join(dest, x))) chmodSync(join(dest, x), 0o755);
  }
  throughCurrent(dest);
  writeFileSync(join(dest, 'BUILD-INFO.json'), JSON.stringify(info, null, 2) + '\n');
  const beyond = elfFiles(dest).flatMap((f) => beyondOldest(f.needs).map((why) => `${relative(dest, f.path)} ${why}`));
  if (beyond.length > 0) throw new Error(`the package would not run on every system it promises:\n${beyond.join('\n')}`);
}

/**
 * The installed daemon and hooks run from the release folder `current` names (scriptlets.ts:
 * SWITCH_RELEASE), never from the files the package manager is replacing: the unit starts the
 * daemon through it (Node resolves the link once: everything it loads later comes from the same
 * release), and each hook entry slurm.conf names at its stable path goes on in that release.
 * Without `current` (an unpacked tree, a checkout) they run where they are.
 */
export const CURRENT_LINK = `${PREFIX}/current`;
const ENTRY_REDIRECT =
  `# through ${CURRENT_LINK} (the release the daemon runs, switched by one rename at an upgrade): a hook starting
# while the package manager replaces files runs one whole version. Builtins only: no fork on the job's start-up path.
case $0 in
  ${PREFIX}/releases/*) ;;
  *) l9gpu_cwd=$PWD
    if cd -P "\${0%/*}/../current/slurm" 2>/dev/null; then l9gpu_rel=$PWD; cd "$l9gpu_cwd" 2>/dev/null; exec "$l9gpu_rel/\${0##*/}" ` +
  `"$@"; fi ;;
esac
`;

function throughCurrent(dest: string): void {
  const unit = join(dest, 'systemd/l9gpu.service');
  const text = readFileSync(unit, 'utf8');
  const start = `ExecStart=${NODE} ${PREFIX}/bin/run.js daemon`;
  if (!text.includes(`\n${start}\n`)) throw new Error(`systemd/l9gpu.service: no line ${start} to run through ${CURRENT_LINK}`);
  writeFileSync(unit, text.replace(start, `ExecStart=${CURRENT_LINK}/node/bin/node ${CURRENT_LINK}/bin/run.js daemon`));
  for (const s of SLURM_SCRIPTS.filter((x) => x !== 'hook-run')) {
    const f = join(dest, 'slurm', s);
    const [shebang, ...rest] = readFileSync(f, 'utf8').split('\n');
    if (shebang !== '#!/bin/sh') throw new Error(`slurm/${s}: its first line is not #!/bin/sh`);
    writeFileSync(f, [shebang, ENTRY_REDIRECT + rest.join('\n')].join('\n'));
  }
}

/** Every ELF file under dir, with what it needs of the system (elf.ts). */
export function elfFiles(dir: string): { path: string; needs: ElfNeeds }[] {
  const out: { path: string; needs: ElfNeeds }[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const needs = readElfNeeds(p);
        if (needs) out.push({ path: p, needs });
      }
    }
  };
  walk(dir);
  return out;
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

/** The configuration a package ships: none of its own settings, so a node runs on the defaults until the admin's file replaces it. */
export const CONFIG_STUB = `; l9gpu configuration. Nothing set here: the daemon runs on its embedded defaults (plugins auto,
; the prometheus sink on port 9464). Every key, its default and its environment variable:
; ${PREFIX}/docs/l9gpu.example.ini. Kept on upgrade and removal.
`;

/**
 * A package's files at their places under root: the tree at PREFIX, `l9gpu` on PATH (a link to
 * bin/run.js, whose first line names the bundled runtime), the unit where the distribution keeps
 * them, the stub configuration. The .deb, the .rpm and the image are made from this.
 */
export function layOut(tree: string, root: string, unitPath: string): void {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, PREFIX), { recursive: true });
  cpSync(tree, join(root, PREFIX), { recursive: true, verbatimSymlinks: true });
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  symlinkSync(`${PREFIX}/bin/run.js`, join(root, 'usr/bin/l9gpu'));
  mkdirSync(dirname(join(root, unitPath)), { recursive: true });
  copyFileSync(join(tree, 'systemd/l9gpu.service'), join(root, unitPath));
  mkdirSync(join(root, CONFIG_DIR), { recursive: true });
  writeFileSync(join(root, CONFIG_DIR, 'l9gpu.ini'), CONFIG_STUB, { mode: 0o644 });
}
