/**
 * Every command's --json against its JSON Schema, by real runs of the CLI
 * (the command table's commands with a --json flag: jobs, jobs --by, jobs
 * --waste, jobs show, pods, pods show, gpus, health, doctor). The one casing
 * of them all is snake_case (docs/jobs.md, "JSON output"): every object the
 * schemas describe has its property names checked against it, and an object
 * they leave open is checked by the recursive `snake` schema, so a camelCase
 * key anywhere fails. Only maps whose keys are data (a report's run
 * attributes, throttle reasons, Xid codes, doctor's OpenTelemetry resource)
 * keep their keys.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { Ajv } from 'ajv';
import { createLogger } from '../../src/core/log.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Batch, Point } from '../../src/core/metrics/model.js';
import { JobLedger } from '../../src/ledger/ledger.js';
import { recordEnd, recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { COMMANDS } from '../../src/cli/command-table.js';
import type { FlagsOf } from '../../src/cli/flag-spec.js';
import type { JOBS_FLAGS } from '../../src/cli/command-flags.js';
import { runCli } from '../helpers/daemon.js';
import { tempDir } from '../helpers/paths.js';

/** snake_case: lower-case words joined by _, digits allowed; a bandwidth keeps its unit's symbol (bus_bw_Bps, bytes per second). */
const SNAKE = '^[a-z0-9]+(_[a-z0-9]+)*(_Bps)?$';

type Schema = Record<string, unknown>;
const str = { type: 'string' };
const num = { type: 'number' };
const int = { type: 'integer' };
const bool = { type: 'boolean' };
const nul = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
const arr = (items: Schema): Schema => ({ type: 'array', items });
/** Any value whose objects, at every depth, have snake_case keys. */
const SNAKE_TREE: Schema = { $ref: '#/$defs/snake' };
/**
 * A record: these properties, all required but those named optional, and snake_case names; open: further snake_case
 * properties allowed (described by the recursive snake schema), else none.
 */
function obj(props: Record<string, Schema>, o: { optional?: string[]; open?: boolean } = {}): Schema {
  return {
    type: 'object',
    properties: props,
    required: Object.keys(props).filter((k) => !o.optional?.includes(k)),
    propertyNames: { pattern: SNAKE },
    additionalProperties: o.open ? SNAKE_TREE : false,
  };
}
/** A map whose keys are data (not field names): any key. */
const map = (values: Schema): Schema => ({ type: 'object', additionalProperties: values });
const DEFS = {
  snake: {
    anyOf: [
      { type: ['string', 'number', 'boolean', 'null'] },
      { type: 'array', items: { $ref: '#/$defs/snake' } },
      { type: 'object', propertyNames: { pattern: SNAKE }, additionalProperties: { $ref: '#/$defs/snake' } },
    ],
  },
};

const LIST_ROW = obj(
  {
    id: str,
    name: nul(str),
    scheduler: str,
    user: nul(str),
    account: nul(str),
    partition: nul(str),
    state: str,
    start: nul(str),
    elapsed_s: nul(num),
    gpus: int,
    gpu_hours: num,
    idle_gpu_hours: num,
    util_mean: nul(num),
    gpm_gpu_hours: nul(num),
    sm_gpu_hours: nul(num),
    sm_idle_gpu_hours: nul(num),
    mem_peak_bytes: nul(num),
    energy_kwh: nul(num),
    cost: nul(num),
    co2e_g: nul(num),
    problems: arr(str),
  },
  { optional: ['scheduler'] },
);
const GROUP_FIGURES = {
  jobs: int,
  gpu_hours: num,
  idle_gpu_hours: num,
  util_mean: nul(num),
  gpm_gpu_hours: nul(num),
  sm_gpu_hours: nul(num),
  sm_idle_gpu_hours: nul(num),
  energy_kwh: nul(num),
  cost: nul(num),
  currency: nul(str),
  co2e_kg: nul(num),
};
const WASTE_ROW = obj({
  id: str,
  user: nul(str),
  account: nul(str),
  partition: nul(str),
  state: str,
  start: nul(str),
  elapsed_s: nul(num),
  gpus: int,
  gpu_hours: num,
  class: { enum: ['unused-gpus', 'low-activity', 'fewer-gpus', 'mig-slice', 'time-limit'] },
  wasted_gpu_hours: num,
  detail: str,
});
const FIGURES = obj({
  samples: int,
  seconds: num,
  gpu_hours: num,
  util_mean: nul(num),
  util_max: nul(num),
  mem_util_mean: nul(num),
  mem_used_max: nul(num),
  mem_total: nul(num),
  energy_j: num,
  energy_source: { enum: ['counter', 'power', 'none'] },
  power_mean: nul(num),
  power_max: nul(num),
  temp_max: nul(num),
  throttled_s: map(num),
  xid: map(num),
  ecc_corrected: num,
  ecc_uncorrected: num,
  share_mean: num,
  gpm: nul(
    obj({
      seconds: num,
      sm_active: nul(num),
      sm_occupancy: nul(num),
      tensor_active: nul(num),
      dram_active: nul(num),
      fp64_active: nul(num),
      fp32_active: nul(num),
      fp16_active: nul(num),
      nvlink_bytes: nul(num),
      pcie_bytes: nul(num),
    }),
  ),
  idle: obj({ basis: str, seconds: num, longest_s: num, longest_from: nul(num) }),
});
const REPORT = obj(
  {
    source: { enum: ['store', 'promql', 'sacct'] },
    job: obj(
      {
        id: str,
        job_id: str,
        run: str,
        user: nul(str),
        uid: nul(int),
        account: nul(str),
        partition: nul(str),
        qos: nul(str),
        name: nul(str),
        cluster: nul(str),
        state: str,
        start: nul(str),
        end: nul(str),
        elapsed_s: nul(num),
        exit_code: nul(int),
        nodes: arr(str),
        earlier_runs: int,
        cpus: nul(int),
        mem_req_bytes: nul(num),
        mem_max_rss_bytes: nul(num),
        time_limit_s: nul(num),
        time_efficiency: nul(num),
        gpus_alloc: nul(int),
        exit_signal: nul(int),
        scheduler: nul(str),
        attrs: nul(map({ type: ['string', 'number', 'boolean'] })),
      },
      { optional: ['scheduler', 'attrs'] },
    ),
    gpus: arr(obj({ node: str, uuid: str, model: nul(str), index: nul(int), shared: bool, figures: FIGURES })),
    totals: obj({
      gpus: int,
      gpu_hours: num,
      util_mean: nul(num),
      mem_peak_bytes: nul(num),
      energy_j: nul(num),
      energy_kwh: nul(num),
      cost: nul(num),
      currency: nul(str),
      co2e_g: nul(num),
    }),
    // their keys are the report model's (src/jobs/report-model.ts), snake_case at every depth
    inference: nul({ type: 'object', ...SNAKE_TREE }),
    communication: nul({ type: 'object', ...SNAKE_TREE }),
    series: arr({ type: 'array', items: num, minItems: 2, maxItems: 2 }),
    notes: arr(obj({ level: { enum: ['info', 'warn'] }, code: str, text: str })),
    efficiency: nul(obj({ gpus_with_gpm: int, gpus: arr(SNAKE_TREE), job: obj({}, { open: true }) })),
  },
  { optional: ['efficiency'] },
);
const GPUS = obj({
  host: str,
  time: str,
  gpus: arr(obj({ index: nul(int), uuid: str, model: nul(str), vendor: str }, { open: true })),
  errors: arr(obj({ plugin: str, error: str })),
});
const HEALTH = obj({
  node: str,
  state: { enum: ['ok', 'warning', 'failed', 'unknown'] },
  unknown: nul(str),
  written: nul(str),
  gpus: arr(
    obj({
      uuid: str,
      index: nul(int),
      model: nul(str),
      state: int,
      state_name: str,
      score: num,
      findings: arr(obj({}, { open: true })),
    }),
  ),
});
const DOCTOR = obj(
  {
    version: str,
    node: str,
    plugins_enabled: arr(str),
    config: obj({}, { open: true }),
    resource: map(str),
    settings: arr(obj({ section: str, key: str, value: str, source: str }, { open: true })),
    plugins: arr(obj({ name: str, enabled: bool, ok: bool }, { open: true })),
    sinks: arr(obj({ name: str, enabled: bool, ok: bool }, { open: true })),
    store: obj({}, { open: true }),
    problems: int,
  },
  { open: true },
);

/** Each command's JSON schema, by the command's id and the flag that picks its form. */
const SCHEMAS: Record<string, Schema> = {
  jobs: arr(LIST_ROW),
  'jobs --by': arr(obj({ user: nul(str), ...GROUP_FIGURES })),
  'jobs --waste': arr(WASTE_ROW),
  'jobs show': REPORT,
  pods: arr(LIST_ROW),
  'pods --by': arr(obj({ account: nul(str), ...GROUP_FIGURES })),
  'pods show': REPORT,
  gpus: GPUS,
  health: HEALTH,
  doctor: DOCTOR,
};
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const validators = Object.fromEntries(Object.entries(SCHEMAS).map(([k, s]) => [k, ajv.compile({ $defs: DEFS, ...s })]));

function check(kind: string, stdout: string): unknown {
  const v = validators[kind]!;
  const doc = JSON.parse(stdout) as unknown;
  assert.ok(v(doc), `${kind} --json: ${ajv.errorsText(v.errors, { separator: '\n' })}`);
  return doc;
}

const GiB = 1024 ** 3;
let dir = '';
let cfg = '';
before(() => {
  dir = tempDir('l9gpu-json-');
  const db = openStore(dir);
  const ledger = new JobLedger(
    db,
    createLogger('error', () => {}),
    { seriesMs: 1e12, jobsMs: 1e12 },
  );
  const T0 = Math.floor((Date.now() - 3 * 3_600_000) / 60_000) * 60_000;
  const uuid = 'GPU-json-0';
  const attrs: Attributes = { 'slurm.job.id': '301', 'slurm.user': 'alice', 'slurm.account': 'acct', 'slurm.partition': 'gpu' };
  recordStart(
    db,
    { jobId: '301', runKey: 'r0', user: 'alice', account: 'acct', partition: 'gpu', startTime: T0 },
    [{ uuid, shared: false }],
    'prolog',
    T0,
  );
  const tick = (minute: number, held: boolean): Batch => {
    const a = {
      ...gpuAttributes({ index: 0, uuid, model: 'NVIDIA H100 80GB HBM3', vendor: 'nvidia', pciBusId: '0000:10:00.0' }),
      ...(held ? attrs : {}),
    };
    const points: Point[] = [
      { metric: GPU.util, value: 0.1, attributes: a },
      { metric: GPU.memUsed, value: 5 * GiB, attributes: a },
      { metric: GPU.memTotal, value: 80 * GiB, attributes: a },
      { metric: GPU.smActive, value: 0.05, attributes: a },
    ];
    const time = T0 + minute * 60_000;
    return {
      source: 'nvml',
      time,
      intervalMs: 60_000,
      points: points.map((p) => ({ ...p, time })),
      ...(held ? { jobs: new Map([[uuid, [{ jobId: '301', runKey: 'r0', share: 1, attributes: attrs }]]]) } : {}),
    };
  };
  for (let m = 0; m <= 60; m++) ledger.observe(tick(m, true));
  ledger.observe(tick(61, false));
  recordEnd(db, { jobId: '301', runKey: 'r0' }, { endTime: T0 + 3_600_000, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', T0 + 3_600_000);
  db.close();
  cfg = join(dir, 'l9gpu.ini');
  writeFileSync(cfg, `[daemon]\nstate_dir = ${dir}\nplugins = sim\n`);
});

test('every command with --json in the command table has a schema here', () => {
  const withJson = COMMANDS.filter((c) => c.flags.some((f) => f.name === 'json')).map((c) => c.id);
  assert.deepEqual(
    withJson.filter((id) => !(id in SCHEMAS)),
    [],
  );
  assert.ok(withJson.length >= 7, withJson.join(', '));
});

test('each command --json, run for real, matches its schema (snake_case keys at every depth)', async () => {
  const runs: [string, string[]][] = [
    ['jobs', ['jobs', '--state', 'all']],
    ['jobs --by', ['jobs', '--by', 'user']],
    ['jobs --waste', ['jobs', '--waste']],
    ['jobs show', ['jobs', 'show', '301']],
    ['pods', ['pods']],
    ['pods --by', ['pods', '--by', 'account']],
    ['gpus', ['gpus', '--plugin', 'sim']],
    ['health', ['health']],
    ['doctor', ['doctor']],
  ];
  for (const [kind, args] of runs) {
    const r = await runCli([...args, '--json', '--config', cfg]);
    assert.ok(r.status === 0 || (kind === 'doctor' && r.status === 1), `${args.join(' ')}: ${r.status} ${r.stderr}`);
    check(kind, r.stdout);
  }
  // the runs have something in them: a row, a report with a GPU's figures and GPM, a wasted job, a GPU
  const list = check('jobs', (await runCli(['jobs', '--json', '--config', cfg])).stdout) as unknown[];
  assert.equal(list.length, 1);
  const show = check('jobs show', (await runCli(['jobs', 'show', '301', '--json', '--config', cfg])).stdout) as {
    gpus: { figures: { gpu_hours: number; gpm: { sm_active: number } | null } }[];
  };
  assert.ok(show.gpus[0]!.figures.gpu_hours > 0.9);
  assert.equal(show.gpus[0]!.figures.gpm?.sm_active, 0.05);
  const waste = check('jobs --waste', (await runCli(['jobs', '--waste', '--json', '--config', cfg])).stdout) as unknown[];
  assert.ok(waste.length > 0);
  const gpus = check('gpus', (await runCli(['gpus', '--plugin', 'sim', '--json', '--config', cfg])).stdout) as { gpus: unknown[] };
  assert.ok(gpus.gpus.length > 0);
});

test('the schemas refuse a camelCase key at any depth (the old jobs show --json figures), and keep data maps open', async () => {
  const r = await runCli(['jobs', 'show', '301', '--json', '--config', cfg]);
  const doc = JSON.parse(r.stdout) as { gpus: { figures: Record<string, unknown> }[]; job: Record<string, unknown> };
  const v = validators['jobs show']!;
  const old = structuredClone(doc);
  old.gpus[0]!.figures = { ...old.gpus[0]!.figures, gpuHours: 1 };
  assert.equal(v(old), false, 'gpuHours refused');
  const deep = structuredClone(doc) as unknown as { communication: unknown };
  deep.communication = { time_s: 1, collectives: [{ busBwBps: 1 }] };
  assert.equal(v(deep), false, 'a camelCase key inside an open section refused');
  const data = structuredClone(doc);
  data.job = { ...data.job, scheduler: 'kubernetes', attrs: { 'k8s.pod.name': 'x', myLabel: 'y' } };
  assert.ok(v(data), `the run attributes are data: ${ajv.errorsText(v.errors)}`);
  for (const kind of ['jobs', 'gpus', 'health', 'doctor']) {
    assert.equal(validators[kind]!(kind === 'jobs' ? [{ gpuHours: 1 }] : { someKey: 1 }), false, kind);
  }
});

test('flags are typed from their table: a misspelt flag does not compile', () => {
  const f = { json: true, limit: 100, state: 'all' } as Partial<FlagsOf<typeof JOBS_FLAGS>>;
  // @ts-expect-error: no flag "jsn"
  assert.equal(f.jsn, undefined);
  const state: 'running' | 'completed' | 'all' | undefined = f.state;
  assert.equal(state, 'all');
});
