/**
 * Start-up on the package's own runtime: the release tree as `npm run package`
 * assembles it (bundled Node.js, better-sqlite3 built for it), its hooks and
 * light commands run in turn with a bare `node -e 0` of the same runtime, each
 * with the compile cache (cache/, root's, filled by a first run as the install
 * does) and without it (the folder moved away), interleaved so that all see the
 * same machine. Each run's wall time and CPU time (user + system of the whole
 * process tree: the hooks' sh and timeout too), as bash's `time` reads them
 * from wait4; the CPU time moves less with the machine's load. Medians of
 * `runs` rounds. The store is held open as the daemon holds it on a node (the
 * hooks then write into a live WAL and never checkpoint it at close); the
 * hooks also run once more per round with no one holding it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assembleTree, readBuildInfo } from '../src/release/release-tree.js';
import { findRuntime } from '../src/release/runtime.js';
import { openStore, type Db } from '../src/store/open.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** p50 of a command's runs, in ms. */
export interface Cost {
  wall: number;
  cpu: number;
}

export interface StartupResult {
  node: string;
  bare: Cost;
  /** The machine's own Node.js (the one running the bench: what a node needed before the package had a runtime), bare. */
  machine: { node: string; bare: Cost };
  /** Each command with the compile cache and without. */
  commands: Record<string, { cached: Cost; uncached: Cost }>;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function benchPackageStartup(runs = 30): StartupResult {
  const runtime = findRuntime(ROOT);
  const d = mkdtempSync(join(tmpdir(), 'l9gpu-bench-startup-'));
  const tree = join(d, 'l9gpu');
  assembleTree(ROOT, tree, readBuildInfo(ROOT, runtime), runtime);
  const node = join(tree, 'node/bin/node');
  const state = join(d, 'state');
  writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${state}\nplugins = sim\n`);
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=bench\n');
  mkdirSync(state);
  // slurmd's almost empty environment for the hooks; the CLI gets the same plus the config
  const job = (id: number) => ({
    L9GPU_CONFIG: join(d, 'l9gpu.ini'),
    SLURM_CONF: join(d, 'slurm.conf'),
    SLURM_JOB_ID: String(id),
    SLURM_JOB_USER: 'alice',
    SLURM_JOB_UID: '1001',
    CUDA_VISIBLE_DEVICES: '0,1',
    SLURM_JOB_EXIT_CODE: '0',
  });
  const cli = { L9GPU_CONFIG: join(d, 'l9gpu.ini'), L9GPU_STATE_DIR: state };
  type Run = [string, string[], NodeJS.ProcessEnv];
  const commands: Record<string, (i: number) => Run> = {
    prolog: (i) => [join(tree, 'slurm/prolog'), [], job(1000 + i)],
    epilog: (i) => [join(tree, 'slurm/epilog'), [], job(1000 + i)],
    'prolog, no daemon': (i) => [join(tree, 'slurm/prolog'), [], job(5000 + i)],
    'epilog, no daemon': (i) => [join(tree, 'slurm/epilog'), [], job(5000 + i)],
    '--version': () => [node, [join(tree, 'bin/run.js'), '--version'], cli],
    jobs: () => [node, [join(tree, 'bin/run.js'), 'jobs'], cli],
    gpus: () => [node, [join(tree, 'bin/run.js'), 'gpus'], cli],
    doctor: () => [node, [join(tree, 'bin/run.js'), 'doctor'], cli],
  };
  const time = ([file, args, env]: Run): Cost => {
    // bash's `time` of the command alone: its wall time and its process tree's CPU time (ms resolution)
    const r = spawnSync('/bin/bash', ['-c', 'TIMEFORMAT="%3R %3U %3S"; time "$@" >/dev/null 2>&1', 'bash', file, ...args], {
      env,
      encoding: 'utf8',
    });
    if (r.status !== 0 && !(args.includes('doctor') && r.status === 1)) {
      throw new Error(`${file} ${args.join(' ')}: exit ${r.status}: ${spawnSync(file, args, { env, encoding: 'utf8' }).stderr}`);
    }
    const [wall, user, sys] = r.stderr
      .trim()
      .split('\n')
      .pop()!
      .split(' ')
      .map((s) => Number(s) * 1000);
    return { wall: wall!, cpu: user! + sys! };
  };
  // the daemon's connection to the store, on a node as long as the daemon runs: dropped around the runs that say so
  let held: Db | undefined;
  const hold = (on: boolean): void => {
    if (on && !held) {
      held = openStore(state);
      held.pragma('user_version'); // attached to the WAL index, as the daemon's connection is
    } else if (!on && held) {
      held.close();
      held = undefined;
    }
  };
  const run = (name: string, c: Run): Cost => {
    hold(!name.endsWith('no daemon'));
    return time(c);
  };
  const cache = join(tree, 'cache');
  const off = join(tree, 'cache.off');
  for (const [k, c] of Object.entries(commands)) run(k, c(0)); // as the install and the first job do: fill the cache, warm the page cache
  const bare: Cost[] = [];
  const machineBare: Cost[] = [];
  const t: Record<string, { cached: Cost[]; uncached: Cost[] }> = Object.fromEntries(
    Object.keys(commands).map((k) => [k, { cached: [], uncached: [] }]),
  );
  try {
    for (let i = 1; i <= runs; i++) {
      bare.push(time([node, ['-e', '0'], {}]));
      machineBare.push(time([process.execPath, ['-e', '0'], {}]));
      for (const [k, c] of Object.entries(commands)) t[k]!.cached.push(run(k, c(i)));
      renameSync(cache, off);
      for (const [k, c] of Object.entries(commands)) t[k]!.uncached.push(run(k, c(i)));
      renameSync(off, cache);
    }
  } finally {
    hold(false);
    rmSync(d, { recursive: true, force: true });
  }
  const p50 = (xs: Cost[]): Cost => ({ wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) });
  return {
    node: runtime.version,
    bare: p50(bare),
    machine: { node: process.version, bare: p50(machineBare) },
    commands: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, { cached: p50(v.cached), uncached: p50(v.uncached) }])),
  };
}
