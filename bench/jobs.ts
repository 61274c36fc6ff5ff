/**
 * `l9gpu jobs` over a store of 100k jobs: query times in-process (list,
 * filtered list, show), every CLI command's wall time as a ratio to bare node,
 * and the daemon's per-tick rollup cost for 8 GPUs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { emptyRollup, step } from '../src/figures/rollup.js';
import { listJobs } from '../src/jobs/list.js';
import { findJob, reportFromStore } from '../src/jobs/report.js';
import { openStore, openStoreReadOnly } from '../src/store/open.js';
import { RollupWriter } from '../src/ledger/rollup-writer.js';
import { writeHealthFile } from '../src/health/state-file.js';
import { HealthTracker } from '../src/health/tracker.js';
import { metric } from '../src/core/metrics/registry.js';
import { createLogger } from '../src/core/log.js';

const CLI = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const USERS = Array.from({ length: 200 }, (_, i) => `user${i}`);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function time(fn: () => unknown, n = 21): number {
  fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    ts.push(performance.now() - t);
  }
  return median(ts);
}

/**
 * Median wall time of each command and of a bare `node -e 0`, run in turn
 * (so that machine load hits all alike): the ratios are what counts.
 */
function walls(commands: Record<string, string[]>, env: NodeJS.ProcessEnv, n = 11): Record<string, number> {
  const all: Record<string, string[]> = {
    bare: ['-e', '0'],
    ...Object.fromEntries(Object.entries(commands).map(([k, a]) => [k, [CLI, ...a]])),
  };
  const ts: Record<string, number[]> = {};
  for (let i = -1; i < n; i++) {
    for (const [name, args] of Object.entries(all)) {
      const t = performance.now();
      const r = spawnSync(process.execPath, args, { env });
      if (r.status !== 0) throw new Error(`${name}: ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
      if (i >= 0) (ts[name] ??= []).push(performance.now() - t);
    }
  }
  return Object.fromEntries(Object.entries(ts).map(([k, v]) => [k, median(v)]));
}

export interface JobsBenchResult {
  jobs: number;
  bindings: number;
  buildS: number;
  listMs: number;
  filterMs: number;
  showMs: number;
  /** Median wall time (ms) of bare node and of each CLI command, measured in turn. */
  cliWallMs: Record<string, number>;
  rollupTickMs: number;
  /** The same ticks with the GPM figures in every sample (the efficiency means), in the same run. */
  rollupGpmTickMs: number;
  healthTickMs: number;
}

/**
 * The daemon's rollup: 8 GPUs with a job each, one transaction per tick;
 * with gpm, each sample also carries the nine GPM figures the efficiency
 * means fold (issue 33), in the same store and run as the plain ticks, so
 * that the two are compared on the same machine state.
 */
export function benchRollup(state: string): { plainMs: number; gpmMs: number } {
  const live = openStore(state);
  const ids = new Map(Array.from({ length: 8 }, (_, g) => [`GPU-${g}`, { 'gpu.uuid': `GPU-${g}`, 'gpu.model': 'H100' }]));
  const figures = {
    smActive: 0.6,
    smOccupancy: 0.3,
    tensorActive: 0.4,
    dramActive: 0.55,
    fp64Active: 0.1,
    fp32Active: 0.3,
    fp16Active: 0.05,
    nvlinkBps: 3e8,
    pcieBps: 4e7,
  };
  const tickOf = (withGpm: boolean, job: number) => {
    const w = new RollupWriter(live);
    const samples = new Map(
      Array.from({ length: 8 }, (_, g) => [
        `GPU-${g}`,
        {
          t: 0,
          util: 0.7,
          memUtil: 0.3,
          memUsed: 5e10,
          memTotal: 8e10,
          power: 500,
          energy: 0,
          temp: 65,
          throttle: { power: 0, thermal: 0, hw: 0, sw: 0 },
          eccCorrected: 0,
          eccUncorrected: 0,
          ...(withGpm ? { gpm: figures } : {}),
        },
      ]),
    );
    // jobs of their own: each kind folds its own rollups
    const binds = new Map(Array.from({ length: 8 }, (_, g) => [`GPU-${g}`, [{ jobId: String(job + g), runKey: 'r0', share: 1 }]]));
    let tick = 0;
    return () => {
      tick++;
      for (const s of samples.values()) {
        s.t = tick * 10_000;
        s.energy = tick * 5000;
      }
      w.record(samples, ids, binds, 25_000, tick * 10_000);
    };
  };
  const plain = tickOf(false, 0);
  const withGpm = tickOf(true, 100);
  // alternating rounds, the least disturbed of each: the machine's load falls on both alike
  const p: number[] = [];
  const g: number[] = [];
  for (let r = 0; r < 5; r++) {
    p.push(time(plain, 61));
    g.push(time(withGpm, 61));
  }
  live.close();
  return { plainMs: Math.min(...p), gpmMs: Math.min(...g) };
}

/**
 * A store of `jobs` ended jobs a minute apart, 1 to 8 GPUs each with a
 * realistic rollup state (a 30-sample fold); `userOf` says whose each is.
 * Returns the GPU bindings written.
 */
export function fillJobsStore(state: string, jobs: number, userOf: (i: number) => string, now = Date.now()): number {
  const db = openStore(state);
  const r = emptyRollup();
  for (let i = 0; i < 30; i++)
    step(
      r,
      {
        t: i * 10_000,
        util: 0.6,
        memUsed: 40e9,
        memTotal: 80e9,
        power: 450,
        energy: i * 4500,
        temp: 60,
        throttle: { power: 0, thermal: 0, hw: 0, sw: 0 },
      },
      25_000,
    );
  const stateJson = JSON.stringify(r);
  const insJob = db.prepare(
    `INSERT INTO jobs (job_id, run_key, cluster, user, uid, account, partition, name, ` +
      `start_time, end_time, state, exit_code, source, updated_at) VALUES (?, 'r0', 'bench', ?, ` +
      `?, ?, ?, ?, ?, ?, 'COMPLETED', 0, 'prolog', ?)`,
  );
  const insBind = db.prepare(
    `INSERT INTO bindings (job_id, run_key, gpu_uuid, start_time, end_time, source, closed_by) ` +
      `VALUES (?, 'r0', ?, ?, ?, 'prolog', 'epilog')`,
  );
  const insGpu = db.prepare(
    `INSERT INTO job_gpu (job_id, run_key, gpu_uuid, model, identity, samples, covered_s, ` +
      `gpu_hours, util_mean, mem_used_max, mem_total, energy_j, state, updated_at) VALUES (?, ` +
      `'r0', ?, 'NVIDIA H100 80GB HBM3', '{}', 30, 290, 0.08, 0.6, 4e10, 8e10, 130500, ?, ?)`,
  );
  let bindings = 0;
  db.transaction(() => {
    for (let i = 0; i < jobs; i++) {
      const start = now - (jobs - i) * 60_000;
      insJob.run(
        String(1_000_000 + i),
        userOf(i),
        10_000 + (i % USERS.length),
        `acct${i % 20}`,
        i % 5 ? 'gpu' : 'debug',
        `job-${i}`,
        start,
        start + 300_000,
        start + 300_000,
      );
      const n = 1 + (i % 8 === 0 ? 7 : i % 3);
      for (let g = 0; g < n; g++) {
        insBind.run(String(1_000_000 + i), `GPU-${g}`, start, start + 300_000);
        insGpu.run(String(1_000_000 + i), `GPU-${g}`, stateJson, start + 300_000);
        bindings++;
      }
    }
  })();
  db.close();
  return bindings;
}

export function benchJobs(jobs = 100_000): JobsBenchResult {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-jobs-'));
  const state = join(dir, 'state');
  const t0 = performance.now();
  const now = Date.now();
  const bindings = fillJobsStore(state, jobs, (i) => USERS[i % USERS.length]!, now);
  const buildS = (performance.now() - t0) / 1000;

  const ro = openStoreReadOnly(state);
  const listMs = time(() => listJobs(ro, { state: 'all', limit: 100 }, 'bench', null));
  const filterMs = time(() =>
    listJobs(ro, { user: 'user42', state: 'completed', account: 'acct2', since: now - 7 * 86_400_000, limit: 100 }, 'bench', null),
  );
  const showMs = time(() => {
    const f = findJob(ro, String(1_000_000 + jobs / 2))!;
    return reportFromStore(ro, f.row, f.runs, 'bench', null);
  });
  ro.close();

  const cfg = join(dir, 'l9gpu.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${state}\nplugins = sim\n[sim]\ngpus = 8\n`);
  const env = { ...process.env, L9GPU_CONFIG: cfg };
  // what slurmd's HealthCheckProgram reads: the daemon's health file for 8 GPUs, one with an Xid and a pending remap
  writeHealthFile(state, {
    written: Date.now(),
    interval_ms: 10_000,
    gpus: Array.from({ length: 8 }, (_, i) => ({
      uuid: `GPU-${i}`,
      index: i,
      model: 'NVIDIA H100 80GB HBM3',
      seen: Date.now(),
      lost: false,
      xids: i === 3 ? [{ code: 63, time: Date.now() - 60_000, n: 1 }] : [],
      eccUncorrectedVolatile: 0,
      eccUncorrectedRise: 0,
      remapPending: i === 3,
      remapFailed: false,
      retiredPages: null,
      retirePending: null,
      pcieReplaysPerMin: 0,
      thermalShare: 0,
      powerBrakeShare: 0,
    })),
  });
  const cliWallMs = walls(
    {
      'health --nhc (HealthCheckProgram)': ['health', '--nhc'],
      'jobs --by user --since 7d': ['jobs', '--by', 'user', '--since', '7d'],
      '--version': ['--version'],
      jobs: ['jobs'],
      'jobs --json --since 7d': ['jobs', '--json', '--since', '7d'],
      'jobs show': ['jobs', 'show', String(1_000_000 + jobs / 2)],
      'gpus (8 sim GPUs)': ['gpus'],
      doctor: ['doctor'],
      'jobs --help': ['jobs', '--help'],
    },
    env,
  );

  const { plainMs: rollupTickMs, gpmMs } = benchRollup(join(dir, 'live'));
  const rollupGpmTickMs = gpmMs;

  // the daemon's health stage: 8 GPUs, the points nvml emits that it reads (plus utilization it passes over)
  const health = new HealthTracker(
    {
      stateDir: join(dir, 'health'),
      xidWindowMs: 7 * 86_400_000,
      trendWindowMs: 86_400_000,
      replayWindowMs: 600_000,
      throttleWindowMs: 600_000,
    },
    createLogger('error', () => {}),
  );
  const gpuPoints = (t: number) =>
    Array.from({ length: 8 }, (_, g) => {
      const a = {
        'gpu.index': g,
        'gpu.uuid': `GPU-${g}`,
        'gpu.model': 'NVIDIA H100 80GB HBM3',
        'gpu.vendor': 'nvidia',
        'gpu.pci.bus_id': `0000:${g}0:00.0`,
      };
      const p = (name: string, value: number, extra: Record<string, string> = {}) => ({
        metric: metric(name),
        value,
        attributes: { ...a, ...extra },
      });
      return [
        p('gpu.lost', 0),
        p('gpu.utilization', 0.7),
        p('gpu.memory.used', 5e10),
        p('gpu.power.draw', 500),
        ...['corrected', 'uncorrected'].flatMap((e) =>
          ['volatile', 'aggregate'].map((sc) => p('gpu.ecc.errors', 0, { 'error.type': e, 'gpu.ecc.scope': sc })),
        ),
        p('gpu.memory.remap.pending', 0),
        p('gpu.memory.remap.failed', 0),
        p('gpu.pcie.replays', t),
        ...['power', 'thermal', 'hw', 'sw', 'power_brake'].map((c) => p('gpu.throttle.active', 0, { 'gpu.throttle.cause': c })),
        p('gpu.xid.errors', 1, { 'gpu.xid.code': '13' }),
      ];
    }).flat();
  let htick = 0;
  const healthTickMs = time(() => {
    htick++;
    health.observe({ source: 'nvml', time: htick * 10_000, intervalMs: 10_000, points: gpuPoints(htick) });
  }, 301);
  return { jobs, bindings, buildS, listMs, filterMs, showMs, cliWallMs, rollupTickMs, rollupGpmTickMs, healthTickMs };
}
