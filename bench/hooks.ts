/**
 * Slurm hook latency as slurmd sees it: the slurm/prolog and slurm/epilog
 * wrappers run with a slurmd-like environment, each binding two GPUs through
 * SLURM_JOB_GPUS, gres.conf and device minors, interleaved with a bare
 * `node -e 0` so both see the same machine. Then 50 prologs at once.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { upsertInventory } from '../src/store/jobs.js';
import { openStore } from '../src/store/open.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export interface HookBenchResult {
  runs: number;
  bare: { p50: number; p99: number };
  prolog: { p50: number; p99: number };
  epilog: { p50: number; p99: number };
  concurrent: { prologs: number; failed: number; jobs: number; bindings: number; wallMs: number };
}

/**
 * base: the environment both the bare node and the hooks run with. slurmd gives
 * hooks an almost empty one ({}); the machine's own (process.env) can make
 * Node itself much slower to start (NODE_EXTRA_CA_CERTS loads a CA bundle),
 * which shrinks every ratio.
 */
export async function benchHooks(runs = 200, concurrent = 50, base: NodeJS.ProcessEnv = {}): Promise<HookBenchResult> {
  const d = mkdtempSync(join(tmpdir(), 'l9gpu-bench-hooks-'));
  const state = join(d, 'state');
  for (let i = 0; i < 4; i++) spawnSync('mknod', [join(d, `gpu${i}`), 'c', '195', String(i)]);
  writeFileSync(join(d, 'gres.conf'), `NodeName=bench Name=gpu File=${d}/gpu[0-3]\n`);
  writeFileSync(join(d, 'slurm.conf'), 'ClusterName=bench\n');
  writeFileSync(join(d, 'l9gpu.ini'), `[daemon]\nstate_dir = ${state}\n`);
  const db = openStore(state);
  upsertInventory(
    db,
    [0, 1, 2, 3].map((m) => ({
      uuid: `GPU-bench-${m}`,
      vendor: 'nvidia',
      vendorIndex: m,
      minor: m,
      pciBusId: null,
      model: null,
      migParent: null,
      migGi: null,
      migCi: null,
    })),
  );
  // the daemon keeps a connection open in production: the hooks write into a live WAL
  const env = (id: number, extra: Record<string, string> = {}) => ({
    ...base,
    L9GPU_CONFIG: join(d, 'l9gpu.ini'),
    L9GPU_NODE: process.execPath,
    SLURM_JOB_ID: String(id),
    SLURM_JOB_USER: 'alice',
    SLURM_JOB_UID: '1001',
    SLURM_JOB_PARTITION: 'gpu',
    SLURM_CLUSTER_NAME: 'bench',
    SLURM_JOB_GPUS: String(id % 2 ? '0,1' : '2,3'),
    CUDA_VISIBLE_DEVICES: '0,1',
    SLURM_CONF: join(d, 'slurm.conf'),
    SLURMD_NODENAME: 'bench',
    SLURM_JOB_RESTART_COUNT: '0',
    ...extra,
  });
  const time = (file: string, args: string[], e: NodeJS.ProcessEnv): number => {
    const t = performance.now();
    const r = spawnSync(file, args, { env: e });
    if (r.status !== 0) throw new Error(`${file}: exit ${r.status}: ${r.stderr}`);
    return performance.now() - t;
  };
  const bare: number[] = [];
  const prolog: number[] = [];
  const epilog: number[] = [];
  for (let i = 0; i < 10; i++) time(join(ROOT, 'slurm', 'prolog'), [], env(900_000 + i)); // warm the page cache
  for (let i = 0; i < runs; i++) {
    bare.push(time(process.execPath, ['-e', '0'], base));
    prolog.push(time(join(ROOT, 'slurm', 'prolog'), [], env(1000 + i)));
    epilog.push(time(join(ROOT, 'slurm', 'epilog'), [], env(1000 + i, { SLURM_JOB_EXIT_CODE: '0' })));
  }
  const t0 = performance.now();
  const codes = await Promise.all(
    Array.from(
      { length: concurrent },
      (_, i) =>
        new Promise<number | null>((r) =>
          spawn(join(ROOT, 'slurm', 'prolog'), [], { env: env(50_000 + i), stdio: 'ignore' }).on('exit', r),
        ),
    ),
  );
  const wallMs = performance.now() - t0;
  db.close();
  const ro = new Database(join(state, 'l9gpu.db'), { readonly: true });
  const jobs = (
    ro.prepare('SELECT COUNT(*) AS n FROM jobs WHERE CAST(job_id AS INTEGER) >= 50000 AND CAST(job_id AS INTEGER) < 60000').get() as {
      n: number;
    }
  ).n;
  const bindings = (
    ro
      .prepare(
        `SELECT COUNT(*) AS n FROM bindings WHERE CAST(job_id AS INTEGER) >= 50000 AND CAST(job_id ` +
          `AS INTEGER) < 60000 AND gpu_uuid LIKE 'GPU-bench-%'`,
      )
      .get() as { n: number }
  ).n;
  ro.close();
  const s = (xs: number[]) => ({ p50: pct(xs, 50), p99: pct(xs, 99) });
  return {
    runs,
    bare: s(bare),
    prolog: s(prolog),
    epilog: s(epilog),
    concurrent: { prologs: concurrent, failed: codes.filter((c) => c !== 0).length, jobs, bindings, wallMs },
  };
}
