/** The rollup fold and the notes on exact inputs. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyRollup, figures, NO_IDLE, step } from '../../src/figures/rollup.js';
import { jobNotes } from '../../src/jobs/notes.js';
import { timeLimitNotes } from '../../src/jobs/waste.js';
import { totalsOf } from '../../src/jobs/report.js';
import type { GpuRow, JobHeader } from '../../src/jobs/report-model.js';
import { chmodSync, chownSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAgentConfig } from '../../daemon/catalog.js';
import { parseSince, trustedAdminGroup } from '../../src/cli/jobs-context.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { parseSacctJob } from '../../slurm/sacct-job.js';
import { CliError, printCliError } from '../../src/cli/errors.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
import { renderReport, sparkline } from '../../src/jobs/render.js';
import { style } from '../../src/core/text-table.js';
import { ViewerCache } from '../../src/jobs/access.js';
import { answerJobs } from '../../src/jobs/api.js';
import { openStore } from '../../src/store/open.js';

const G = 1024 ** 3;

test('the fold: means, maxima, covered time with capped gaps, energy from counter deltas at the share, resets', () => {
  const r = emptyRollup();
  const samples = [
    { t: 0, util: 0.5, memUsed: 10 * G, power: 300, energy: 1000, temp: 50, share: 0.5 },
    { t: 10_000, util: 1, memUsed: 20 * G, power: 500, energy: 4000, temp: 60, share: 0.5 },
    { t: 20_000, util: 0.5, memUsed: 15 * G, power: 400, energy: 7000, temp: 55, share: 0.5 },
    // the daemon was down 5 minutes: the gap counts only up to the cap
    { t: 320_000, util: 0.5, memUsed: 15 * G, power: 400, energy: 9000, share: 0.5 },
    // driver reload: the counter starts over, a new base, no negative energy
    { t: 330_000, util: 0.5, memUsed: 15 * G, power: 400, energy: 100, share: 0.5 },
    { t: 340_000, util: 0.5, memUsed: 15 * G, power: 400, energy: 2100, share: 0.5 },
  ];
  for (const s of samples) step(r, s, 25_000);
  step(r, { t: 340_000, util: 1 }, 25_000); // the same timestamp again: ignored
  const f = figures(r);
  assert.equal(f.samples, 6);
  assert.equal(f.seconds, 10 + 10 + 25 + 10 + 10);
  assert.equal(f.utilMean, Math.round((3.5 / 6) * 1e6) / 1e6, 'rounded to 6 decimals in reports');
  assert.equal(f.utilMax, 1);
  assert.equal(f.memUsedMax, 20 * G);
  assert.equal(f.energyJ, (4000 - 1000 + (7000 - 4000) + (9000 - 7000) + (2100 - 100)) * 0.5);
  assert.equal(f.energySource, 'counter');
  assert.equal(f.powerMean, 400);
  assert.equal(f.tempMax, 60);
  assert.equal(f.shareMean, 0.5);
  assert.equal(f.gpuHours, Math.round(((65 * 0.5) / 3600) * 1e6) / 1e6);
});

test('the fold: power integrated when there is no energy counter; throttled time; Xid and ECC as deltas from the first sample', () => {
  const r = emptyRollup();
  step(r, { t: 0, power: 100, throttle: { power: 0, thermal: 0 }, xid: { '13': 2 }, eccCorrected: 5, eccUncorrected: 0 }, 60_000);
  step(r, { t: 10_000, power: 300, throttle: { power: 1, thermal: 0 }, xid: { '13': 2 }, eccCorrected: 7, eccUncorrected: 1 }, 60_000);
  step(
    r,
    { t: 20_000, power: 300, throttle: { power: 1, thermal: 1 }, xid: { '13': 3, '79': 1 }, eccCorrected: 7, eccUncorrected: 1 },
    60_000,
  );
  const f = figures(r);
  assert.equal(f.energyJ, ((100 + 300) / 2) * 10 + ((300 + 300) / 2) * 10, 'trapezoid over each gap');
  assert.equal(f.energySource, 'power');
  assert.deepEqual(f.throttledS, { power: 20, thermal: 10 });
  assert.deepEqual(f.xid, { '13': 1, '79': 1 }, 'Xid 13 happened before the job: only the new one counts; 79 is new');
  assert.equal(f.eccCorrected, 2);
  assert.equal(f.eccUncorrected, 1);
});

const header: JobHeader = {
  id: '1',
  job_id: '1',
  run: 'r0',
  user: 'alice',
  uid: 1,
  account: 'a',
  partition: 'p',
  qos: null,
  name: null,
  cluster: null,
  state: 'COMPLETED',
  start: null,
  end: null,
  elapsed_s: 3600,
  exit_code: 0,
  nodes: ['n1'],
  earlier_runs: 0,
  cpus: null,
  mem_req_bytes: null,
  mem_max_rss_bytes: null,
  time_limit_s: null,
  time_efficiency: null,
  gpus_alloc: null,
  exit_signal: null,
};
function gpu(uuid: string, over: Partial<GpuRow['figures']> = {}, shared = false): GpuRow {
  return {
    node: 'n1',
    uuid,
    model: 'H100',
    index: 0,
    shared,
    figures: {
      samples: 360,
      seconds: 3600,
      gpuHours: 1,
      utilMean: 0.9,
      utilMax: 1,
      memUtilMean: 0.5,
      memUsedMax: 60 * G,
      memTotal: 80 * G,
      energyJ: 2e6,
      energySource: 'counter',
      powerMean: 550,
      powerMax: 700,
      tempMax: 70,
      throttledS: {},
      xid: {},
      eccCorrected: 0,
      eccUncorrected: 0,
      shareMean: 1,
      gpm: null,
      idle: NO_IDLE,
      ...over,
    },
  };
}
const codes = (gpus: GpuRow[], h = header) => jobNotes(h, gpus, totalsOf(gpus, null)).map((n) => n.code);

test('notes: a well-used job has none; each problem is named', () => {
  assert.deepEqual(codes([gpu('GPU-a'), gpu('GPU-b')]), []);
  const unused = jobNotes(
    header,
    [
      gpu('GPU-aaaaaaaaaaaa1'),
      gpu('GPU-bbbbbbbbbbbb2', { utilMean: 0, utilMax: 0.001 }),
      gpu('GPU-cccccccccccc3', { utilMean: 0, utilMax: 0 }),
    ],
    totalsOf([], null),
  );
  assert.match(unused.find((n) => n.code === 'unused-gpus')!.text, /did not use 2 of 3 GPUs \(GPU-bbbbbbbb, GPU-cccccccc\)/);
  assert.deepEqual(codes([gpu('GPU-a', { utilMean: 0.1, utilMax: 0.3 })]), ['low-utilization']);
  assert.deepEqual(codes([gpu('GPU-a', { memUsedMax: 4 * G })]), ['small-memory']);
  assert.deepEqual(codes([gpu('GPU-a', { throttledS: { thermal: 720, power: 10 } })]), ['throttled']);
  assert.deepEqual(codes([gpu('GPU-a', { xid: { '79': 1 } })]), ['xid']);
  assert.deepEqual(codes([gpu('GPU-a', { eccUncorrected: 2 })]), ['ecc']);
  assert.deepEqual(codes([gpu('GPU-a', { shareMean: 0.5 }, true)]), ['shared']);
  assert.deepEqual(codes([gpu('GPU-a', { energySource: 'power' })]), ['energy-from-power']);
  assert.deepEqual(
    codes([gpu('GPU-a', { seconds: 30, samples: 3, utilMax: 0, utilMean: 0 })]),
    ['too-short'],
    'too short: no utilization verdicts',
  );
  assert.deepEqual(codes([]), ['no-gpus']);
});

test('totals: utilization weighted by time, energy summed, cost by model price and kWh', () => {
  const t = totalsOf([gpu('GPU-a', { utilMean: 1, seconds: 3000 }), gpu('GPU-b', { model: 'x', utilMean: 0.5, seconds: 1000 } as never)], {
    perGpuHour: 2,
    perModel: [['H100', 3]],
    perKwh: 0.5,
    currency: 'EUR',
  });
  assert.equal(t.util_mean, (1 * 3000 + 0.5 * 1000) / 4000);
  assert.equal(t.energy_j, 4e6);
  assert.equal(t.cost, Math.round((3 * 1 + 3 * 1 + 0.5 * (4e6 / 3.6e6)) * 100) / 100);
  assert.equal(t.currency, 'EUR');
  assert.equal(
    totalsOf([gpu('GPU-a')], { perGpuHour: null, perModel: [], perKwh: null, currency: 'USD' }).cost,
    null,
    'no prices: no cost',
  );
});

test('--since spellings, and a sparkline', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  assert.equal(parseSince('24h', now), now - 86_400_000);
  assert.equal(parseSince('7d', now), now - 7 * 86_400_000);
  assert.equal(parseSince('2026-11-01', now), Date.parse('2026-11-01T00:00:00'));
  assert.throws(() => parseSince('yesterday', now), /--since: "yesterday" is not a time/);
  assert.equal(
    sparkline([
      [0, 0],
      [1, 0.5],
      [2, 1],
    ]),
    '▁▅█',
  );
  assert.equal(sparkline(Array.from({ length: 120 }, (_, i) => [i, i < 60 ? 0 : 1] as [number, number])).length, 60);
});

test(
  'the report text: a job that served a model gets an Inference section (requests, tokens, ' +
    'TTFT and ITL quantiles, tokens/s, tokens/J)',
  () => {
    const gpus = [gpu('GPU-a')];
    const inference = {
      engines: [{ engine: 'vllm', endpoint: '127.0.0.1:8000', model: 'meta-llama/Llama-3.1-8B' }],
      requests: 1234,
      prompt_tokens: 56789,
      generation_tokens: 98765,
      ttft_p50_s: 0.123,
      ttft_p95_s: 1.5,
      itl_p50_s: 0.021,
      itl_p95_s: null,
      serving_s: 3600,
      tokens_per_s: 27.435,
      tokens_per_j: 0.0125,
      cost_per_million_tokens: null,
    };
    const text = renderReport(
      { source: 'store', job: header, gpus, totals: totalsOf(gpus, null), inference, communication: null, series: [], notes: [] },
      style(false),
    );
    assert.match(
      text,
      new RegExp(
        String.raw`Inference \(vllm 127\.0\.0\.1:8000 meta-llama\/Llama-3\.1-8B\)\n  requests 1,234` +
          String.raw`   tokens in 56,789 \/ out 98,765   over 01:00:00\n  time to first token  p50 ` +
          String.raw`123 ms  p95 1\.50 s   inter-token latency  p50 21 ms  p95 -\n  27\.4 tokens\/s  ` +
          String.raw` 0\.013 tokens\/J`,
      ),
    );
  },
);

test('the report text: a multi-node job gets a per-node section; no colours unless asked', () => {
  const g = (node: string, uuid: string) => ({ ...gpu(uuid), node });
  const gpus = [g('n1', 'GPU-a'), g('n1', 'GPU-b'), g('n2', 'GPU-c')];
  const report = {
    source: 'promql' as const,
    job: { ...header, nodes: ['n1', 'n2'] },
    gpus,
    totals: totalsOf(gpus, null),
    inference: null,
    communication: null,
    series: [
      [0, 0.5],
      [60_000, 1],
    ] as [number, number][],
    notes: [],
  };
  const text = renderReport(report, style(false));
  assert.doesNotMatch(text, /Inference/, 'no section for a job that served nothing');
  assert.match(
    text,
    /Per node\n\s+NODE\s+GPUS\s+UTIL mean\s+MEM peak GiB\s+ENERGY kWh\s+GPU-H\n\s+n1\s+2\s+90%\s+60\.0\s+1\.111\s+2\.00\n\s+n2\s+1\s+90%/,
  );
  assert.match(text, /source: PromQL backend/);
  assert.doesNotMatch(text, /\x1b\[/);
  assert.match(renderReport(report, style(true)), /\x1b\[1mJob 1/);
  assert.match(text, /GPU utilization over the job \(per minute, 2 min\)\n\s+▅█/);
});

test('[jobs] admin_group counts for a user only from a file root owns and only root may write: never from their own config', () => {
  const dir = tempDir('l9gpu-admin-group-');
  const file = join(dir, 'l9gpu.ini');
  writeFileSync(file, '[jobs]\nadmin_group = hpcadmin\n', { mode: 0o644 });
  const cfg = () => loadAgentConfig({ configPath: file, env: {} });
  const USER = 1001;
  assert.equal(trustedAdminGroup(cfg(), USER), 'hpcadmin', "the site's file (root's, 0644)");
  chmodSync(file, 0o666);
  assert.equal(trustedAdminGroup(cfg(), USER), null, 'a file anyone may write');
  chmodSync(file, 0o644);
  chownSync(file, USER, USER);
  assert.equal(trustedAdminGroup(cfg(), USER), null, "the user's own file");
  assert.equal(trustedAdminGroup(cfg(), 0), 'hpcadmin', 'root reads its own config as it is');
  const flag = loadAgentConfig({
    defaultPath: '/nonexistent/l9gpu.ini',
    env: {},
    overrides: [{ section: 'jobs', key: 'admin_group', raw: 'users', flag: '--set' }],
  });
  assert.equal(trustedAdminGroup(flag, USER), null, 'not from a flag');
});

test('ViewerCache: a burst for one uid is one lookup; a few at once over many uids; answers kept for the TTL', async () => {
  let t = 0;
  let running = 0;
  let most = 0;
  const asked: number[] = [];
  const release: (() => void)[] = [];
  const cache = new ViewerCache({
    ttlMs: 60_000,
    concurrency: 2,
    now: () => t,
    lookup: async (uid) => {
      asked.push(uid);
      most = Math.max(most, ++running);
      await new Promise<void>((r) => release.push(r));
      running--;
      return { name: `u${uid}`, groups: uid === 7 ? ['ops'] : [] };
    },
  });
  const burst = Array.from({ length: 50 }, () => cache.viewer(7, 'ops'));
  const others = [8, 9, 10, 11].map((uid) => cache.viewer(uid, 'ops'));
  // lookups end one at a time, each letting the next waiting one start
  for (let turns = 0; (asked.length < 5 || release.length) && turns < 1000; turns++) {
    await new Promise((r) => setImmediate(r));
    release.shift()?.();
  }
  assert.deepEqual(
    await Promise.all(burst),
    Array.from({ length: 50 }, () => ({ name: 'u7', privileged: true })),
  );
  assert.deepEqual(
    (await Promise.all(others)).map((v) => v.name),
    ['u8', 'u9', 'u10', 'u11'],
  );
  assert.deepEqual(asked, [7, 8, 9, 10, 11], 'one lookup per uid');
  assert.equal(most, 2, 'never more than the cap at once');
  assert.equal(cache.nameOf(7), 'u7');
  assert.deepEqual(
    await cache.viewer(7, null),
    { name: 'u7', privileged: false },
    'the group is judged at each request, against the current admin_group',
  );
  assert.equal(asked.length, 5, 'within the TTL: no lookup');
  t = 60_001;
  const again = cache.viewer(7, 'ops');
  await new Promise((r) => setImmediate(r));
  release.shift()!();
  await again;
  assert.deepEqual(asked, [7, 8, 9, 10, 11, 7], 'past the TTL: looked up again');
});

test(
  'answerJobs pages: a limit past jobs_rows in pages that end at the limit; no limit pages to ' +
    'the end; one page as before when it fits',
  () => {
    const dir = tempDir('l9gpu-jobs-pages-');
    const db = openStore(dir);
    const ins = db.prepare(
      `INSERT INTO jobs (job_id, run_key, cluster, user, uid, account, partition, name, ` +
        `start_time, end_time, state, exit_code, source, updated_at) VALUES (?, 'r0', 'c', 'alice', ` +
        `1, 'a', 'gpu', null, ?, ?, 'COMPLETED', 0, 'prolog', 0)`,
    );
    // start times in pairs: the order within a pair is fixed by the job id, so pages neither repeat nor skip one
    for (let i = 0; i < 25; i++) ins.run(String(100 + i), 1000 - Math.floor(i / 2), 2000);
    const who = { name: 'alice', privileged: false };
    const list = { op: 'list' as const, user: null, account: null, partition: null, state: 'all' as const, since: null, limit: 0 };
    const pages = (limit: number, rows: number) => {
      const got: { ids: string[]; next?: number }[] = [];
      for (let offset: number | undefined = 0; offset !== undefined;) {
        const a = answerJobs(db, 'n', null, who, { ...list, limit, offset }, rows);
        assert.ok(a.ok && a.op === 'list');
        got.push({ ids: a.rows.map((r) => r.id), ...(a.next !== undefined ? { next: a.next } : {}) });
        offset = a.next;
      }
      return got;
    };
    const all = pages(0, Infinity)[0]!.ids;
    assert.equal(all.length, 25);
    assert.deepEqual(all.slice(0, 4), ['101', '100', '103', '102']);
    assert.deepEqual(
      pages(0, 10).map((p) => p.next),
      [10, 20, undefined],
    );
    assert.deepEqual(
      pages(0, 10).flatMap((p) => p.ids),
      all,
    );
    assert.deepEqual(
      pages(23, 10).map((p) => p.ids.length),
      [10, 10, 3],
    );
    assert.deepEqual(
      pages(23, 10).flatMap((p) => p.ids),
      all.slice(0, 23),
    );
    assert.deepEqual(pages(5, 10), [{ ids: all.slice(0, 5) }]);
    assert.deepEqual(pages(0, 25), [{ ids: all }], 'exactly a page: no empty page after it');
    const by = answerJobs(db, 'n', null, who, { ...list, by: 'user' }, 10);
    assert.ok(by.ok && by.op === 'list');
    assert.deepEqual([by.groups!.length, by.next], [1, undefined]);
    db.close();
  },
);

test(
  'jobs --waste: the ids a time-limit note names are printable and short (a --source promql ' +
    "id is a metric label, anyone's text), five a reason",
  () => {
    const hostile = `\u001b]0;owned\u0007${'9'.repeat(200)}`;
    const lines = timeLimitNotes(
      new Map([
        ['"x" is not a job id (123 or 122_4)', [hostile]],
        ['not in Slurm accounting (slurmdbd may not have the record yet)', ['1', '2', '3', '4', '5', '6', '7']],
      ]),
    );
    assert.equal(lines.length, 2);
    assert.doesNotMatch(lines[0]!, /[\u0000-\u0008\u000b-\u001f\u007f]/, 'no control character reaches the terminal');
    assert.ok(lines[0]!.length < 200, `cut short: ${lines[0]!.length} characters`);
    assert.match(lines[0]!, /^l9gpu: no time-limit class for job\(s\) \?\]0;owned\?9+/);
    assert.equal(
      lines[1],
      'l9gpu: no time-limit class for job(s) 1, 2, 3, 4, 5 and 2 more: not in Slurm accounting (slurmdbd may not have the record yet)\n',
    );
    // the reason quotes sacct's output, which quotes a job's fields: printable too
    const why = timeLimitNotes(new Map([['sacct -j 7: line 1: State "\u001b]52;c;ZWNobw==\u0007\u001b[2J" is not a job state', ['7']]]));
    assert.doesNotMatch(why[0]!, /[\u0000-\u0008\u000b-\u001f\u007f]/);
  },
);

test("sacct's quoted field in a parse error and a CLI error on stderr: no escape sequence reaches the terminal, line breaks kept", () => {
  const line = read('slurm/testdata/sacct/timeout.psv').split('\n')[0]!.split('|');
  line[8] = '\u001b]52;c;ZWNobw==\u0007\u001b[2J';
  assert.throws(
    () => parseSacctJob(line.join('|'), '4102'),
    (e: Error) => /State "\?\]52;c;ZWNobw==\?\?\[2J" is not a job state/.test(e.message),
  );
  const written: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((s: string) => (written.push(s), true)) as typeof process.stderr.write;
  try {
    printCliError(new CliError('two matches:\n  GPU-1\n  \u001b[31mGPU-2\u202e', 2));
  } finally {
    process.stderr.write = write;
  }
  assert.deepEqual(written, ['l9gpu: two matches:\n  GPU-1\n  ?[31mGPU-2?\n']);
});
