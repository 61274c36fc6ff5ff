/**
 * The package of an earlier commit of this repository, for the upgrade a node really goes through: the
 * commit before the newest one that changed the store's schema (so the upgrade migrates a store the old
 * daemon made), exported with `git archive` (no worktree, nothing of the checkout's git state touched),
 * built there with this checkout's node_modules, runtime and native-module cache (no network), and packed
 * by that commit's own packager. A clone without that commit (a shallow CI checkout) gets, instead, this
 * tree's package under an earlier version: what it says in `why`, and the store then needs no migration.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './paths.js';

export interface EarlierPackage {
  readonly deb: string;
  readonly version: string;
  /** The commit it was built from, or null where this tree stands in for it. */
  readonly commit: string | null;
  /** The store schema its code migrates to. */
  readonly schema: number;
  readonly why: string;
}

const git = (...args: string[]): string =>
  execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();

/** The commit before the newest committed schema change, when this clone has it (and its packager). */
export function earlierCommit(): string | null {
  // L9GPU_TEST_NO_EARLIER_COMMIT=1: as a shallow clone would (to run the stand-in's path on purpose)
  if (process.env.L9GPU_TEST_NO_EARLIER_COMMIT === '1') return null;
  try {
    const changed = git('log', '-1', '--format=%H', '--', 'src/store/schema.ts');
    if (!changed) return null;
    const parent = git('rev-parse', '--verify', '--quiet', `${changed}^{commit}^`);
    git('cat-file', '-e', `${parent}:src/release/package-main.ts`);
    return parent;
  } catch {
    return null;
  }
}

/** The earlier commit exported and built, or null (no such commit here). */
interface EarlierTree {
  commit: string;
  short: string;
  dir: string;
  version: string;
}

let prepared: Promise<EarlierTree | null> | undefined;

/**
 * Exports and builds the earlier commit in the background (its tsc and bundles take 40-45 s of a 2-core
 * machine): started by the test file's before(), beside the packaging of this tree and the tests before the
 * upgrade's, and awaited by buildEarlierDeb. Called again, the same build.
 */
export function prepareEarlier(work: string): Promise<EarlierTree | null> {
  prepared ??= (async () => {
    const commit = earlierCommit();
    if (!commit) return null;
    const short = commit.slice(0, 12);
    const dir = join(work, `earlier-${short}`);
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', 'git -C "$1" archive "$2" | tar -x -C "$3"', 'sh', ROOT, commit, dir]);
    // what a checkout has installed and built, not committed: the modules, the bundled runtime (runtime/ holds only its pin), the native
    // build cache
    for (const l of ['node_modules', 'runtime/node_modules', '.cache']) {
      mkdirSync(dirname(join(dir, l)), { recursive: true });
      if (!existsSync(join(dir, l))) symlinkSync(join(ROOT, l), join(dir, l));
    }
    // an earlier Debian version than this tree's: 0.1.0~git.<commit> sorts before 0.1.0
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    const version = `${pkg.version}~git.${short}`;
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, version }, null, 2) + '\n');
    // that commit's own build script (tsc, the bundles, the help texts), on this checkout's modules
    await new Promise<void>((resolve, reject) => {
      const c = spawn('npm', ['run', '-s', 'build'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let said = '';
      c.stdout.setEncoding('utf8').on('data', (d: string) => (said = (said + d).slice(-20_000)));
      c.stderr.setEncoding('utf8').on('data', (d: string) => (said = (said + d).slice(-20_000)));
      const timer = setTimeout(() => c.kill('SIGKILL'), 300_000);
      c.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`npm run build at ${short}: exit ${code}\n${said}`));
      });
    });
    return { commit, short, dir, version };
  })();
  // a failure is the upgrade test's to report, when it awaits it, not an unhandled rejection before then
  prepared.catch(() => {});
  return prepared;
}

/**
 * Builds the earlier .deb into outDir. `fallback(version)` builds this tree's under the given version
 * (the caller's packager), used only when the clone lacks the commit.
 */
export async function buildEarlierDeb(
  work: string,
  outDir: string,
  currentVersion: string,
  fallback: (version: string) => string,
): Promise<EarlierPackage> {
  const tree = await prepareEarlier(work);
  if (!tree) {
    const version = `${currentVersion}~pre`;
    return {
      deb: fallback(version),
      version,
      commit: null,
      schema: -1,
      why: 'this clone has no earlier commit with an older store schema (shallow?): the current tree stands in, under an earlier version',
    };
  }
  const { commit, short, dir, version } = tree;
  // that commit's packager, the .deb only (its rpm and tarball are not upgraded from here)
  const script = `
    const [{ assembleTree, readBuildInfo }, { buildDeb }, { findRuntime }] = await Promise.all([
      import(${JSON.stringify(pathToFileURL(join(dir, 'dist/src/release/release-tree.js')).href)}),
      import(${JSON.stringify(pathToFileURL(join(dir, 'dist/src/release/debian.js')).href)}),
      import(${JSON.stringify(pathToFileURL(join(dir, 'dist/src/release/runtime.js')).href)})]);
    const runtime = findRuntime(${JSON.stringify(dir)});
    const info = readBuildInfo(${JSON.stringify(dir)}, runtime);
    const tree = ${JSON.stringify(join(dir, 'pkg-work/tree'))};
    assembleTree(${JSON.stringify(dir)}, tree, info, runtime);
    process.stdout.write(buildDeb(tree, ${JSON.stringify(join(dir, 'pkg-work'))}, ${JSON.stringify(outDir)}, info, true));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: dir,
    encoding: 'utf8',
    maxBuffer: 16 << 20,
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`the packager at ${short}: exit ${r.status}\n${r.stderr}`);
  const schemaJs = (await import(pathToFileURL(join(dir, 'dist/src/store/schema.js')).href)) as { MIGRATIONS: readonly string[] };
  return {
    deb: r.stdout.trim(),
    version,
    commit,
    schema: schemaJs.MIGRATIONS.length,
    why: `built from commit ${short} (store schema ${schemaJs.MIGRATIONS.length}) by its own packager`,
  };
}
