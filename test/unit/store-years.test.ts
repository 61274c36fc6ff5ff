/**
 * A store that lives for years (issue 41, item 7), on real SQLite: the
 * migration that indexes the prune's ranges, the prune in batches with the
 * same rows gone as the one-transaction prune took, space given back
 * (auto_vacuum = incremental), the cheap check at open and the page check off
 * the start, and a store newer than this l9gpu (a downgrade) read, never
 * written.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createLogger } from '../../src/core/log.js';
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import type { Batch } from '../../src/core/metrics/model.js';
import { JobLedger, pruneSteps } from '../../src/ledger/ledger.js';
import { runPrunePass } from '../../src/ledger/prune-pass.js';
import { PRUNE_SQL, RollupWriter } from '../../src/ledger/rollup-writer.js';
import { FORGET_SQL } from '../../src/ledger/series-deltas.js';
import { openBindings, recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore, openStoreReadOnly, STORE_FILE, StoreNewer, type Db } from '../../src/store/open.js';
import { newerStore, openNewerStore } from '../../src/store/open-readonly.js';
import { checkPages } from '../../src/store/page-check.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/store/schema.js';
import { tempDir } from '../helpers/paths.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 1);
const RETENTION = { jobsMs: 365 * DAY, seriesMs: 30 * DAY };

/** A job run with one GPU, ended at `end` (open when null), and a row in each table a run has figures in. */
function addJob(db: Db, id: string, end: number | null, stateBytes = 200): void {
  const start = (end ?? NOW) - 3_600_000;
  const gpu = { uuid: `GPU-${id}`, shared: false };
  recordStart(db, { jobId: id, runKey: 'r0', user: 'alice', uid: 1001, startTime: start }, [gpu], 'prolog', start);
  if (end !== null) recordEnd(db, { jobId: id, runKey: 'r0' }, { endTime: end, state: 'COMPLETED' }, [gpu], 'epilog', end);
  db.transaction(() => {
    db.prepare(
      `INSERT INTO job_gpu (job_id, run_key, gpu_uuid, samples, covered_s, gpu_hours, energy_j, ` +
        `state, updated_at) VALUES (?, 'r0', ?, 1, 1, 1, 1, ?, ?)`,
    ).run(id, gpu.uuid, 'x'.repeat(stateBytes), start);
    for (let m = 0; m < 3; m++)
      db.prepare(
        `INSERT INTO job_gpu_series (job_id, run_key, gpu_uuid, minute, util_sum, power_sum, n) VALUES (?, 'r0', ?, ?, 1, 1, 1)`,
      ).run(id, gpu.uuid, m);
    db.prepare(
      `INSERT INTO job_engine (job_id, run_key, engine, endpoint, model, first_time, last_time, ` +
        `requests) VALUES (?, 'r0', 'vllm', 'e', 'm', 0, 0, 1)`,
    ).run(id);
    db.prepare(
      `INSERT INTO job_nccl (job_id, run_key, comm, comm_name, collective, size, rank, n_ranks, ` +
        `n_nodes, first_time, last_time, ops, bytes, seconds) VALUES (?, 'r0', 'c', 'c', ` +
        `'AllReduce', '1M', 0, 1, 1, 0, 0, 1, 1, 1)`,
    ).run(id);
  })();
}

const count = (db: Db, sql: string): number => (db.prepare(sql).get() as { n: number }).n;
const ids = (db: Db, table: string): string[] =>
  (db.prepare(`SELECT DISTINCT job_id AS id FROM ${table} ORDER BY 0 + job_id`).all() as { id: string }[]).map((r) => r.id);
const range = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => String(from + i));
const sha = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');
const quiet = () => createLogger('error', () => {});

const steps = (w: RollupWriter, now: number) => pruneSteps(w, RETENTION, now);

test('the migrations from a store of schema 6: its jobs kept, the prune ranges indexed (7)', () => {
  const dir = tempDir();
  const path = join(dir, STORE_FILE);
  const old = new Database(path);
  old.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.slice(0, 6)) old.exec(m);
  old.pragma('user_version = 6');
  // rows as an l9gpu of schema 6 wrote them (today's writes have later columns)
  for (const [id, end] of [
    ['1', NOW - DAY],
    ['2', null],
  ] as const) {
    old
      .prepare(
        `INSERT INTO jobs (job_id, run_key, user, start_time, end_time, source, updated_at) VALUES (?, 'r0', 'alice', ?, ?, 'prolog', ?)`,
      )
      .run(id, NOW - 2 * DAY, end, NOW);
    old
      .prepare(`INSERT INTO bindings (job_id, run_key, gpu_uuid, start_time, end_time, source) VALUES (?, 'r0', ?, ?, ?, 'prolog')`)
      .run(id, `GPU-${id}`, NOW - 2 * DAY, end);
    old
      .prepare(
        `INSERT INTO job_gpu (job_id, run_key, gpu_uuid, samples, covered_s, gpu_hours, energy_j, ` +
          `state, updated_at) VALUES (?, 'r0', ?, 1, 1, 1, 1, '{}', ?)`,
      )
      .run(id, `GPU-${id}`, NOW);
  }
  old.close();

  const db = openStore(dir);
  assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  assert.ok(SCHEMA_VERSION >= 7);
  assert.deepEqual(ids(db, 'jobs'), ['1', '2']);
  assert.deepEqual(ids(db, 'job_gpu'), ['1', '2']);
  assert.equal(openBindings(db).length, 1);
  const indexes = (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index'`).all() as { name: string }[]).map((r) => r.name);
  assert.ok(indexes.includes('jobs_end') && indexes.includes('engine_series_seen'), indexes.join(', '));
  db.close();
});

test('every statement of the prune searches an index: no SCAN of a table', () => {
  const db = openStore(tempDir());
  const plans: [string, string[]][] = [];
  const plan = (sql: string, params: unknown) => {
    const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params as never) as { detail: string }[];
    plans.push([sql, rows.map((r) => r.detail)]);
  };
  plan(PRUNE_SQL.expired, [NOW, 500]);
  for (const d of PRUNE_SQL.drop) plan(d, ['1', 'r0']);
  plan(PRUNE_SQL.dropJob, [1]);
  plan(PRUNE_SQL.ended, { t: 0, id: 0, cut: NOW, limit: 500 });
  plan(PRUNE_SQL.dropSeries, ['1', 'r0']);
  plan(PRUNE_SQL.mark, []);
  plan(FORGET_SQL, [NOW, 500]);
  for (const [sql, details] of plans) {
    assert.ok(details.length > 0, sql);
    for (const d of details) assert.doesNotMatch(d, /^SCAN (?!CONSTANT ROW)/, `${sql}\n  plan: ${details.join(' | ')}`);
  }
  const expired = plans[0]![1].join(' | ');
  assert.match(expired, /USING INDEX jobs_end/, expired);
  assert.doesNotMatch(expired, /TEMP B-TREE/, 'the index gives the order: no sort of every expired job');
  db.close();
});

test(
  'the prune in batches: exactly the expired jobs and all their rows go, the series of jobs ' +
    'past the series retention, nothing else; a second pass finds nothing',
  async () => {
    const db = openStore(tempDir());
    // 0-699 past the job retention (two batches), 700-999 past the series retention only, 1000-1199 recent, 1200-1299 running
    for (let i = 0; i < 1300; i++)
      addJob(db, String(i), i < 700 ? NOW - 400 * DAY + i : i < 1000 ? NOW - 40 * DAY + i : i < 1200 ? NOW - DAY : null);
    const w = new RollupWriter(db);
    const r = await runPrunePass(db, steps(w, NOW), { pauseMs: 1 });
    assert.deepEqual(r.rows, { jobs: 700, series: 300 });
    assert.equal(r.batches >= 3, true, `batches: ${r.batches}`);
    const kept = range(700, 1300);
    for (const t of ['jobs', 'job_gpu', 'job_engine', 'job_nccl', 'bindings']) assert.deepEqual(ids(db, t), kept, t);
    assert.deepEqual(ids(db, 'job_gpu_series'), range(1000, 1300));
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM job_gpu_series'), 300 * 3);
    assert.equal(openBindings(db).length, 100, 'the running jobs keep their open bindings');

    // the series mark: the next pass takes no job again, and a job ending later is still taken when its time comes
    const again = await runPrunePass(db, steps(w, NOW), { pauseMs: 1 });
    assert.deepEqual(again.rows, { jobs: 0, series: 0 });
    const later = await runPrunePass(db, steps(w, NOW + 30 * DAY), { pauseMs: 1 });
    assert.deepEqual(later.rows, { jobs: 0, series: 200 });
    assert.deepEqual(ids(db, 'job_gpu_series'), range(1200, 1300));
    db.close();
  },
);

test("the ledger's hourly prune runs beside the ticks, not in them, and stops when its store is closed", async () => {
  const db = openStore(tempDir());
  for (let i = 0; i < 1200; i++) addJob(db, String(i), NOW - 400 * DAY + i);
  const id = gpuAttributes({ index: 0, uuid: 'GPU-aaaa', model: 'NVIDIA H100 80GB HBM3', vendor: 'nvidia', pciBusId: '0000:18:00.0' });
  const batch = (t: number): Batch => ({
    source: 'nvml',
    time: t,
    intervalMs: 1000,
    points: [{ metric: GPU.util, value: 0.5, attributes: id }],
  });
  const ledger = new JobLedger(db, quiet(), RETENTION);
  ledger.observe(batch(NOW));
  assert.equal(count(db, 'SELECT COUNT(*) AS n FROM jobs'), 1200, 'the tick that starts the prune deletes nothing itself');
  const pass = ledger.pruning();
  assert.ok(pass, 'a pass under way');
  const r = await pass;
  assert.equal(r?.rows.jobs, 1200);
  assert.equal(count(db, 'SELECT COUNT(*) AS n FROM jobs'), 0);
  assert.equal(ledger.pruning(), undefined);

  // the next hour's pass on a store a reload closed meanwhile: it stops, says nothing went wrong
  for (let i = 0; i < 800; i++) addJob(db, String(i), NOW - 400 * DAY + i);
  ledger.observe(batch(NOW + 2 * 3_600_000));
  const next = ledger.pruning();
  db.close();
  assert.equal((await next)?.stopped, 'the store was closed');
});

test('space given back: a new store is auto_vacuum = incremental, and a prune of most of its jobs shrinks the file', async () => {
  const dir = tempDir();
  const db = openStore(dir);
  assert.equal(db.pragma('auto_vacuum', { simple: true }), 2, 'incremental');
  for (let i = 0; i < 1500; i++) addJob(db, String(i), i < 1200 ? NOW - 400 * DAY : NOW - DAY, 2000);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const before = statSync(join(dir, STORE_FILE)).size;
  const r = await runPrunePass(db, steps(new RollupWriter(db), NOW), { pauseMs: 1, vacuumPages: 64 });
  assert.equal(r.rows.jobs, 1200);
  assert.ok(r.pagesGivenBack > 0, 'pages given back');
  assert.equal(db.pragma('freelist_count', { simple: true }), 0);
  const after = statSync(join(dir, STORE_FILE)).size;
  assert.ok(after < before / 2, `${before} bytes before, ${after} after`);
  assert.equal(db.pragma('quick_check', { simple: true }), 'ok');
  db.close();
});

test("a small store made before auto_vacuum: converted at the daemon's open and said so; the hooks' open leaves it", () => {
  const dir = tempDir();
  const path = join(dir, STORE_FILE);
  const old = new Database(path);
  old.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS) old.exec(m);
  old.pragma(`user_version = ${SCHEMA_VERSION}`);
  for (let i = 0; i < 50; i++) addJob(old, String(i), NOW - DAY);
  old.close();

  const hook = openStore(dir);
  assert.equal(hook.pragma('auto_vacuum', { simple: true }), 0);
  hook.close();
  const notices: string[] = [];
  const db = openStore(dir, { check: true, onNotice: (m) => notices.push(m) });
  assert.equal(db.pragma('auto_vacuum', { simple: true }), 2);
  assert.equal(notices.length, 1);
  assert.match(notices[0]!, /converted to auto_vacuum = incremental in \d+ ms/);
  assert.deepEqual(ids(db, 'jobs').length, 50);
  db.close();
});

test("the daemon's open checks the file cheaply: a store cut short is moved aside without reading every page", () => {
  const dir = tempDir();
  const db = openStore(dir);
  for (let i = 0; i < 300; i++) addJob(db, String(i), NOW - DAY);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const path = join(dir, STORE_FILE);
  truncateSync(path, Math.floor(statSync(path).size / 2));
  const said: string[] = [];
  const fresh = openStore(dir, { check: true, onRecovered: (m) => said.push(m) });
  assert.match(said[0] ?? '', /was damaged \(database disk image is malformed\): moved to \S+\.corrupt-/);
  assert.equal(count(fresh, 'SELECT COUNT(*) AS n FROM jobs'), 0);
  fresh.close();
});

test('the page check finds a page damaged inside a store whose open passed; the store is then moved aside', async () => {
  const dir = tempDir();
  const db = openStore(dir);
  for (let i = 0; i < 600; i++) addJob(db, String(i), NOW - DAY, 1000);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  db.close();
  const path = join(dir, STORE_FILE);
  assert.equal((await checkPages(path)).result, 'ok');
  // a page in the middle overwritten, the file's length and header intact
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, Math.floor(pages / 2) * pageSize);
  closeSync(fd);

  const opened = openStore(dir, { check: true });
  opened.close();
  const check = await checkPages(path);
  assert.notEqual(check.result, 'ok');
  const said: string[] = [];
  const fresh = openStore(dir, {
    check: true,
    damaged: { reason: `page check: ${check.result}`, checkedIno: statSync(path).ino },
    onRecovered: (m) => said.push(m),
  });
  assert.match(said[0] ?? '', /was damaged \(page check: .+\): moved to \S+\.corrupt-/);
  assert.equal(readdirSync(dir).filter((f) => f.startsWith(`${STORE_FILE}.corrupt-`) && !/-(wal|shm)$/.test(f)).length, 1);
  assert.equal(count(fresh, 'SELECT COUNT(*) AS n FROM jobs'), 0);
  fresh.close();
});

test(
  'a store newer than this l9gpu (a downgrade): read-only, its bindings and jobs read, never ' +
    'written, the file unchanged byte for byte, said',
  () => {
    const dir = tempDir();
    const db = openStore(dir);
    addJob(db, '41', null);
    addJob(db, '40', NOW - DAY);
    db.close();
    const path = join(dir, STORE_FILE);
    // what a newer l9gpu's migration does: it only adds
    const newer = new Database(path);
    newer.exec(`ALTER TABLE jobs ADD COLUMN future TEXT; CREATE TABLE job_future (job_id TEXT, run_key TEXT, x REAL);`);
    newer.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    newer.pragma('wal_checkpoint(TRUNCATE)');
    newer.close();
    const before = sha(path);
    assert.equal(newerStore(dir)?.version, SCHEMA_VERSION + 1);

    assert.throws(
      () => openStore(dir, { check: true }),
      (e: unknown) => e instanceof StoreNewer && e.version === SCHEMA_VERSION + 1 && e.supported === SCHEMA_VERSION,
    );
    const { db: ro, newer: said } = openNewerStore(dir);
    assert.match(
      said.message,
      new RegExp(
        `has schema version ${SCHEMA_VERSION + 1}, newer than this l9gpu \\(${SCHEMA_VERSION}\\): a ` +
          `downgrade\\. It is opened read-only and never written`,
      ),
    );
    assert.deepEqual(
      openBindings(ro).map((b) => b.jobId),
      ['41'],
      'attribution reads the bindings',
    );
    assert.throws(
      () => recordStart(ro, { jobId: '42', runKey: 'r0' }, [{ uuid: 'GPU-42', shared: false }], 'prolog', NOW),
      /readonly|query_only|read-only/i,
    );
    ro.close();
    // users' l9gpu jobs reads it too
    const users = openStoreReadOnly(dir);
    assert.deepEqual(ids(users, 'jobs'), ['40', '41']);
    users.close();
    assert.equal(sha(path), before, 'the newer store unchanged, byte for byte');
    assert.equal(newerStore(dir)?.message, said.message);
    // a store this l9gpu writes is no newer store
    assert.equal(newerStore(tempDir()), undefined);
  },
);
