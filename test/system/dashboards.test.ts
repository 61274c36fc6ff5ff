/**
 * The Grafana dashboards (dashboards/grafana/*.json): a schema for what
 * Grafana needs of a JSON model, every query's metric names against the
 * registry, each panel's unit against the unit of the metric it shows, every
 * query of a metric the hardware conventions rename reading both its names,
 * and every panel and variable query run, with the variables set to real
 * values, on both paths the dashboards are for: a real Prometheus 2.42
 * scraping the daemons' pull endpoints, and a real VictoriaMetrics the same
 * daemons push to over OTLP with Prometheus naming. Each backend holds both
 * namings (`semantic_conventions`): the GPU node's page is in l9gpu naming and
 * its OTLP in hw naming, the second node's the other way round, so that every
 * query runs on both namings and on a mix of them. The daemons: one on a GPU node whose
 * fake NVML GPUs a real Slurm 22.05 job holds (bound by the project's
 * prolog, the way the Slurm suite binds them), scraping recorded pages of
 * the five inference engines and tailing recorded NCCL Inspector logs; one
 * of simulated GPUs on a second node. Each query must return a finite
 * number (a panel that stays empty is a broken panel), and the key panels
 * the value worked out from the setup.
 */
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import { METRICS, prometheusName, type MetricDef } from '../../src/core/metrics/registry.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { FakeNvml, h100 } from '../helpers/fake-nvml.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { PromApi, Prometheus } from '../helpers/prometheus.js';
import {
  l9gpuName,
  metricNamesIn,
  NAMING_PAIRS,
  namingGaps,
  promqlSkeleton,
  selectorsIn,
  unknownMetricNames,
} from '../helpers/promql-names.js';
import { SlurmCluster, TEST_USER } from '../helpers/slurm.js';
import { VictoriaMetrics, type PromSample } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

const DIR = join(ROOT, 'dashboards', 'grafana');

interface Target {
  refId: string;
  expr: string;
  instant?: boolean;
  datasource: unknown;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  panels?: Panel[];
  fieldConfig?: {
    defaults?: { unit?: string };
    overrides?: { matcher: { id: string; options: string }; properties: { id: string; value: unknown }[] }[];
  };
  options?: { yAxis?: { unit?: string } };
}
interface Variable {
  name: string;
  type: string;
  query?: string;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}

// ---------------------------------------------------------------- the schema

const DATASOURCE = {
  type: 'object',
  required: ['type', 'uid'],
  properties: { type: { const: 'prometheus' }, uid: { const: '${datasource}' } },
};
const SCHEMA = {
  $defs: {
    panel: {
      type: 'object',
      required: ['id', 'type', 'title', 'gridPos'],
      properties: {
        id: { type: 'integer', minimum: 1 },
        type: { type: 'string', minLength: 1 },
        title: { type: 'string', minLength: 1 },
        gridPos: {
          type: 'object',
          required: ['x', 'y', 'w', 'h'],
          properties: {
            x: { type: 'integer', minimum: 0, maximum: 23 },
            y: { type: 'integer', minimum: 0 },
            w: { type: 'integer', minimum: 1, maximum: 24 },
            h: { type: 'integer', minimum: 1 },
          },
        },
      },
      if: { properties: { type: { const: 'row' } } },
      then: {
        required: ['panels', 'collapsed'],
        properties: { collapsed: { type: 'boolean' }, panels: { type: 'array', items: { $ref: '#/$defs/panel' } } },
      },
      else: {
        required: ['datasource', 'targets'],
        properties: {
          datasource: DATASOURCE,
          targets: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['refId', 'expr', 'datasource'],
              properties: {
                refId: { type: 'string', pattern: '^[A-Z]$' },
                expr: { type: 'string', minLength: 1 },
                datasource: DATASOURCE,
                instant: { type: 'boolean' },
                range: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
    variable: {
      type: 'object',
      required: ['name', 'type'],
      properties: {
        name: { type: 'string', pattern: '^\\w+$' },
        type: { enum: ['datasource', 'query', 'custom', 'constant', 'interval', 'textbox'] },
      },
      if: { properties: { type: { const: 'query' } } },
      then: {
        required: ['datasource', 'query', 'refresh'],
        properties: { datasource: DATASOURCE, query: { type: 'string', pattern: '^(label_values|query_result)\\(' } },
      },
    },
  },
  type: 'object',
  required: ['id', 'uid', 'title', 'schemaVersion', 'panels', 'templating', 'time'],
  properties: {
    // null: the dashboard imports as a new one (an exported id would name a dashboard of the exporting Grafana)
    id: { type: 'null' },
    uid: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,40}$' },
    title: { type: 'string', minLength: 1 },
    schemaVersion: { type: 'integer', minimum: 36 },
    panels: { type: 'array', minItems: 1, items: { $ref: '#/$defs/panel' } },
    time: { type: 'object', required: ['from', 'to'] },
    templating: {
      type: 'object',
      required: ['list'],
      properties: {
        list: {
          type: 'array',
          items: { $ref: '#/$defs/variable' },
          contains: {
            type: 'object',
            required: ['name', 'type', 'query'],
            properties: { name: { const: 'datasource' }, type: { const: 'datasource' }, query: { const: 'prometheus' } },
          },
        },
      },
    },
  },
};

function load(): { file: string; d: Dashboard }[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, d: JSON.parse(readFileSync(join(DIR, file), 'utf8')) as Dashboard }));
}

/** Every panel, those inside rows (collapsed rows keep theirs in `panels`) included. */
function panelsOf(d: Dashboard): Panel[] {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

const BUILTIN_VARIABLES = new Set(['__range', '__range_s', '__range_ms', '__rate_interval', '__interval', '__interval_ms']);
const variablesIn = (s: string): string[] => [...s.matchAll(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g)].map((m) => m[1] ?? m[2]!);

test('every dashboard is a Grafana JSON model: the schema, unique uids and panel ids, panels inside the grid, known variables only', () => {
  const dashboards = load();
  assert.ok(dashboards.length >= 7, dashboards.map((x) => x.file).join(', '));
  const validate = new Ajv({ allErrors: true }).compile(SCHEMA);
  const uids = new Map<string, string>();
  for (const { file, d } of dashboards) {
    assert.ok(validate(d), `${file}: ${JSON.stringify(validate.errors, null, 1)}`);
    assert.equal(uids.get(d.uid), undefined, `${file}: uid ${d.uid} is ${uids.get(d.uid)}'s too`);
    uids.set(d.uid, file);
    const ids = panelsOf(d).map((p) => p.id);
    assert.deepEqual(
      ids.filter((id, i) => ids.indexOf(id) !== i),
      [],
      `${file}: duplicate panel ids`,
    );
    const defined = new Set(d.templating.list.map((v) => v.name));
    for (const p of panelsOf(d)) {
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${file}: panel "${p.title}" runs past the 24 columns`);
      const refs = (p.targets ?? []).map((t) => t.refId);
      assert.equal(new Set(refs).size, refs.length, `${file}: panel "${p.title}" repeats a refId`);
      for (const t of p.targets ?? []) {
        for (const v of variablesIn(t.expr))
          assert.ok(
            defined.has(v) || BUILTIN_VARIABLES.has(v),
            `${file}: panel "${p.title}" uses $${v}, which the dashboard does not define`,
          );
      }
    }
    for (const v of d.templating.list)
      for (const u of variablesIn(v.query ?? '')) assert.ok(defined.has(u), `${file}: variable ${v.name} uses $${u}, not defined`);
  }
});

// ---------------------------------------------------------------- queries and the registry

interface Query {
  file: string;
  panel: Panel;
  target: Target;
}

function queriesOf(dashboards: { file: string; d: Dashboard }[]): Query[] {
  return dashboards.flatMap(({ file, d }) =>
    panelsOf(d).flatMap((panel) => (panel.targets ?? []).map((target) => ({ file, panel, target }))),
  );
}

test('no query names a metric the registry does not export, in either naming', () => {
  for (const { where, expr } of allExprs()) {
    assert.ok(metricNamesIn(expr).length > 0, `${where}: reads no metric: ${expr}`);
    assert.deepEqual(unknownMetricNames(expr), [], `${where}: ${expr}`);
  }
});

// ---------------------------------------------------------------- both namings

/** Every query and variable query of the dashboards, with where it is. */
function allExprs(dashboards = load()): { where: string; expr: string }[] {
  return [
    ...queriesOf(dashboards).map((q) => ({ where: `${q.file}: "${q.panel.title}" ${q.target.refId}`, expr: q.target.expr })),
    ...dashboards.flatMap(({ file, d }) =>
      d.templating.list.filter((v) => v.type === 'query').map((v) => ({ where: `${file}: variable ${v.name}`, expr: v.query! })),
    ),
  ];
}

test(
  "a query of a metric the hardware conventions rename reads both its names, the conventions' with their fixed labels " +
    '(hw_type, hw_gpu_task): the same panels for nodes of either semantic_conventions',
  (t) => {
    let paired = 0;
    for (const { where, expr } of allExprs()) {
      // the naming check sees every selector the name check does
      assert.deepEqual(
        [...new Set(selectorsIn(expr).flatMap((x) => x.names))].sort(),
        [...metricNamesIn(expr)].sort(),
        `${where}: selectors ${expr}`,
      );
      assert.deepEqual(namingGaps(expr), [], `${where}: ${expr}`);
      if (NAMING_PAIRS.some((p) => metricNamesIn(expr).includes(p.l9gpu))) paired++;
    }
    t.diagnostic(`${paired} queries read a metric of both namings`);
    assert.ok(paired >= 50, `only ${paired} queries read a renamed metric`);
  },
);

test('the naming check fails a query that forgets either name: each such query with one name spelled as the other', () => {
  const missed: string[] = [];
  let mutants = 0;
  for (const { where, expr } of allExprs())
    for (const p of NAMING_PAIRS) {
      if (!metricNamesIn(expr).includes(p.l9gpu)) continue;
      for (const [from, to] of [
        [p.hw, p.l9gpu],
        [p.l9gpu, p.hw],
      ] as const) {
        const mutant = expr.replace(new RegExp(`(?<![\\w:])${from}(?![\\w:])`, 'g'), to);
        mutants++;
        if (namingGaps(mutant).length === 0) missed.push(`${where}: ${from} -> ${to}: ${mutant}`);
      }
    }
  assert.deepEqual(missed, []);
  assert.ok(mutants >= 100, `${mutants} mutants`);
});

// ---------------------------------------------------------------- units

/** Grafana units for a registry unit shown as is (a gauge, a counter's value or increase, a histogram quantile). */
function unitsFor(u: string): string[] {
  const known: Record<string, string[]> = {
    '1': ['percentunit'],
    W: ['watt'],
    J: ['joule'],
    By: ['bytes', 'decbytes'],
    'By/s': ['Bps', 'binBps'],
    Cel: ['celsius'],
    Hz: ['hertz', 'rothz'],
    s: ['s'],
    g: ['massg'],
    '': ['none'],
    '{token}/s': ['count:tok/s'],
  };
  return known[u] ?? (u.startsWith('{') ? ['short', 'none'] : []);
}
/** Grafana units for the per-second rate of a counter of that unit. */
function rateUnitsFor(u: string): string[] {
  const known: Record<string, string[]> = {
    J: ['watt'],
    By: ['Bps', 'binBps'],
    s: ['percentunit'],
    '{request}': ['reqps'],
    '{token}': ['count:tok/s'],
    '{operation}': ['ops'],
    '{inference}': ['ops'],
    '{execution}': ['ops'],
  };
  return known[u] ?? (u.startsWith('{') ? ['cps'] : []);
}
const BY_NAME = new Map<string, { def: MetricDef; part: '' | '_bucket' | '_sum' | '_count' }>();
for (const def of METRICS) {
  const name = prometheusName(def);
  if (def.kind === 'histogram') for (const part of ['_bucket', '_sum', '_count'] as const) BY_NAME.set(name + part, { def, part });
  else BY_NAME.set(name, { def, part: '' });
}

/** Aggregations and functions after which a value no longer has its metric's unit. */
const CHANGES_UNIT = new Set([
  'count',
  'count_over_time',
  'count_values',
  'sum_over_time',
  'group',
  'absent',
  'absent_over_time',
  'changes',
  'resets',
  'deriv',
  'predict_linear',
  'stddev',
  'stdvar',
  'stddev_over_time',
  'stdvar_over_time',
  'timestamp',
  'vector',
  'scalar',
  'time',
]);
/** Units whose sum over GPUs is no longer that quantity (a sum of ratios is a count). */
const NOT_ADDITIVE = new Set(['1', 'Cel']);

/**
 * The Grafana units a target's values may carry, or why the target is not
 * checked: it reads several metrics, or derives another quantity (counts,
 * arithmetic, sums of ratios). A counter's rate takes the rate units. A
 * metric's two names (l9gpu's and the hardware conventions') are one metric.
 */
function expectedUnits(expr: string): string[] | string {
  const names = [...new Set(metricNamesIn(expr).map(l9gpuName))];
  if (names.length !== 1) return 'reads several metrics';
  const hit = BY_NAME.get(names[0]!);
  if (!hit) return 'unknown metric';
  const sk = promqlSkeleton(expr);
  const fns = new Set([...sk.matchAll(/([A-Za-z_]\w*)\s*\(/g)].map((m) => m[1]!));
  if ([...fns].some((f) => CHANGES_UNIT.has(f)) || /\bbool\b/.test(sk)) return 'derived';
  const unit = hit.part === '_count' ? '{count}' : hit.def.unit;
  if (hit.part === '_bucket') return fns.has('histogram_quantile') ? unitsFor(unit) : 'buckets';
  // what is left of arithmetic once function arguments like histogram_quantile's 0.95 are gone
  if (/[*/+%^]|[\w)\]]\s+-\s+[\w(]/.test(sk.replace(/\(\s*[\d.]+\s*,/g, '('))) return 'arithmetic';
  if (fns.has('sum') && NOT_ADDITIVE.has(unit)) return 'a sum of a non-additive unit';
  return fns.has('rate') || fns.has('irate') ? rateUnitsFor(unit) : unitsFor(unit);
}

/** The unit Grafana shows a target's values in: an override for its field or frame, else the panel's. */
function unitOf(panel: Panel, refId: string): string | undefined {
  for (const o of panel.fieldConfig?.overrides ?? []) {
    const mine =
      (o.matcher.id === 'byName' && o.matcher.options === `Value #${refId}`) ||
      (o.matcher.id === 'byFrameRefID' && o.matcher.options === refId);
    const u = mine ? o.properties.find((p) => p.id === 'unit') : undefined;
    if (u) return u.value as string;
  }
  return panel.type === 'heatmap' ? panel.options?.yAxis?.unit : panel.fieldConfig?.defaults?.unit;
}

test('each panel shows its metric in the unit of the registry (ratio percentunit, W watt, J joule, By bytes, Cel celsius...)', (t) => {
  let checked = 0;
  const skipped = new Map<string, number>();
  for (const q of queriesOf(load())) {
    const want = expectedUnits(q.target.expr);
    if (typeof want === 'string') {
      skipped.set(want, (skipped.get(want) ?? 0) + 1);
      continue;
    }
    const got = unitOf(q.panel, q.target.refId);
    assert.ok(
      got !== undefined && want.includes(got),
      `${q.file}: "${q.panel.title}" ${q.target.refId} shows ${q.target.expr} in ${got}; its metric's unit wants ${want.join(' or ')}`,
    );
    checked++;
  }
  t.diagnostic(`${checked} targets checked; not checked: ${JSON.stringify(Object.fromEntries(skipped))}`);
  // most panels show one metric as it is: a checker that skips them all checks nothing
  assert.ok(checked >= 100, `only ${checked} targets checked`);
});

// ---------------------------------------------------------------- the real thing

/**
 * A recorded /metrics page whose counters and histograms advance with every
 * scrape: the n-th answer has each of their samples times n, so that rates
 * and windowed quantiles have the recording's shape. Gauges (and the
 * *_created families, gauges too) stay as recorded.
 */
function advancingPage(page: string): (n: number) => string {
  const cumulative = new Set<string>();
  for (const m of page.matchAll(/^# TYPE (\S+) (counter|histogram|summary)\s*$/gm)) {
    const base = m[1]!;
    for (const s of m[2] === 'counter' ? ['', '_total'] : ['_bucket', '_sum', '_count', '']) cumulative.add(base + s);
  }
  const lines = page.split('\n');
  return (n) =>
    lines
      .map((l) => {
        const m = /^([A-Za-z_:][\w:]*)(\{.*\})?(\s+)(\S+)(.*)$/.exec(l);
        return m && cumulative.has(m[1]!) && Number.isFinite(Number(m[4])) ? `${m[1]}${m[2] ?? ''}${m[3]}${Number(m[4]) * n}${m[5]}` : l;
      })
      .join('\n');
}

async function serveAdvancing(file: string): Promise<http.Server> {
  const next = advancingPage(readFileSync(file, 'utf8'));
  let n = 0;
  const server = http.createServer((_req, res) => res.end(next(++n)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return server;
}

/** Recorded engine pages (their READMEs say where each comes from). */
const ENGINE_PAGES: Record<string, string> = {
  vllm: 'plugins/vllm/testdata/vllm-datadog-fixture-mixed-0.4-to-0.11/page.prom',
  sglang: 'plugins/sglang/testdata/sglang-0.5.10-datadog-fixture-abridged/page.prom',
  tgi: 'plugins/tgi/testdata/tgi-datadog-fixture-excerpt/page.prom',
  triton: 'plugins/triton/testdata/triton-datadog-fixture/page.prom',
  nim: 'plugins/nim/testdata/nim-llama-3.1-8b-datadog-fixture/page.prom',
};
/** The NCCL Inspector fixtures (plugins/nccl/testdata/README.md): a 4-rank JSON log with a straggler, the Prometheus files of 2.30. */
const NCCL_LOGS = join(ROOT, 'plugins', 'nccl', 'testdata', 'v2.30.3-straggler-4rank');
const NCCL_PROM = join(ROOT, 'plugins', 'nccl', 'testdata', 'v2.30.3-prom-interval');

/** Prometheus scrapes every half second: Grafana's $__rate_interval is then max(4 x scrape, step + scrape). */
const SCRAPE_S = 0.5;
const STEP_S = 1;
const RATE_INTERVAL = `${Math.max(4 * SCRAPE_S, STEP_S + SCRAPE_S)}s`;

/** Grafana's formatting of a variable's value in a Prometheus query: a multi-value or All variable is a regex. */
function formatted(v: Variable, value: string): string {
  return v.multi || v.includeAll ? value.replace(/[\\^$*+?.()|{}[\]]/g, '\\\\$&') : value;
}

function substitute(expr: string, values: Map<string, string>, range: { seconds: number }): string {
  return expr
    .replace(/\$__rate_interval\b/g, RATE_INTERVAL)
    .replace(/\$__interval_ms\b/g, String(STEP_S * 1000))
    .replace(/\$__interval\b/g, `${STEP_S}s`)
    .replace(/\$__range\b/g, `${range.seconds}s`)
    .replace(/\$\{(\w+)\}|\$(\w+)/g, (all, a: string | undefined, b: string | undefined) => values.get(a ?? b!) ?? all);
}

/** A variable set to All, as the dashboards open: its allValue in the queries. */
const ALL = '$__all';

// The GPU node's fake NVML GPUs, NVML index = device minor = GRES index. A 2-GPU job takes GRES 0 and 1: one busy,
// one idle; of the free ones one is idle too. Xid 94 (contained ECC error: a warning) on GPU 1, Xid 79 (fell off the
// bus: failed) on GPU 3; an Xid is NVML event type 8 (critical error) with the code as its data.
const UTIL = [70, 0, 0, 50];
/** GPM (Hopper): the busy GPUs' SMs, tensor, DRAM and FP64 pipes at work, the idle ones' at 0 (the job's efficiency row and the waste
 * table). */
const GPM = UTIL.map((u) => ({ graphics: u, sm: u, sm_occupancy: u / 2, tensor: u / 2, dram: u / 2, fp64: u / 5 }));
const WATTS = [400, 80, 75, 300];
const XIDS = [
  { device: 1, type: 8, data: 94 },
  { device: 3, type: 8, data: 79 },
];

/**
 * What some panels show here, worked out from the setup (at the end of the
 * data): 4 NVML GPUs on node01, the job's two, GPU 1 warning and GPU 3
 * failed, 2 simulated GPUs on simnode; rank 2 of the NCCL fixture is the
 * straggler. Keyed by dashboard uid, panel title, refId.
 */
const EXPECTED: [string, string, string, number][] = [
  ['l9gpu-fleet', 'GPUs', 'A', 6],
  ['l9gpu-fleet', 'Nodes', 'A', 2],
  ['l9gpu-fleet', 'Held by jobs', 'A', 2],
  // a node of each naming on each backend: the GPU node's 2 healthy GPUs and the simulated node's 2
  ['l9gpu-fleet', 'GPUs by health', 'A', 4],
  ['l9gpu-fleet', 'GPUs by health', 'B', 1],
  ['l9gpu-fleet', 'GPUs by health', 'C', 1],
  ['l9gpu-fleet', 'Idle, held by a job', 'A', 1],
  ['l9gpu-node', 'GPUs', 'A', 4],
  ['l9gpu-node', 'GPU power now', 'A', WATTS.reduce((a, b) => a + b)],
  ['l9gpu-node', 'Jobs', 'A', 1],
  ['l9gpu-gpu', 'Health', 'A', 1],
  ['l9gpu-job', 'GPUs', 'A', 2],
  ['l9gpu-job', 'Mean utilization', 'A', (UTIL[0]! + UTIL[1]!) / 200],
  ['l9gpu-job', 'Mean SM active', 'A', (GPM[0]!.sm + GPM[1]!.sm) / 200],
  ['l9gpu-job', 'Mean FP64 active', 'A', (GPM[0]!.fp64 + GPM[1]!.fp64) / 200],
  ['l9gpu-usage', 'By account', 'C', (UTIL[0]! + UTIL[1]!) / 200],
  ['l9gpu-nccl', 'Stragglers in range', 'A', 1],
];

/**
 * The naming of each node's sinks: the GPU node (every key panel but the fleet's counts) in l9gpu naming on
 * Prometheus and in hw naming on VictoriaMetrics, the simulated node the other way round, so that each backend
 * holds both, the fleet panels read both at once, and the key panels check the values in each naming.
 */
const NAMING_OF = {
  node01: { prometheus: 'l9gpu', otlp: 'hw' },
  simnode: { prometheus: 'hw', otlp: 'l9gpu' },
} as const;

/**
 * The names of the conventions' metrics each host's series have on a backend, by naming: the setup's namings
 * really reached the backend (a sink that ignored semantic_conventions would leave the hw half untested).
 */
async function namingsByHost(api: PromApi, at: number): Promise<Record<string, { l9gpu: string[]; hw: string[] }>> {
  const all = NAMING_PAIRS.flatMap((p) => [p.l9gpu, p.hw]);
  const found = await api.query(`count by (host_name, __name__) ({__name__=~"${all.join('|')}"})`, at);
  const out: Record<string, { l9gpu: string[]; hw: string[] }> = {};
  for (const { metric } of found) {
    const host = (out[metric.host_name!] ??= { l9gpu: [], hw: [] });
    (NAMING_PAIRS.some((p) => p.hw === metric.__name__) ? host.hw : host.l9gpu).push(metric.__name__!);
  }
  for (const h of Object.values(out)) for (const l of [h.l9gpu, h.hw]) l.sort();
  return out;
}

const finite = (r: PromSample[]): boolean =>
  r.some((s) => [...(s.values ?? []), ...(s.value ? [s.value] : [])].some(([, v]) => Number.isFinite(Number(v))));

interface Setting {
  /** Each variable's value here (ALL: its allValue), and per dashboard uid where it differs. */
  values: Map<string, string>;
  perDashboard: Record<string, Record<string, string>>;
  /** The data's time range (Unix seconds): the dashboards' range. */
  start: number;
  end: number;
}

/**
 * Runs every dashboard's variable and panel queries on a backend as Grafana
 * would (variables in order, each fed the values before it; range panels as
 * range queries); says what failed.
 */
async function runDashboards(api: PromApi, set: Setting): Promise<{ failures: string[]; ran: number }> {
  const range = { seconds: set.end - set.start };
  const failures: string[] = [];
  let ran = 0;
  let expected = 0;
  for (const { file, d } of load()) {
    const inQuery = new Map<string, string>();
    for (const v of d.templating.list.filter((x) => x.type === 'query')) {
      const value = set.perDashboard[d.uid]?.[v.name] ?? set.values.get(v.name);
      const m = /^label_values\((.*),\s*(\w+)\)$/s.exec(substitute(v.query!, inQuery, range));
      if (value === undefined || !m) {
        failures.push(
          `${file}: variable ${v.name}: ${
            value === undefined ? 'no value for it in this test' : `not label_values(selector, label): ` + `${v.query}`
          }`,
        );
        continue;
      }
      const found = await api.labelValues(m[2]!, m[1]!, set.start, set.end).catch((e: Error) => [`error: ${e.message}`]);
      ran++;
      if (value === ALL ? found.length === 0 : !found.includes(value))
        failures.push(`${file}: variable ${v.name}: ${m[0]} found ${JSON.stringify(found)}, not ${value}`);
      inQuery.set(v.name, value === ALL ? v.allValue! : formatted(v, value));
    }
    for (const { panel, target } of queriesOf([{ file, d }])) {
      const expr = substitute(target.expr, inQuery, range);
      const where = `${file}: "${panel.title}" ${target.refId}`;
      const r = await (target.instant ? api.query(expr, set.end) : api.queryRange(expr, set.start, set.end, STEP_S)).catch((e: Error) => e);
      ran++;
      if (r instanceof Error) failures.push(`${where}: ${r.message}`);
      else if (!finite(r)) failures.push(`${where}: ${r.length ? 'no finite value' : 'no data'}: ${expr}`);
      const want = EXPECTED.find(([uid, title, refId]) => uid === d.uid && title === panel.title && refId === target.refId)?.[3];
      if (want === undefined) continue;
      expected++;
      const now = await api.query(expr, set.end);
      const got = now.length === 1 ? Number(now[0]!.value![1]) : NaN;
      if (!(Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want))))
        failures.push(`${where} shows ${now.length === 1 ? got : JSON.stringify(now)}, the setup says ${want}: ${expr}`);
    }
  }
  if (expected !== EXPECTED.length)
    failures.push(
      `${expected} of the ${EXPECTED.length} expected values found their panel (titles must be unique where a value is expected)`,
    );
  return { failures, ran };
}

// [attribution] job_labels: the job's attributes on every GPU series, or on its share series alone; the same panels, the same values
for (const mode of ['points', 'info'] as const)
  describe(`on real backends fed by real daemons, a real Slurm 22.05 job holding GPUs, job_labels = ${mode}`, () => {
    const dir = tempDir(`l9gpu-dashboards-${mode}-`);
    const configFile = join(dir, 'gpunode.ini');
    const ncclDir = join(dir, 'nccl');
    const fake = new FakeNvml({
      driver_version: '550.54.15',
      energy_t0_s: Math.floor(Date.now() / 1000),
      devices: UTIL.map((u, i) =>
        h100(i, { util_gpu: u, power_mw: WATTS[i]! * 1000, energy_mj: 10_000_000, energy_mj_per_s: WATTS[i]! * 1000, gpm: GPM[i] }),
      ),
      events: XIDS,
    });
    const servers: http.Server[] = [];
    const daemons: DaemonProcess[] = [];
    const vm = new VictoriaMetrics();
    let cluster: SlurmCluster;
    let prom: Prometheus;
    let jobId = '';
    let set: Setting;

    before(async () => {
      const engines: string[] = [];
      for (const [engine, page] of Object.entries(ENGINE_PAGES)) {
        const s = await serveAdvancing(join(ROOT, page));
        servers.push(s);
        engines.push(`[${engine}]\nendpoints = http://127.0.0.1:${(s.address() as AddressInfo).port}/metrics\n`);
      }
      await vm.start({ prometheusNaming: true });
      const [gpuPort, simPort] = [await freePort(), await freePort()];
      // both nodes serve the pull endpoint and push over OTLP, at the same interval as the scrapes, each sink in one of
      // the namings (NAMING_OF): each backend holds both
      const sinks = (port: number, host: keyof typeof NAMING_OF) =>
        `[prometheus]\nhost = 127.0.0.1\nport = ${port}\nsemantic_conventions = ${NAMING_OF[host].prometheus}\n[otlp]\n` +
        `endpoint = ${vm.otlpEndpoint}\nexport_interval = ${SCRAPE_S * 1000}ms\nsemantic_conventions = ${NAMING_OF[host].otlp}\n`;
      // host_name: the name in the NCCL fixtures' file names (a log is read on the host that wrote it)
      writeFileSync(
        configFile,
        `[daemon]
plugins = nvml, host, nccl, ${Object.keys(ENGINE_PAGES).join(', ')}
sinks = prometheus, otlp
interval = ${SCRAPE_S * 1000}ms
cluster = ci
host_name = node01
attribution = slurm
state_dir = ${join(dir, 'state')}
[attribution]
job_labels = ${mode}
[slurm]
reconcile_interval = 1s
reconcile_source = local
[nccl]
paths = ${ncclDir}/nccl-inspector-*
discover = false
${engines.join('')}[jobs]
gpu_hour_price = 2.5
kwh_price = 0.3
${sinks(gpuPort, 'node01')}`,
      );
      const simConfig = join(dir, 'simnode.ini');
      writeFileSync(
        simConfig,
        `[daemon]\nplugins = sim, host\nsinks = prometheus, otlp\ninterval = ${SCRAPE_S * 1000}ms\ncluster ` +
          `= ci\nhost_name = simnode\nattribution = none\nstate_dir = ${join(dir, 'sim-state')}\n[sim]\ngpus ` +
          `= 2\n${sinks(simPort, 'simnode')}`,
      );
      // accounting is not needed (no sacct here): without slurmdbd the cluster starts in seconds and takes any account
      cluster = new SlurmCluster({ gpus: 4, hookConfig: configFile, withDbd: false });
      writeFileSync(configFile, readFileSync(configFile, 'utf8').replace('[slurm]\n', `[slurm]\nslurm_conf = ${cluster.conf}\n`));
      await cluster.start();
      daemons.push(
        new DaemonProcess(['--config', configFile], { ...fake.env(), ...cluster.clientEnv() }),
        new DaemonProcess(['--config', simConfig]),
      );
      const start = Math.floor(Date.now() / 1000);
      prom = await new Prometheus().start([`127.0.0.1:${gpuPort}`, `127.0.0.1:${simPort}`], `${SCRAPE_S * 1000}ms`);
      // the prolog turns GRES indices into UUIDs through the inventory the daemon writes from its GPU points
      await waitFor(
        "the GPU node's inventory in Prometheus",
        async () => (await prom.query('count(gpu_memory_total_bytes{host_name="node01"})'))[0]?.value?.[1] === '4' || undefined,
        30_000,
      );
      jobId = await cluster.sbatch(['--gres=gpu:2', '-A', 'proj-a', '-J', 'train-llm', '--wrap', 'sleep 600'], TEST_USER);
      await cluster.waitState(jobId, ['RUNNING']);
      // the job's name comes from Slurm (the reconciler) after the prolog: its series change labels then
      await waitFor(
        "the job's 2 GPUs with its name",
        async () =>
          (await prom.query(`count(gpu_job_share_ratio{slurm_job_id="${jobId}", slurm_job_name="train-llm"}) == 2`)).length === 1 ||
          undefined,
        30_000,
      );
      // the Inspector's default folder is named after the job: the ranks' series carry it; half the operations now
      const logs = join(ncclDir, `nccl-inspector-${jobId}`);
      mkdirSync(logs, { recursive: true });
      cpSync(NCCL_PROM, join(ncclDir, 'nccl-inspector-prom'), { recursive: true, filter: (f) => !f.endsWith('.jsonl') });
      const rank = readdirSync(NCCL_LOGS)
        .filter((f) => f.endsWith('.log'))
        .map((f) => ({ f, lines: readFileSync(join(NCCL_LOGS, f), 'utf8').trimEnd().split('\n') }));
      for (const { f, lines } of rank) writeFileSync(join(logs, f), lines.slice(0, lines.length / 2).join('\n') + '\n');
      const ops = async (api: PromApi) =>
        Number((await api.query(`sum(nccl_operations_total{slurm_job_id="${jobId}"})`))[0]?.value?.[1] ?? 0);
      await waitFor("the first half of the ranks' operations in Prometheus", async () => (await ops(prom.api)) === 48 || undefined, 30_000);
      for (const { f, lines } of rank) appendFileSync(join(logs, f), lines.slice(lines.length / 2).join('\n') + '\n');
      await waitFor("all the ranks' operations in Prometheus", async () => (await ops(prom.api)) === 96 || undefined, 30_000);
      await waitFor(
        "all the ranks' operations in VictoriaMetrics",
        async () => {
          await vm.flush();
          return (await ops(new PromApi(vm.url))) === 96 || undefined;
        },
        30_000,
      );

      const held = await prom.query(`gpu_job_share_ratio{slurm_job_id="${jobId}"}`);
      // what the mode sends: the job on the GPU series too, or on its shares alone
      const labelled = await prom.query(`count(gpu_utilization_ratio{slurm_job_id="${jobId}"})`);
      assert.deepEqual(
        labelled.map((s) => s.value![1]),
        mode === 'points' ? ['2'] : [],
      );
      // the cases the fleet panels count: an idle GPU held by the job, and an idle one no job holds
      assert.deepEqual(
        held.map((s) => UTIL[Number(s.metric.gpu_index)]).sort((a, b) => a! - b!),
        [UTIL[1], UTIL[0]],
        `the job holds GRES 0 and 1: ${JSON.stringify(held.map((s) => s.metric))}`,
      );
      // the idle one, with its Xid: every panel of the GPU dashboard has data
      const gpu = held.find((s) => UTIL[Number(s.metric.gpu_index)] === 0)!.metric.gpu_uuid!;
      set = {
        values: new Map([
          ['cluster', 'ci'],
          ['host', 'node01'],
          ['gpu', gpu],
          ['slurm_job_id', jobId],
          ['user', TEST_USER],
          ['account', 'proj-a'],
        ]),
        // the fleet as it opens, every node: the simulated one too
        perDashboard: { 'l9gpu-fleet': { host: ALL } },
        start,
        end: Math.ceil(Date.now() / 1000),
      };
    });

    after(async () => {
      await prom?.stop();
      const codes = await Promise.all(daemons.map((d) => d.stop()));
      await cluster?.stop();
      await vm.stop();
      for (const s of servers) s.close();
      codes.forEach((c, i) => assert.equal(c, 0, daemons[i]!.stderr));
    });

    test("each backend holds both namings: the GPU node's series in one, the simulated node's in the other", async () => {
      for (const [backend, api] of [
        ['prometheus', prom.api],
        ['otlp', new PromApi(vm.url)],
      ] as const) {
        const got = await namingsByHost(api, set.end);
        for (const host of ['node01', 'simnode'] as const) {
          const naming = NAMING_OF[host][backend];
          const other = naming === 'hw' ? 'l9gpu' : 'hw';
          assert.ok((got[host]?.[naming].length ?? 0) >= 8, `${backend}, ${host}: ${JSON.stringify(got[host])}`);
          assert.deepEqual(got[host]?.[other], [], `${backend}, ${host}: nothing in ${other} naming`);
        }
      }
    });

    test(
      'Prometheus 2.42 scraping the pull endpoints (the GPU node in l9gpu naming, the simulated one in hw naming): ' +
        "every variable query finds the setup's value, every panel query returns a finite number, the key panels the values of the setup",
      async (t) => {
        const r = await runDashboards(prom.api, set);
        t.diagnostic(`${r.ran} queries over ${set.end - set.start} s of data`);
        assert.deepEqual(r.failures, []);
      },
    );

    const vmTitle =
      'VictoriaMetrics fed over OTLP with Prometheus naming (the GPU node in hw naming, the simulated one in l9gpu naming): the same';
    test(vmTitle, async (t) => {
      const r = await runDashboards(new PromApi(vm.url), set);
      t.diagnostic(`${r.ran} queries over ${set.end - set.start} s of data`);
      assert.deepEqual(r.failures, []);
    });
  });
