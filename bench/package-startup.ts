/**
 * Start-up on the package's own runtime: the release tree as `npm run package`
 * assembles it (bundled Node.js, better-sqlite3 built for it), its hooks and
 * light commands run in turn with a bare `node -e 0` of the same runtime, each
 * with the compile cache (cache/, root's, filled by a first run as the install
 * does) and without it (the folder moved away), interleaved so that all see the
 * same machine. Medians of `runs` rounds.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { assembleTree, readBuildInfo } from '../src/release/release-tree.js';
import { findRuntime } from '../src/release/runtime.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface StartupResult {
  node: string;
  bareMs: number;
  /** p50 wall time (ms) of each command, with the compile cache and without. */
  commands: Record<string, { cached: number; uncached: number }>;
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
  const job = (id: number) => ({ L9GPU_CONFIG: join(d, 'l9gpu.ini'), SLURM_CONF: join(d, 'slurm.conf'), SLURM_JOB_ID: String(id), SLURM_JOB_USER: 'alice', SLURM_JOB_UID: '1001', CUDA_VISIBLE_DEVICES: '0,1', SLURM_JOB_EXIT_CODE: '0' });
  const cli = { L9GPU_CONFIG: join(d, 'l9gpu.ini'), L9GPU_STATE_DIR: state };
  const commands: Record<string, (i: number) => [string, string[], NodeJS.ProcessEnv]> = {
    prolog: (i) => [join(tree, 'slurm/prolog'), [], job(1000 + i)],
    epilog: (i) => [join(tree, 'slurm/epilog'), [], job(1000 + i)],
    '--version': () => [node, [join(tree, 'bin/run.js'), '--version'], cli],
    jobs: () => [node, [join(tree, 'bin/run.js'), 'jobs'], cli],
    gpus: () => [node, [join(tree, 'bin/run.js'), 'gpus'], cli],
    doctor: () => [node, [join(tree, 'bin/run.js'), 'doctor'], cli],
  };
  const time = ([file, args, env]: [string, string[], NodeJS.ProcessEnv]): number => {
    const t = performance.now();
    const r = spawnSync(file, args, { env, encoding: 'utf8' });
    if (r.status !== 0 && !(args.includes('doctor') && r.status === 1)) throw new Error(`${file} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
    return performance.now() - t;
  };
  const cache = join(tree, 'cache');
  const off = join(tree, 'cache.off');
  for (const c of Object.values(commands)) time(c(0)); // as the install and the first job do: fill the cache, warm the page cache
  const bare: number[] = [];
  const t: Record<string, { cached: number[]; uncached: number[] }> = Object.fromEntries(Object.keys(commands).map((k) => [k, { cached: [], uncached: [] }]));
  for (let i = 1; i <= runs; i++) {
    bare.push(time([node, ['-e', '0'], {}]));
    for (const [k, c] of Object.entries(commands)) t[k]!.cached.push(time(c(i)));
    renameSync(cache, off);
    for (const [k, c] of Object.entries(commands)) t[k]!.uncached.push(time(c(i)));
    renameSync(off, cache);
  }
  rmSync(d, { recursive: true, force: true });
  return {
    node: runtime.version,
    bareMs: median(bare),
    commands: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, { cached: median(v.cached), uncached: median(v.uncached) }])),
  };
}
