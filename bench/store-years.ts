/**
 * A store that lives for years (issue 41, item 7): a store of a million
 * 1-GPU jobs made with the real schema (bulk SQL in one transaction), as a
 * node carries it over from a version before schema 7 (no jobs_end index, no
 * auto_vacuum). Before: the old start (quick_check over the file) and the
 * old prune (one IMMEDIATE transaction); after: the cheap check at open, the
 * migration, the prune in batches with the space given back. Each prune of
 * half the jobs runs beside a prolog-like writer process (bench/store-hook-writer.ts)
 * that times every write. `node dist/bench/store-years.js [jobs]`.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { emptyRollup, step } from '../src/figures/rollup.js';
import { pruneSteps } from '../src/ledger/ledger.js';
import { runPrunePass } from '../src/ledger/prune-pass.js';
import { RollupWriter } from '../src/ledger/rollup-writer.js';
import { compactStore, openStore, STORE_FILE, type Db } from '../src/store/open.js';
import { checkPages } from '../src/store/page-check.js';
import { MIGRATIONS } from '../src/store/schema.js';

const WRITER = fileURLToPath(new URL('./store-hook-writer.js', import.meta.url));
const DAY = 86_400_000;
/** The prolog's busy timeout: slurm/hook.ts gives it what is left of the 5 s hook deadline. */
const HOOK_BUSY_MS = 4500;

export interface Prune {
  totalS: number;
  deleted: number;
  batches: number;
  batchP50Ms: number;
  batchP99Ms: number;
  batchMaxMs: number;
  /** The longest batch of each step (jobs, series, vacuum...). */
  batchMaxByStepMs: Record<string, number>;
  hookWrites: number;
  hookWaitP50Ms: number;
  hookWaitMaxMs: number;
  hookFailed: number;
  /** What the first failed write said. */
  hookError?: string;
  sizeAfterMb: number;
}

export interface StoreYearsResult {
  jobs: number;
  buildS: number;
  sizeMb: number;
  bytesPerJob: number;
  before: { startQuickCheckS: number; emptyPruneS: number; prune: Prune };
  after: {
    migrationS: number;
    startOpenMs: number;
    pageCheckS: number;
    compactS: number;
    compactedMb: number;
    emptyPruneMs: number;
    emptyPruneLockMs: number;
    prune: Prune;
  };
}

const mb = (b: number) => b / 1048576;
const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]! : 0;

/** A store of schema 6 without auto_vacuum (made before either), n ended 1-GPU jobs over the last n/2,000 days. */
function build(path: string, n: number, now: number): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const m of MIGRATIONS.slice(0, 6)) db.exec(m);
  db.pragma('user_version = 6');
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
  const identity = JSON.stringify({
    'gpu.uuid': 'GPU-00000000-0000-0000-0000-000000000000',
    'gpu.model': 'NVIDIA H100 80GB HBM3',
    'gpu.vendor': 'nvidia',
    'gpu.index': 0,
    'gpu.pci.bus_id': '0000:18:00.0',
  });
  const span = (n / 2000) * DAY;
  const p = { n, t0: now - span, step: span / n, state: JSON.stringify(r), identity, recent: Math.floor(n * 0.95) };
  db.transaction(() => {
    db.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < @n - 1)
       INSERT INTO jobs (job_id, run_key, cluster, user, uid, account, partition, qos, name, start_time, end_time, state, exit_code,
         exit_signal, source, updated_at)
       SELECT CAST(1000000 + i AS TEXT), 'r0', 'cluster1', 'user' || (i % 200), 10000 + i % 200, 'acct' || (i % 20), 'gpu',
         'normal', 'train-' || (i % 1000),
              CAST(@t0 + i * @step AS INTEGER) - 3600000, CAST(@t0 + i * @step AS INTEGER), 'COMPLETED', 0, 0, 'prolog', CAST(@t0 +
                i * @step AS INTEGER) FROM k`,
    ).run(p);
    db.prepare(
      `INSERT INTO bindings (job_id, run_key, gpu_uuid, start_time, end_time, source, closed_by, shared)
                SELECT job_id, run_key, 'GPU-0000000' || (rowid % 8) || '-0000-0000-0000-000000000000', start_time, end_time,
                  'prolog', 'epilog', 0 FROM jobs`,
    ).run();
    db.prepare(
      `INSERT INTO job_gpu (job_id, run_key, gpu_uuid, model, identity, samples, covered_s, gpu_hours, util_mean, mem_used_max,
        mem_total, energy_j, state, updated_at)
       SELECT job_id, run_key, 'GPU-0000000' || (rowid % 8) || '-0000-0000-0000-000000000000', 'NVIDIA H100 80GB HBM3', @identity,
         360, 3600, 1, 0.6, 4e10, 8e10, 1.6e6, @state, end_time FROM jobs`,
    ).run({ identity: p.identity, state: p.state });
    // the newest jobs still have their per-minute series (30 days of series_retention at 20,000 jobs a day is more; these are 5-minute
    // jobs)
    db.prepare(
      `WITH RECURSIVE m(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM m WHERE x < 4)
       INSERT INTO job_gpu_series (job_id, run_key, gpu_uuid, minute, util_sum, power_sum, mem_used_max, n)
       SELECT job_id, run_key, 'GPU-00000000-0000-0000-0000-000000000000', end_time / 60000 - x, 3.6, 2700, 4e10, 6 FROM jobs, m
         WHERE rowid > @recent`,
    ).run({ recent: p.recent });
  }).immediate();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

/** The prune before schema 7 (src/ledger/rollup-writer.ts as it was): one IMMEDIATE transaction, every job scanned. */
function oldPrune(db: Db, seriesMs: number, jobsMs: number, now: number): number {
  return db
    .transaction(() => {
      db.prepare(
        `DELETE FROM job_gpu_series WHERE (job_id, run_key) IN (SELECT job_id, run_key FROM jobs ` +
          `WHERE end_time IS NOT NULL AND end_time < ?)`,
      ).run(now - seriesMs);
      const old = `SELECT job_id, run_key FROM jobs WHERE end_time IS NOT NULL AND end_time < ?`;
      const cut = now - jobsMs;
      for (const t of ['job_gpu', 'job_gpu_series', 'job_engine', 'job_nccl', 'bindings'])
        db.prepare(`DELETE FROM ${t} WHERE (job_id, run_key) IN (${old})`).run(cut);
      return db.prepare(`DELETE FROM jobs WHERE end_time IS NOT NULL AND end_time < ?`).run(cut).changes;
    })
    .immediate();
}

/** The prolog-like writer beside `fn`: its write times. */
async function beside<T>(path: string, fn: () => Promise<T> | T): Promise<{ r: T; waits: number[]; failed: number; error?: string }> {
  const w = spawn(process.execPath, [WRITER, path, String(HOOK_BUSY_MS)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  w.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<void>((res) => w.once('exit', () => res()));
  while (!out.includes('ready\n')) await new Promise((res) => w.stdout.once('data', res));
  // a few writes before, as on a node where jobs start all the time
  await new Promise((res) => setTimeout(res, 200));
  const r = await fn();
  await new Promise((res) => setTimeout(res, 200));
  w.stdin.end();
  await exited;
  const { waits, failed, error } = JSON.parse(out.split('\n').filter(Boolean).at(-1)!) as {
    waits: number[];
    failed: number;
    error?: string;
  };
  return { r, waits, failed, error };
}

function prune(
  totalMs: number,
  deleted: number,
  batches: number[],
  byStep: Record<string, number>,
  hook: { waits: number[]; failed: number; error?: string },
  path: string,
): Prune {
  return {
    totalS: totalMs / 1000,
    deleted,
    batches: batches.length,
    batchP50Ms: pct(batches, 0.5),
    batchP99Ms: pct(batches, 0.99),
    batchMaxMs: pct(batches, 1),
    batchMaxByStepMs: byStep,
    hookWrites: hook.waits.length,
    hookWaitP50Ms: pct(hook.waits, 0.5),
    hookWaitMaxMs: pct(hook.waits, 1),
    hookFailed: hook.failed,
    hookError: hook.error,
    sizeAfterMb: mb(statSync(path).size),
  };
}

export async function benchStoreYears(n = 1_000_000, log: (s: string) => void = () => {}): Promise<StoreYearsResult> {
  const root = mkdtempSync(join(tmpdir(), 'l9gpu-store-years-'));
  try {
    const now = Date.now();
    const jobsMs = ((n / 2000) * DAY) / 2; // half the jobs past it
    const seriesMs = 30 * DAY;
    const dirs = { made: join(root, 'made'), before: join(root, 'before'), after: join(root, 'after') };
    const file = (d: string) => join(d, STORE_FILE);
    for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
    let t = performance.now();
    build(file(dirs.made), n, now);
    const buildS = (performance.now() - t) / 1000;
    const size = statSync(file(dirs.made)).size;
    log(`built ${n} jobs in ${buildS.toFixed(1)} s: ${mb(size).toFixed(1)} MB`);

    // before: the old start and the old prune, on a copy with the later migrations' columns (the writer's prolog
    // writes them) and without the prune's indexes
    copyFileSync(file(dirs.made), file(dirs.before));
    let db = new Database(file(dirs.before), { timeout: 50 });
    db.transaction(() => {
      for (const m of MIGRATIONS.slice(6)) if (!m.includes('CREATE INDEX jobs_end')) db.exec(m);
      db.pragma(`user_version = ${MIGRATIONS.length}`);
    })();
    t = performance.now();
    db.pragma('quick_check');
    const startQuickCheckS = (performance.now() - t) / 1000;
    t = performance.now();
    oldPrune(db, seriesMs, 10_000 * DAY, now);
    const emptyPruneS = (performance.now() - t) / 1000;
    log(`before: quick_check ${startQuickCheckS.toFixed(2)} s, empty prune ${emptyPruneS.toFixed(2)} s`);
    let t0 = 0;
    const old = await beside(file(dirs.before), () => {
      t0 = performance.now();
      const d = oldPrune(db, seriesMs, jobsMs, now);
      return { d, ms: performance.now() - t0 };
    });
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const before = {
      startQuickCheckS,
      emptyPruneS,
      prune: prune(old.r.ms, old.r.d, [old.r.ms], { 'one transaction': old.r.ms }, old, file(dirs.before)),
    };
    log(`before: prune ${JSON.stringify(before.prune)}`);
    rmSync(dirs.before, { recursive: true, force: true });

    // after: the migration at the daemon's first open, the open the next starts pay, the page check off the start
    copyFileSync(file(dirs.made), file(dirs.after));
    rmSync(dirs.made, { recursive: true, force: true });
    t = performance.now();
    const notices: string[] = [];
    openStore(dirs.after, { check: true, busyTimeoutMs: 50, onNotice: (m) => notices.push(m) }).close();
    const migrationS = (performance.now() - t) / 1000;
    t = performance.now();
    openStore(dirs.after, { check: true, busyTimeoutMs: 50 }).close();
    const startOpenMs = performance.now() - t;
    const pageCheck = await checkPages(file(dirs.after));
    log(
      `after: migration ${migrationS.toFixed(2)} s (${notices.join('; ')}), open ${startOpenMs.toFixed(1)} ` +
        `ms, page check ${pageCheck.result} ${(pageCheck.ms / 1000).toFixed(1)} s`,
    );
    // the store converted with the daemon stopped (compactStore), as the start's notice says for a store this large
    t = performance.now();
    const c = compactStore(dirs.after);
    const compactS = (performance.now() - t) / 1000;
    db = openStore(dirs.after, { check: true, busyTimeoutMs: 50 });
    const w = new RollupWriter(db);
    const nothing = await runPrunePass(db, pruneSteps(w, { jobsMs: 10_000 * DAY, seriesMs }, now));
    const batches: number[] = [];
    const byStep: Record<string, number> = {};
    const onBatch = (name: string, ms: number) => {
      batches.push(ms);
      byStep[name] = Math.max(byStep[name] ?? 0, ms);
    };
    const pass = await beside(file(dirs.after), () => runPrunePass(db, pruneSteps(w, { jobsMs, seriesMs }, now), { onBatch }));
    const after = {
      migrationS,
      startOpenMs,
      pageCheckS: pageCheck.ms / 1000,
      compactS,
      compactedMb: mb(c.after),
      emptyPruneMs: nothing.ms,
      emptyPruneLockMs: nothing.longestBatchMs,
      prune: prune(pass.r.ms, pass.r.rows.jobs ?? 0, batches, byStep, pass, file(dirs.after)),
    };
    db.close();
    log(`after: ${JSON.stringify(after)}`);
    return { jobs: n, buildS, sizeMb: mb(size), bytesPerJob: size / n, before, after };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = await benchStoreYears(Number(process.argv[2] ?? 1_000_000), (s) => process.stderr.write(`${s}\n`));
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
