/**
 * `jobs --by` streamed from the store (src/jobs/by-store.ts) against the fold
 * it replaces (groupJobs over listJobs of every matching job), on a store
 * written by the production writers (the hooks' recordStart/recordEnd, the
 * daemon's RollupWriter) with multi-GPU jobs, running jobs, shared GPUs, GPM
 * and energy of every kind; and the jobs socket's bounds on one question
 * (src/jobs/question-bounds.ts): a question past them is answered why, and
 * the socket answers the next one.
 */
import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { DEFAULT_LIMITS } from '../../src/core/limits.js';
import { rng } from '../../src/core/rng.js';
import type { Attributes } from '../../src/core/metrics/model.js';
import type { GpuSample } from '../../src/figures/rollup.js';
import type { Prices } from '../../src/figures/prices.js';
import type { ListRequest } from '../../src/jobs/api.js';
import { GROUP_BY, groupJobs } from '../../src/jobs/by.js';
import { groupJobsInStore } from '../../src/jobs/by-store.js';
import { askJobsDaemon } from '../../src/jobs/client.js';
import { listJobs, type ListFilter } from '../../src/jobs/list.js';
import { QuestionTooLarge, tooLong, tooManyGroups, tooMuchMemory } from '../../src/jobs/question-bounds.js';
import { jobsSocketPath, startJobsServer, type JobsServerOptions } from '../../src/jobs/server.js';
import { RollupWriter } from '../../src/ledger/rollup-writer.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore, openStoreReadOnly } from '../../src/store/open.js';
import { fillJobsStore } from '../../bench/jobs.js';
import { tempDir } from '../helpers/paths.js';

const NODE = 'gpunode3';
const T0 = Date.UTC(2026, 10, 1);
const MODELS = ['NVIDIA H100 80GB HBM3', 'NVIDIA A100-SXM4-40GB', null];
const PRICES: Prices = {
  perGpuHour: 2.1,
  perModel: [['H100', 4.3]],
  perPartition: [['debug', 0.7]],
  perNode: [],
  perKwh: 0.23,
  gCo2ePerKwh: 310,
  pue: 1.35,
  currency: 'EUR',
};
const NODE_PRICES: Prices = { ...PRICES, perNode: [['gpunode*', 3.3]], perKwh: null };

/**
 * 160 job runs on 6 GPUs of one node, one after another, each ticked by the
 * daemon's rollup writer with samples of its own kind; a fifth stay running
 * (their GPUs then shared with the jobs after them), some are requeued, some
 * have no GPU or a GPU never sampled.
 */
function variedStore(dir: string): void {
  const db = openStore(dir);
  const w = new RollupWriter(db);
  const r = rng(41);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  let t = T0;
  for (let i = 0; i < 160; i++) {
    const jobId = String(5000 + i);
    const runKey = i % 23 === 5 ? 'r1' : 'r0';
    const n = i % 17 === 0 ? 0 : 1 + Math.floor(r() * 4);
    const first = Math.floor(r() * 6);
    const uuids = Array.from({ length: n }, (_, k) => `GPU-${(first + k) % 6}`);
    const start = t;
    // a user none of whose GPUs measured energy: their energy is unknown, not 0
    const erin = i >= 155;
    recordStart(
      db,
      {
        jobId,
        runKey,
        user: erin ? 'erin' : i % 19 === 3 ? null : pick(['alice', 'bob', 'carol', 'dave']),
        uid: 1000 + i,
        account: pick(['physics', 'bio', null]),
        partition: pick(['gpu', 'debug', 'long']),
        name: erin ? 'erin-job' : i % 13 === 0 ? null : `train-${i % 9}`,
        startTime: start,
      },
      uuids.map((uuid) => ({ uuid, shared: r() < 0.1 })),
      'prolog',
      start,
    );
    // a GPU bound and never sampled: a binding without figures
    const sampled = uuids.filter((_, k) => !(i % 11 === 0 && k === 0));
    const kinds = new Map(
      sampled.map((u) => [
        u,
        {
          util: r() > 0.15,
          energy: erin ? 'none' : pick(['counter', 'power', 'none', 'once', 'power0'] as const),
          gpm: pick(['full', 'no-sm', 'none'] as const),
          share: r() < 0.2 ? 0.5 : 1,
          model: pick(MODELS),
        },
      ]),
    );
    const ticks = i % 7 === 0 ? 1 : 2 + Math.floor(r() * 25);
    for (let k = 0; k < ticks; k++) {
      t += 10_000;
      const samples = new Map<string, GpuSample>();
      for (const [u, kind] of kinds) {
        const s: GpuSample = { t, memUsed: r() * 8e10, memTotal: 8e10, temp: 60 };
        if (kind.util) s.util = r() < 0.3 ? 0 : r();
        if (kind.energy === 'counter') s.energy = 1e6 + k * (2000 + r() * 3000);
        if (kind.energy === 'once') s.energy = k === 0 ? 5e5 : undefined;
        if (kind.energy === 'power') s.power = 100 + r() * 500;
        // a power reading of 0 W: 0 J, measured
        if (kind.energy === 'power0') s.power = 0;
        // GPM on most samples, not all: the GPU-hours it covered are a part of the GPU's
        if (kind.gpm === 'full' && r() < 0.7)
          s.gpm = { smActive: r(), smOccupancy: r(), tensorActive: r(), dramActive: r(), fp64Active: 0, fp32Active: r(), fp16Active: r() };
        if (kind.gpm === 'no-sm') s.gpm = { dramActive: r(), nvlinkBps: r() * 1e9 };
        samples.set(u, s);
      }
      const identities = new Map(
        [...kinds].map(([u, kind]): [string, Attributes] => [u, { 'gpu.uuid': u, ...(kind.model ? { 'gpu.model': kind.model } : {}) }]),
      );
      const bindings = new Map([...kinds].map(([u, kind]) => [u, [{ jobId, runKey, share: kind.share }]]));
      w.record(samples, identities, bindings, 25_000, t);
    }
    t += 30_000;
    if (i % 5 !== 2)
      recordEnd(db, { jobId, runKey }, { endTime: t, state: pick(['COMPLETED', 'FAILED', 'TIMEOUT']), exitCode: 0 }, [], 'epilog', t);
    for (const u of uuids) w.finish(jobId, runKey, u);
  }
  // what the generator made is what the comparison is about
  const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
  assert.ok(count('SELECT COUNT(*) AS n FROM jobs WHERE end_time IS NULL') >= 20, 'running jobs');
  assert.ok(count('SELECT COUNT(*) AS n FROM bindings WHERE shared = 1') >= 10, 'shared GPUs');
  assert.ok(
    count('SELECT COUNT(*) AS n FROM (SELECT 1 FROM job_gpu GROUP BY job_id, run_key HAVING COUNT(*) > 2)') >= 10,
    'multi-GPU jobs',
  );
  assert.ok(count('SELECT COUNT(*) AS n FROM job_gpu WHERE sm_active IS NULL AND gpm_s IS NOT NULL') >= 5, 'GPM without SM activity');
  assert.ok(
    count(`SELECT COUNT(*) AS n FROM job_gpu WHERE energy_j = 0 AND json_extract(state, '$.energyFromCounter')`) >= 5,
    'a counter read once: 0 J, known',
  );
  assert.ok(count('SELECT COUNT(*) AS n FROM job_gpu WHERE util_mean IS NULL') >= 5, 'GPUs without utilization');
  assert.ok(
    count(
      'SELECT COUNT(*) AS n FROM bindings b WHERE NOT EXISTS (SELECT 1 FROM job_gpu g WHERE ' +
        'g.job_id = b.job_id AND g.run_key = b.run_key AND g.gpu_uuid = b.gpu_uuid)',
    ) >= 5,
    'GPUs never sampled',
  );
  db.close();
}

const FILTERS: Omit<ListFilter, 'limit'>[] = [
  { state: 'all' },
  { state: 'running' },
  { state: 'completed', since: T0 + 3_600_000 },
  { state: 'all', user: 'alice' },
  { state: 'all', account: 'physics', partition: 'gpu' },
];

test('jobs --by from the store: the figures of the fold over the whole list, for every grouping, filter and price', () => {
  const dir = tempDir('l9gpu-jobs-by-');
  variedStore(dir);
  const db = openStoreReadOnly(dir);
  try {
    for (const prices of [null, PRICES, NODE_PRICES]) {
      for (const f of FILTERS) {
        for (const by of GROUP_BY) {
          const old = groupJobs(listJobs(db, { ...f, limit: 0 }, NODE, prices), by, prices?.currency ?? null);
          assert.ok(old.length > 0, `${by} ${JSON.stringify(f)}: some groups`);
          assert.deepEqual(
            groupJobsInStore(db, f, by, NODE, prices),
            old,
            `${by} ${JSON.stringify(f)} ${prices ? prices.currency : 'no prices'}`,
          );
        }
      }
    }
    // the figures are there to compare: not every sum is null
    const all = groupJobsInStore(db, { state: 'all' }, 'user', NODE, PRICES);
    assert.equal(all.find((g) => g.group === 'erin')?.energy_kwh, null);
    assert.ok(
      all.some(
        (g) =>
          g.sm_gpu_hours !== null &&
          g.energy_kwh !== null &&
          g.cost !== null &&
          g.co2e_kg !== null &&
          g.util_mean !== null &&
          g.idle_gpu_hours > 0,
      ),
    );
  } finally {
    db.close();
  }
});

test('jobs --by past its groups bound: the error names the bound and how to narrow the question', () => {
  const dir = tempDir('l9gpu-jobs-by-groups-');
  variedStore(dir);
  const db = openStoreReadOnly(dir);
  try {
    assert.throws(
      () => groupJobsInStore(db, { state: 'all' }, 'name', NODE, null, 3),
      (e) => e instanceof QuestionTooLarge && e.message === tooManyGroups('name', 3).message,
    );
    assert.match(
      tooManyGroups('name', 3).message,
      /^jobs --by name: more than 3 groups, the most one answer of the daemon holds; narrow it with --since/,
    );
    assert.equal(groupJobsInStore(db, { state: 'all' }, 'account', NODE, null, 3).length, 3, 'at the bound is within it');
  } finally {
    db.close();
  }
});

const LIST: ListRequest = { op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 0 };

async function serve(dir: string, more: Partial<JobsServerOptions> = {}) {
  const lines: string[] = [];
  const o: JobsServerOptions = {
    stateDir: dir,
    node: () => NODE,
    prices: () => PRICES,
    adminGroup: () => null,
    log: createLogger('warn', (l) => lines.push(l)),
    ...more,
  };
  return { server: await startJobsServer(o), o, lines, sock: jobsSocketPath(dir) };
}

test("the socket's --by answer is the old fold's, from the store worker", async () => {
  const dir = tempDir('l9gpu-jobs-by-sock-');
  chmodSync(dir, 0o755);
  variedStore(dir);
  const db = openStoreReadOnly(dir);
  const old = groupJobs(listJobs(db, { state: 'all', limit: 0 }, NODE, PRICES), 'user', 'EUR');
  db.close();
  const { server, sock } = await serve(dir);
  try {
    const a = await askJobsDaemon(sock, { ...LIST, by: 'user' });
    assert.ok(a.ok && a.op === 'list', JSON.stringify(a));
    assert.deepEqual(a.groups, old);
  } finally {
    server.close();
  }
});

test("a question past the worker's heap is answered why; the socket answers the next one, and --by over the same jobs fits", async () => {
  const dir = tempDir('l9gpu-jobs-by-heap-');
  chmodSync(dir, 0o755);
  fillJobsStore(dir, 20_000, () => 'root');
  // a page of every job at once: far past a 16 MB heap
  const { server, sock, lines } = await serve(dir, {
    limits: () => ({ ...DEFAULT_LIMITS, jobsRows: 1_000_000 }),
    storeBounds: { heapMb: 16 },
  });
  try {
    const [big, behind] = await Promise.all([askJobsDaemon(sock, LIST, 120_000), askJobsDaemon(sock, { ...LIST, limit: 3 }, 120_000)]);
    assert.deepEqual(big, { ok: false, error: tooMuchMemory(16).message, code: 1 });
    assert.match(
      big.ok ? '' : big.error,
      new RegExp(
        String.raw`^the question needed more than the 16 MB of memory the daemon gives one ` +
          String.raw`question; narrow it with --since, --state, --user, --account or --partition$`,
      ),
    );
    // the question asked behind it went to the next worker
    assert.ok(behind.ok && behind.op === 'list' && behind.rows.length === 3, JSON.stringify(behind));
    const by = await askJobsDaemon(sock, { ...LIST, by: 'account' }, 120_000);
    assert.ok(by.ok && by.op === 'list' && by.groups!.reduce((n, g) => n + g.jobs, 0) === 20_000, JSON.stringify(by).slice(0, 300));
    assert.equal(lines.filter((l) => l.includes('jobs socket: a question past its bound')).length, 1, lines.join(''));
    assert.match(lines.join(''), /user=root/);
  } finally {
    server.close();
  }
});

test('a question past its time is answered why, and the socket answers the next one', async () => {
  const dir = tempDir('l9gpu-jobs-by-time-');
  chmodSync(dir, 0o755);
  variedStore(dir);
  // 1 ms: less than a worker takes to start, so the first question is always past it
  const { server, sock, o } = await serve(dir, { storeBounds: { questionMs: 1 } });
  try {
    const late = await askJobsDaemon(sock, { ...LIST, by: 'user' });
    assert.deepEqual(late, { ok: false, error: tooLong(1).message, code: 1 });
    server.retarget({ ...o, storeBounds: undefined });
    const next = await askJobsDaemon(sock, { ...LIST, by: 'user' });
    assert.ok(next.ok && next.op === 'list' && next.groups!.length > 0, JSON.stringify(next));
  } finally {
    server.close();
  }
});
