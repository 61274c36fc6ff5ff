/**
 * Cost, energy and carbon: the price of a GPU-hour where it was spent (node,
 * partition, model, default), energy and CO2e at the facility (x PUE), the
 * per-GPU cost rates the daemon emits, the job-end cost and CO2e, and
 * `l9gpu jobs --by` roll-ups over a real SQLite store built by the ledger.
 * Every figure is worked out by hand in the comments.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Batch, JobShare, Point } from '../../src/core/metrics/model.js';
import { metric, prometheusName } from '../../src/core/metrics/registry.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { JobLedger } from '../../src/ledger/ledger.js';
import { CostRates } from '../../src/ledger/cost-rate.js';
import { openStore } from '../../src/store/open.js';
import { recordStart } from '../../src/store/jobs.js';
import { findJob, reportFromStore, totalsOf } from '../../src/jobs/report.js';
import { costPerMillionTokens, gpuHourPrice, type Prices } from '../../src/figures/prices.js';
import { pricesFrom } from '../../src/jobs/prices.js';
import { answerJobs, parseJobsRequest, type JobsAnswer } from '../../src/jobs/api.js';
import { keyedGroups } from '../../src/jobs/by.js';
import { renderBy, renderByCsv, renderReport } from '../../src/jobs/render.js';
import type { GpuRow } from '../../src/jobs/report-model.js';
import { NO_IDLE } from '../../src/figures/rollup.js';
import { style } from '../../src/core/text-table.js';
import { configFrom } from '../helpers/config.js';
import { runCli } from '../helpers/daemon.js';
import { tempDir } from '../helpers/paths.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Money and grams compared to a nano-unit: the figures are exact, float sums are not. */
const n9 = (x: number | null | undefined) => (x === null || x === undefined ? x : Math.round(x * 1e9) / 1e9);

const PRICES: Prices = {
  perGpuHour: 2,
  perModel: [['H100', 3.2]],
  perPartition: [['gpu', 2.9]],
  perNode: [
    ['dgx*', 3.6],
    ['gpu017', 4.1],
  ],
  perKwh: 0.25,
  gCo2ePerKwh: 350,
  pue: 1.3,
  currency: 'EUR',
};

/** One GPU of a job: 2 GPU-hours, 1.2 kWh (4.32 MJ) of GPU energy. */
function row(node: string, model = 'NVIDIA H100 80GB HBM3'): GpuRow {
  return {
    node,
    uuid: `GPU-${node}`,
    model,
    index: 0,
    shared: false,
    figures: {
      samples: 721,
      seconds: 7200,
      gpuHours: 2,
      utilMean: 0.9,
      utilMax: 1,
      memUtilMean: 0.5,
      memUsedMax: 1e9,
      memTotal: 8e10,
      energyJ: 4.32e6,
      energySource: 'counter',
      powerMean: 600,
      powerMax: 700,
      tempMax: 70,
      throttledS: {},
      xid: {},
      eccCorrected: 0,
      eccUncorrected: 0,
      shareMean: 1,
      gpm: null,
      idle: NO_IDLE,
    },
  };
}

test(
  "a GPU-hour costs the node's price, else the partition's, else the model's, else the " +
    'default; energy and CO2e at the facility (x PUE)',
  () => {
    // energy: 1.2 kWh x PUE 1.3 = 1.56 kWh at the facility: 1.56 x 0.25 = 0.39 EUR, 1.56 x 350 = 546 g
    const cost = (node: string, partition: string | null, model?: string) => totalsOf([row(node, model)], PRICES, partition);
    const onPartition = cost('gpu001', 'gpu');
    assert.equal(onPartition.cost, 6.19, 'partition gpu: 2 h x 2.90 + 0.39');
    assert.equal(onPartition.currency, 'EUR');
    assert.equal(onPartition.co2e_g, 546);
    assert.equal(onPartition.energy_kwh, 1.2, "the energy figure stays the GPUs' own, without PUE");
    assert.equal(cost('gpu001', 'other').cost, 6.79, "unpriced partition: the model's 2 h x 3.20 + 0.39");
    assert.equal(cost('gpu001', null).cost, 6.79, "no partition: the model's");
    assert.equal(cost('gpu017', 'gpu').cost, 8.59, "node gpu017: 2 h x 4.10 + 0.39, over the partition's");
    assert.equal(cost('dgx-a01', 'gpu').cost, 7.59, 'node pattern dgx*: 2 h x 3.60 + 0.39');
    assert.equal(cost('gpu001', null, 'AMD MI300X').cost, 4.39, 'nothing else applies: the default 2 h x 2.00 + 0.39');
    // two GPUs of one job on two nodes: each at its own node's price; 546 g each
    const both = totalsOf([row('gpu017'), row('gpu001')], PRICES, 'gpu');
    assert.equal(both.cost, 14.78, '8.59 + 6.19');
    assert.equal(both.co2e_g, 1092);
    // an exact node name wins over a pattern written before it
    assert.equal(
      gpuHourPrice(
        {
          ...PRICES,
          perNode: [
            ['gpu0*', 9],
            ['gpu017', 4.1],
          ],
        },
        { model: null, partition: null, node: 'gpu017' },
      ),
      4.1,
    );
    assert.equal(gpuHourPrice({ ...PRICES, perNode: [['gpu0*', 9]] }, { model: null, partition: null, node: 'gpu0x17' }), 9);
    assert.equal(
      gpuHourPrice({ ...PRICES, perNode: [['gpu.*', 9]] }, { model: null, partition: null, node: 'gpuA7' }),
      2,
      'a dot in a pattern is a dot, not any character: the default',
    );

    // PUE 1 (unset): 1.2 kWh x 0.25 = 0.30; 1.2 x 350 = 420 g
    const plain = totalsOf([row('gpu001')], { ...PRICES, pue: undefined }, 'gpu');
    assert.equal(plain.cost, 6.1);
    assert.equal(plain.co2e_g, 420);
    // no carbon intensity: no CO2e; no price at all: no cost, but CO2e still
    assert.equal(totalsOf([row('gpu001')], { ...PRICES, gCo2ePerKwh: null }, 'gpu').co2e_g, null);
    const carbonOnly = totalsOf(
      [row('gpu001')],
      { perGpuHour: null, perModel: [], perKwh: null, gCo2ePerKwh: 350, pue: 1.3, currency: 'USD' },
      'gpu',
    );
    assert.deepEqual([carbonOnly.cost, carbonOnly.currency, carbonOnly.co2e_g], [null, null, 546]);
    // energy only: 0.39
    assert.equal(totalsOf([row('gpu001')], { perGpuHour: null, perModel: [], perKwh: 0.25, pue: 1.3, currency: 'USD' }, null).cost, 0.39);
  },
);

test('[jobs] prices from the configuration: every key read, PUE 1 by default, a price that is no number refused at load', () => {
  const p = pricesFrom(
    configFrom({
      jobs: {
        gpu_hour_price: '2',
        gpu_hour_prices: 'H100=3.20',
        partition_gpu_hour_prices: 'gpu=2.90,debug=0.5',
        node_gpu_hour_prices: 'gpu017=4.10,dgx*=3.60',
        kwh_price: '0.25',
        carbon_intensity: '350',
        pue: '1.3',
        currency: 'EUR',
      },
    }),
  );
  assert.deepEqual(p, {
    ...PRICES,
    perPartition: [
      ['gpu', 2.9],
      ['debug', 0.5],
    ],
    perNode: [
      ['gpu017', 4.1],
      ['dgx*', 3.6],
    ],
  });
  assert.equal(pricesFrom(configFrom({})).pue, 1);
  assert.throws(
    () => configFrom({ jobs: { partition_gpu_hour_prices: 'gpu=cheap' } }),
    /partition_gpu_hour_prices.*the value of gpu, "cheap", is not a number/,
  );
  assert.throws(() => configFrom({ jobs: { node_gpu_hour_prices: 'gpu017=-1' } }), /the value of gpu017, -1, is below the minimum 0/);
  assert.throws(() => configFrom({ jobs: { pue: '0.9' } }), /pue.*below the minimum 1/);
});

test('cost per million generated tokens', () => {
  assert.equal(costPerMillionTokens(6.19, 250_000), 24.76);
  assert.equal(costPerMillionTokens(1, 3), 333333.333333);
  assert.equal(costPerMillionTokens(null, 250_000), null);
  assert.equal(costPerMillionTokens(6.19, 0), null);
  assert.equal(costPerMillionTokens(6.19, null), null);
});

// --- the daemon's rates ---------------------------------------------------

const ident = (i: number, extra: Partial<Parameters<typeof gpuAttributes>[0]> = {}) =>
  gpuAttributes({ index: i, uuid: `GPU-${i}`, model: 'NVIDIA H100 80GB HBM3', vendor: 'nvidia', pciBusId: `0000:1${i}:00.0`, ...extra });
const job = (id: string, partition: string, share = 1): JobShare => ({
  jobId: id,
  runKey: 'r0',
  share,
  attributes: { 'slurm.job.id': id, 'slurm.partition': partition, 'slurm.user': 'alice' },
  // what the ledger prices by: the share's partition, as attribution puts it (JobShare.partition)
  partition,
});
function gpuPoints(i: number, util: number, powerW: number, held: readonly JobShare[]): Point[] {
  const copies = held.length ? held.map((j) => ({ ...ident(i), ...j.attributes })) : [ident(i)];
  return copies.flatMap((a) => [
    { metric: GPU.util, value: util, attributes: a },
    { metric: GPU.power, value: powerW, attributes: a },
    { metric: GPU.memUsed, value: 1e9, attributes: a },
  ]);
}
const RATE_PRICES: Prices = {
  perGpuHour: 2,
  perModel: [],
  perPartition: [['gpu', 2.9]],
  perNode: [],
  perKwh: 0.25,
  gCo2ePerKwh: 350,
  pue: 1.2,
  currency: 'EUR',
};
const rates = (prices: Prices | null, node = 'n1') => new CostRates({ prices: () => prices, node: () => node });
const view = (pts: Point[]) =>
  pts.map((p) => [
    p.metric.name,
    p.attributes['gpu.uuid'],
    n9(p.value),
    p.attributes['cost.idle.kind'] ?? null,
    p.attributes['slurm.job.id'] ?? null,
    p.attributes['cost.currency'],
  ]);

test('gpu.cost.rate and gpu.cost.idle.rate: an allocated busy GPU, an allocated unused one, an unallocated one', () => {
  const busy = job('11', 'gpu');
  const idle = job('12', 'gpu');
  const b: Batch = {
    source: 'nvml',
    time: 1,
    intervalMs: 10_000,
    points: [...gpuPoints(0, 0.9, 500, [busy]), ...gpuPoints(1, 0.005, 100, [idle]), ...gpuPoints(2, 0.5, 60, [])],
    jobs: new Map([
      ['GPU-0', [busy]],
      ['GPU-1', [idle]],
    ]),
  };
  assert.deepEqual(view(rates(RATE_PRICES).observe(b)), [
    // partition gpu 2.90/h + 0.5 kW x PUE 1.2 x 0.25/kWh = 3.05/h; busy: idle rate 0
    ['gpu.cost.rate', 'GPU-0', 3.05, null, '11', 'EUR'],
    ['gpu.cost.idle.rate', 'GPU-0', 0, 'allocated', '11', 'EUR'],
    // 2.90 + 0.1 x 1.2 x 0.25 = 2.93/h, all of it idle (utilization 0.5 % < 1 %)
    ['gpu.cost.rate', 'GPU-1', 2.93, null, '12', 'EUR'],
    ['gpu.cost.idle.rate', 'GPU-1', 2.93, 'allocated', '12', 'EUR'],
    // no job: no partition, the default 2.00 + 0.06 x 1.2 x 0.25 = 2.018/h, idle whatever its utilization
    ['gpu.cost.rate', 'GPU-2', 2.018, null, null, 'EUR'],
    ['gpu.cost.idle.rate', 'GPU-2', 2.018, 'unallocated', null, 'EUR'],
  ]);
  // the GPU's identity is on every point, and only once per GPU and job
  const first = rates(RATE_PRICES).observe(b)[0]!;
  assert.equal(first.attributes['gpu.model'], 'NVIDIA H100 80GB HBM3');
  assert.equal(first.attributes['slurm.user'], 'alice');

  assert.deepEqual(rates(null).observe(b), [], 'no prices: nothing');
  assert.deepEqual(
    rates({ perGpuHour: null, perModel: [], perKwh: null, gCo2ePerKwh: 350, currency: 'USD' }).observe(b),
    [],
    'a carbon intensity is no price',
  );
  assert.deepEqual(
    rates({ ...RATE_PRICES, perGpuHour: null, perPartition: [], perKwh: null, perModel: [['A100', 1]] }).observe(b),
    [],
    'a price for other models only: nothing',
  );
});

test(
  "cost rates: a shared GPU's rate split by the jobs' shares; a node price; a MIG instance " + 'priced as a GPU, its parent not at all',
  () => {
    const a = job('21', 'gpu', 0.25);
    const c = job('22', 'debug', 0.75);
    const shared: Batch = {
      source: 'nvml',
      time: 1,
      intervalMs: 10_000,
      points: gpuPoints(0, 0.6, 400, [a, c]),
      jobs: new Map([['GPU-0', [a, c]]]),
    };
    // gpu: 2.90 + 0.4 x 1.2 x 0.25 = 3.02, a quarter 0.755; debug (unpriced): 2.00 + 0.12 = 2.12, three quarters 1.59
    assert.deepEqual(
      view(rates(RATE_PRICES).observe(shared)).filter((v) => v[0] === 'gpu.cost.rate'),
      [
        ['gpu.cost.rate', 'GPU-0', 0.755, null, '21', 'EUR'],
        ['gpu.cost.rate', 'GPU-0', 1.59, null, '22', 'EUR'],
      ],
    );
    // node n1 at 5/h over the partition: 5 + 0.12 = 5.12 for both jobs' parts
    const onNode = rates({ ...RATE_PRICES, perNode: [['n*', 5]] })
      .observe(shared)
      .filter((p) => p.metric.name === 'gpu.cost.rate');
    assert.deepEqual(
      onNode.map((p) => n9(p.value)),
      [1.28, 3.84],
    );

    const inst = gpuAttributes(
      { index: 0, uuid: 'MIG-a', model: 'NVIDIA A100-SXM4-80GB MIG 1g.10gb', vendor: 'nvidia', pciBusId: '0000:18:00.0' },
      { parentUuid: 'GPU-0', gpuInstance: 7, computeInstance: 0 },
    );
    const m = job('31', 'mig');
    const mig: Batch = {
      source: 'nvml',
      time: 1,
      intervalMs: 10_000,
      points: [
        { metric: GPU.util, value: 0, attributes: ident(0, { model: 'NVIDIA A100-SXM4-80GB' }) },
        { metric: GPU.power, value: 90, attributes: ident(0) },
        { metric: GPU.util, value: 0.3, attributes: { ...inst, ...m.attributes } },
      ],
      jobs: new Map([['MIG-a', [m]]]),
    };
    // the instance: partition mig at 0.5/h, no power of its own; the parent GPU-0: no rate
    assert.deepEqual(view(rates({ ...RATE_PRICES, perPartition: [['mig', 0.5]] }).observe(mig)), [
      ['gpu.cost.rate', 'MIG-a', 0.5, null, '31', 'EUR'],
      ['gpu.cost.idle.rate', 'MIG-a', 0, 'allocated', '31', 'EUR'],
    ]);
  },
);

test('the cost metrics: units, and their Prometheus names', () => {
  assert.deepEqual(
    ['gpu.cost.rate', 'gpu.cost.idle.rate', 'gpu.job.cost', 'gpu.job.co2e'].map((n) => [metric(n).unit, prometheusName(metric(n))]),
    [
      ['{currency}/h', 'gpu_cost_rate_per_hour'],
      ['{currency}/h', 'gpu_cost_idle_rate_per_hour'],
      ['{currency}', 'gpu_job_cost'],
      ['g', 'gpu_job_co2e_grams'],
    ],
  );
});

// --- a store built by the ledger, and the roll-ups ----------------------------

const NODE = 'n1';
const STORE_PRICES: Prices = {
  perGpuHour: 2,
  perModel: [],
  perPartition: [
    ['gpu', 3],
    ['debug', 1],
  ],
  perNode: [['n9', 10]],
  perKwh: 0.2,
  gCo2ePerKwh: 400,
  pue: 1.25,
  currency: 'EUR',
};
/** Jobs of the store: who, and per GPU its constant utilization, energy over one hour (J) and SM activity (GPM; GPU-c has none). */
const JOBS: {
  id: string;
  user: string;
  account: string;
  partition: string;
  gpus: { uuid: string; util: number; energyJ: number; sm?: number }[];
}[] = [
  {
    id: '101',
    user: 'alice',
    account: 'phys',
    partition: 'gpu',
    gpus: [
      { uuid: 'GPU-a', util: 0.8, energyJ: 3.24e6, sm: 0.3 },
      { uuid: 'GPU-b', util: 0, energyJ: 0.648e6, sm: 0 },
    ],
  },
  { id: '102', user: 'alice', account: 'bio', partition: 'debug', gpus: [{ uuid: 'GPU-c', util: 0.5, energyJ: 1.296e6 }] },
  { id: '103', user: 'bob', account: 'phys', partition: 'gpu', gpus: [{ uuid: 'GPU-d', util: 1, energyJ: 3.888e6, sm: 0.9 }] },
];
const T0 = Date.parse('2026-11-16T08:00:00Z');

/** One hour of samples, one a minute, through the real ledger (rollups in SQLite), then every job ends. */
function buildStore(): { db: ReturnType<typeof openStore>; ends: Point[]; dir: string } {
  const dir = tempDir('l9gpu-cost-');
  const db = openStore(dir);
  const ledger = new JobLedger(
    db,
    createLogger('error', () => {}),
    { seriesMs: 1e12, jobsMs: 1e12 },
    { prices: () => STORE_PRICES, node: () => NODE },
  );
  for (const j of JOBS)
    recordStart(
      db,
      {
        jobId: j.id,
        runKey: 'r0',
        user: j.user,
        uid: j.user === 'alice' ? 1001 : 1002,
        account: j.account,
        partition: j.partition,
        startTime: T0,
      },
      j.gpus.map((g) => ({ uuid: g.uuid, shared: false })),
      'prolog',
      T0,
    );
  const gpus = JOBS.flatMap((j) =>
    j.gpus.map((g, i) => ({
      ...g,
      i,
      job: {
        jobId: j.id,
        runKey: 'r0',
        share: 1,
        attributes: {
          'slurm.job.id': j.id,
          'slurm.user': j.user,
          'slurm.account': j.account,
          'slurm.partition': j.partition,
        } as Attributes,
        partition: j.partition,
      },
    })),
  );
  const tick = (minute: number, held: boolean): Point[] => {
    const points: Point[] = gpus.flatMap((g, k) => {
      const a = {
        ...gpuAttributes({ index: k, uuid: g.uuid, model: 'NVIDIA H100 80GB HBM3', vendor: 'nvidia', pciBusId: `0000:2${k}:00.0` }),
        ...(held ? g.job.attributes : {}),
      };
      return [
        { metric: GPU.util, value: g.util, attributes: a },
        { metric: GPU.memUsed, value: 2e9, attributes: a },
        { metric: GPU.energy, value: (g.energyJ / 60) * minute, attributes: a },
        ...(g.sm === undefined ? [] : [{ metric: GPU.smActive, value: g.sm, attributes: a }]),
      ];
    });
    return ledger.observe({
      source: 'nvml',
      time: T0 + minute * 60_000,
      intervalMs: 60_000,
      points,
      ...(held ? { jobs: new Map(gpus.map((g) => [g.uuid, [g.job]])) } : {}),
    });
  };
  // job 101 served a model: 250,000 tokens generated (a first scrape counts whole: the engine is the job's)
  const served = { 'server.address': '127.0.0.1', 'server.port': 8000, 'gen_ai.request.model': 'm', 'slurm.job.id': '101' };
  ledger.observe({
    source: 'vllm',
    time: T0 + 30 * 60_000,
    intervalMs: 60_000,
    // as attribution leaves it: the job's attributes, and the run key the ledger reads
    points: [{ metric: metric('vllm.tokens.generation'), value: 250_000, attributes: served, job: { id: '101', added: ['slurm.job.id'] } }],
  });
  for (let minute = 0; minute <= 60; minute++) tick(minute, true);
  const ends = tick(61, false);
  return { db, ends, dir };
}

const list = (over: Record<string, unknown>) =>
  parseJobsRequest(
    JSON.stringify({ op: 'list', user: null, account: null, partition: null, state: 'all', since: null, limit: 100, ...over }),
  );
const groups = (a: JobsAnswer) => {
  assert.ok(a.ok && a.op === 'list', JSON.stringify(a));
  return (a as Extract<JobsAnswer, { op: 'list' }>).groups!;
};

test("a job's report on a priced partition: cost to the cent, CO2e to the gram, and the job-end cost and CO2e points", () => {
  const { db, ends } = buildStore();
  try {
    const found = findJob(db, '101')!;
    const r = reportFromStore(db, found.row, found.runs, NODE, STORE_PRICES);
    // 2 GPU-hours x 3.00 (partition gpu) + (0.9 + 0.18 kWh) x 1.25 x 0.20 = 6.00 + 0.27; 1.35 kWh x 400 g = 540 g
    assert.deepEqual(
      [r.totals.gpu_hours, r.totals.energy_kwh, r.totals.cost, r.totals.currency, r.totals.co2e_g],
      [2, 1.08, 6.27, 'EUR', 540],
    );
    // 6.27 / 250,000 tokens x 1e6
    assert.equal(r.inference!.cost_per_million_tokens, 25.08);
    assert.match(renderReport(r, style(false)), /GPU-hours 2\.00 {3}energy 1\.080 kWh \(3888000 J\) {3}cost 6\.27 EUR {3}CO2e 0\.540 kg/);

    // when each job left its GPU: its cost (currency) and CO2e (g) there, beside gpu.job.energy
    const sum = (name: string, id: string) =>
      n9(ends.filter((p) => p.metric.name === name && p.attributes['slurm.job.id'] === id).reduce((s, p) => s + p.value, 0));
    assert.equal(sum('gpu.job.cost', '101'), 6.27);
    assert.equal(sum('gpu.job.co2e', '101'), 540);
    // job 102, partition debug: 1 h x 1.00 + 0.36 kWh x 1.25 x 0.20 = 1.09; 0.45 kWh x 400 = 180 g
    assert.equal(sum('gpu.job.cost', '102'), 1.09);
    assert.equal(sum('gpu.job.co2e', '102'), 180);
    assert.equal(ends.find((p) => p.metric.name === 'gpu.job.cost')!.attributes['cost.currency'], 'EUR');
    assert.deepEqual(
      ends.filter((p) => p.metric.name === 'gpu.job.cost').map((p) => p.attributes['gpu.uuid']),
      ['GPU-a', 'GPU-b', 'GPU-c', 'GPU-d'],
      'one per job and GPU',
    );
  } finally {
    db.close();
  }
});

test('jobs --by user and --by account over the store; a user sees only their own jobs in the groups', () => {
  const { db } = buildStore();
  const root = { name: 'root', privileged: true };
  try {
    // alice: 101 (2 GPU-h, idle 0.2 + 1.0) + 102 (1 GPU-h, idle 0.5); utilization (2 x 0.4 + 1 x 0.5) / 3;
    // 1.08 + 0.36 kWh; 6.27 + 1.09 EUR; 540 + 180 g; by SM activity (GPM, 101's GPUs only): 1 x 0.3 + 1 x 0, idle 0.7 + 1
    const byUser = groups(answerJobs(db, NODE, STORE_PRICES, root, list({ by: 'user' })));
    assert.deepEqual(byUser, [
      {
        group: 'alice',
        jobs: 2,
        gpu_hours: 3,
        idle_gpu_hours: 1.7,
        util_mean: 0.433333,
        gpm_gpu_hours: 2,
        sm_gpu_hours: 0.3,
        sm_idle_gpu_hours: 1.7,
        energy_kwh: 1.44,
        cost: 7.36,
        currency: 'EUR',
        co2e_kg: 0.72,
      },
      {
        group: 'bob',
        jobs: 1,
        gpu_hours: 1,
        idle_gpu_hours: 0,
        util_mean: 1,
        gpm_gpu_hours: 1,
        sm_gpu_hours: 0.9,
        sm_idle_gpu_hours: 0.1,
        energy_kwh: 1.08,
        cost: 3.27,
        currency: 'EUR',
        co2e_kg: 0.54,
      },
    ]);
    const byAccount = groups(answerJobs(db, NODE, STORE_PRICES, root, list({ by: 'account' })));
    assert.deepEqual(byAccount, [
      {
        group: 'phys',
        jobs: 2,
        gpu_hours: 3,
        idle_gpu_hours: 1.2,
        util_mean: 0.6,
        gpm_gpu_hours: 3,
        sm_gpu_hours: 1.2,
        sm_idle_gpu_hours: 1.8,
        energy_kwh: 2.16,
        cost: 9.54,
        currency: 'EUR',
        co2e_kg: 1.08,
      },
      {
        group: 'bio',
        jobs: 1,
        gpu_hours: 1,
        idle_gpu_hours: 0.5,
        util_mean: 0.5,
        gpm_gpu_hours: null,
        sm_gpu_hours: null,
        sm_idle_gpu_hours: null,
        energy_kwh: 0.36,
        cost: 1.09,
        currency: 'EUR',
        co2e_kg: 0.18,
      },
    ]);
    assert.deepEqual(
      groups(answerJobs(db, NODE, STORE_PRICES, root, list({ by: 'partition' }))).map((g) => [g.group, g.jobs, g.cost]),
      [
        ['gpu', 2, 9.54],
        ['debug', 1, 1.09],
      ],
    );
    // --limit caps the groups, not the jobs they add up
    assert.deepEqual(groups(answerJobs(db, NODE, STORE_PRICES, root, list({ by: 'account', limit: 1 }))), byAccount.slice(0, 1));
    assert.deepEqual(
      groups(answerJobs(db, NODE, STORE_PRICES, root, list({ by: 'account', since: T0 + 1 }))),
      [],
      '--since: none started after',
    );

    // bob, not privileged: his own job alone, in its account; asking for alice's is refused
    const bob = { name: 'bob', privileged: false };
    assert.deepEqual(groups(answerJobs(db, NODE, STORE_PRICES, bob, list({ by: 'account' }))), [
      {
        group: 'phys',
        jobs: 1,
        gpu_hours: 1,
        idle_gpu_hours: 0,
        util_mean: 1,
        gpm_gpu_hours: 1,
        sm_gpu_hours: 0.9,
        sm_idle_gpu_hours: 0.1,
        energy_kwh: 1.08,
        cost: 3.27,
        currency: 'EUR',
        co2e_kg: 0.54,
      },
    ]);
    assert.deepEqual(
      groups(answerJobs(db, NODE, STORE_PRICES, bob, list({ by: 'user' }))).map((g) => g.group),
      ['bob'],
    );
    const refused = answerJobs(db, NODE, STORE_PRICES, bob, list({ by: 'user', user: 'alice' }));
    assert.deepEqual(refused, {
      ok: false,
      error: "you can only list your own jobs (bob); root and [jobs] admin_group see everyone's",
      code: 1,
    });

    // the job list carries the same per-job figures the groups add up
    const jobs = answerJobs(db, NODE, STORE_PRICES, root, list({}));
    assert.ok(jobs.ok && jobs.op === 'list');
    const rows = (jobs as Extract<JobsAnswer, { op: 'list' }>).rows;
    assert.deepEqual(rows.map((r) => [r.id, r.idle_gpu_hours, r.cost, r.co2e_g]).sort(), [
      ['101', 1.2, 6.27, 540],
      ['102', 0.5, 1.09, 180],
      ['103', 0, 3.27, 540],
    ]);
    assert.deepEqual(rows.map((r) => [r.id, r.gpm_gpu_hours, r.sm_gpu_hours, r.sm_idle_gpu_hours]).sort(), [
      ['101', 2, 0.3, 1.7],
      ['102', null, null, null],
      ['103', 1, 0.9, 0.1],
    ]);

    // text, --json and --csv
    const text = renderBy(byUser, 'user', style(false)).split('\n');
    assert.match(text[0]!, /^USER +JOBS +GPU-H +IDLE GPU-H +UTIL +GPM GPU-H +SM GPU-H +SM-IDLE GPU-H +ENERGY kWh +COST EUR +CO2e kg$/);
    assert.match(text[1]!, /^alice +2 +3\.00 +1\.70 +43% +2\.00 +0\.30 +1\.70 +1\.440 +7\.36 +0\.720$/);
    assert.match(text[2]!, /^bob +1 +1\.00 +0\.00 +100% +1\.00 +0\.90 +0\.10 +1\.080 +3\.27 +0\.540$/);
    assert.deepEqual(keyedGroups('account', byAccount)[1], {
      account: 'bio',
      jobs: 1,
      gpu_hours: 1,
      idle_gpu_hours: 0.5,
      util_mean: 0.5,
      gpm_gpu_hours: null,
      sm_gpu_hours: null,
      sm_idle_gpu_hours: null,
      energy_kwh: 0.36,
      cost: 1.09,
      currency: 'EUR',
      co2e_kg: 0.18,
    });
    assert.equal(
      renderByCsv(byAccount, 'account'),
      'account,jobs,gpu_hours,idle_gpu_hours,util_mean,gpm_gpu_hours,sm_gpu_hours,' +
        'sm_idle_gpu_hours,energy_kwh,cost,currency,co2e_kg\nphys,2,3,1.2,0.6,3,1.2,1.8,2.16,9.54,' +
        'EUR,1.08\nbio,1,1,0.5,0.5,,,,0.36,1.09,EUR,0.18\n',
    );
    // a group none of whose jobs had GPM: no SM columns in the text
    assert.doesNotMatch(renderBy(byAccount.slice(1), 'account', style(false)), /SM GPU-H/);
  } finally {
    db.close();
  }
});

test("the list request's by is checked like its other fields", () => {
  assert.equal((list({}) as { by: unknown }).by, null);
  assert.equal((list({ by: 'partition' }) as { by: unknown }).by, 'partition');
  assert.throws(() => list({ by: 'group' }), /^Error: by: not user, account, partition or name$/);
  assert.throws(() => list({ by: 1 }), /by: not user, account, partition or name/);
});

test('l9gpu jobs --by account through the CLI: text, --json and --csv from the store, prices from the configuration', async () => {
  const { db, dir } = buildStore();
  db.close();
  const cfg = join(dir, 'cost.ini');
  writeFileSync(
    cfg,
    `[daemon]\nstate_dir = ${dir}\n[jobs]\ngpu_hour_price = 2\npartition_gpu_hour_prices = ` +
      `gpu=3,debug=1\nkwh_price = 0.2\npue = 1.25\ncarbon_intensity = 400\ncurrency = EUR\n`,
  );
  const text = await runCli(['jobs', '--by', 'account', '--config', cfg]);
  assert.equal(text.status, 0, text.stderr);
  assert.match(
    text.stdout,
    new RegExp(
      String.raw`^ACCOUNT +JOBS +GPU-H +IDLE GPU-H +UTIL +GPM GPU-H +SM GPU-H +SM-IDLE GPU-H ` +
        String.raw`+ENERGY kWh +COST EUR +CO2e kg\nphys +2 +3\.00 +1\.20 +60% +3\.00 +1\.20 +1\.80 ` +
        String.raw`+2\.160 +9\.54 +1\.080\nbio +1 +1\.00 +0\.50 +50% +- +- +- +0\.360 +1\.09 ` +
        String.raw`+0\.180\n$`,
    ),
  );
  const json = await runCli(['jobs', '--by', 'account', '--json', '--config', cfg]);
  assert.deepEqual(JSON.parse(json.stdout)[0], {
    account: 'phys',
    jobs: 2,
    gpu_hours: 3,
    idle_gpu_hours: 1.2,
    util_mean: 0.6,
    gpm_gpu_hours: 3,
    sm_gpu_hours: 1.2,
    sm_idle_gpu_hours: 1.8,
    energy_kwh: 2.16,
    cost: 9.54,
    currency: 'EUR',
    co2e_kg: 1.08,
  });
  const csv = await runCli(['jobs', '--by', 'user', '--csv', '--config', cfg]);
  assert.equal(
    csv.stdout,
    'user,jobs,gpu_hours,idle_gpu_hours,util_mean,gpm_gpu_hours,sm_gpu_hours,sm_idle_gpu_hours,' +
      'energy_kwh,cost,currency,co2e_kg\nalice,2,3,1.7,0.433333,2,0.3,1.7,1.44,7.36,EUR,0.72\nbob,' +
      '1,1,0,1,1,0.9,0.1,1.08,3.27,EUR,0.54\n',
  );
  const bad = await runCli(['jobs', '--by', 'qos', '--config', cfg]);
  assert.equal(bad.status, 2, 'oclif refuses a dimension it does not know');
  assert.match(bad.stderr, /Expected --by=qos to be one of: user, account, partition/);
});
