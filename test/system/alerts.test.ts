/**
 * dashboards/alerts: the rule file passes promtool's checks and its unit tests; every alert has a case where
 * it fires and one where it must not, and an alert on a metric the hardware conventions rename has both in
 * each naming (`semantic_conventions = l9gpu | hw`); the rules read only metrics the registry has, under both
 * names where the conventions rename one; the Xid alerts split the codes as the catalog does; the unit tests
 * fail when a rule changes or forgets a naming; and the tests' series carry the labels a real daemon's series
 * carry (in either naming), as a real Prometheus scrapes them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { CONVENTION_ROWS } from '../../src/core/metrics/conventions.js';
import { ATTRIBUTION_ATTRIBUTES, METRICS, prometheusName } from '../../src/core/metrics/registry.js';
import { xidEntry } from '../../src/health/xid-catalog.js';
import { DaemonProcess, ownStateDir } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { Prometheus, PROMTOOL_BIN } from '../helpers/prometheus.js';
import { exportedPrometheusNames, metricNamesIn, NAMING_PAIRS, namingGaps, unknownMetricNames } from '../helpers/promql-names.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

const DIR = join(ROOT, 'dashboards', 'alerts');
const RULES = join(DIR, 'l9gpu.rules.yml');
const TESTS = join(DIR, 'l9gpu.rules.test.yml');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}
interface AlertCase {
  eval_time: string;
  alertname: string;
  exp_alerts?: { exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> }[] | null;
}
interface TestGroup {
  name: string;
  input_series: { series: string; values: string }[];
  alert_rule_test?: AlertCase[];
}
interface TestFile {
  tests: TestGroup[];
}

const ruleFile = parse(readFileSync(RULES, 'utf8')) as RuleFile;
const testFile = parse(readFileSync(TESTS, 'utf8')) as TestFile;
const rules = ruleFile.groups.flatMap((g) => g.rules);
const alerts = rules.filter((r): r is Rule & { alert: string } => r.alert !== undefined);
const cases = testFile.tests.flatMap((t) => (t.alert_rule_test ?? []).map((c) => ({ ...c, group: t.name })));

/**
 * The naming of a test group's series of the metrics the conventions rename: l9gpu, hw, mixed (a node whose
 * sinks change naming), or none (the group has no such series).
 */
function namingOf(group: TestGroup): 'l9gpu' | 'hw' | 'mixed' | 'none' {
  const names = new Set(group.input_series.map((x) => x.series.slice(0, x.series.indexOf('{'))));
  const l9gpu = NAMING_PAIRS.some((p) => names.has(p.l9gpu));
  const hw = NAMING_PAIRS.some((p) => names.has(p.hw));
  return l9gpu && hw ? 'mixed' : l9gpu ? 'l9gpu' : hw ? 'hw' : 'none';
}
const groupNaming = new Map(testFile.tests.map((g) => [g.name, namingOf(g)]));
/** The alerts that read a metric the conventions rename. */
const renamedAlerts = alerts.filter((a) => NAMING_PAIRS.some((p) => metricNamesIn(a.expr).includes(p.l9gpu))).map((a) => a.alert);

/**
 * The label names of each series real daemons (sim GPUs) show a real Prometheus: one daemon's page in l9gpu
 * naming, the other's in hw naming (`[prometheus] semantic_conventions`). Started before the first test and
 * awaited by the last: Prometheus applies its scrape targets only about 5 s after it starts, a wait the promtool
 * tests fill.
 */
const sim: { daemons: DaemonProcess[]; prom: Prometheus; dir: string } = {
  daemons: [],
  prom: new Prometheus(),
  dir: tempDir('l9gpu-alerts-'),
};
let realLabels: Promise<Map<string, Set<string>>>;

async function scrapeSim(): Promise<Map<string, Set<string>>> {
  const targets: string[] = [];
  for (const naming of ['l9gpu', 'hw']) {
    const port = await freePort();
    const ini = join(sim.dir, `${naming}.ini`);
    writeFileSync(
      ini,
      `[daemon]\nplugins = sim\nsinks = prometheus\ninterval = 200ms\ncluster = hpc1\nstate_dir = ` +
        `${join(sim.dir, `state-${naming}`)}\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\nresource_labels = ` +
        `cluster.name, host.name\nsemantic_conventions = ${naming}\n`,
    );
    sim.daemons.push(new DaemonProcess(['--config', ini]));
    targets.push(`127.0.0.1:${port}`);
  }
  // Prometheus retries the scrape until the endpoint answers
  await Promise.all([...sim.daemons.map((d) => d.waitStderr(/prometheus endpoint listening/)), sim.prom.start(targets)]);
  const scraped = await waitFor(
    "a scrape of both daemons with the GPUs' health",
    async () => {
      const r = await sim.prom.query('{job="l9gpu"}');
      const names = new Set(r.map((s) => s.metric.__name__));
      return names.has('gpu_health') && names.has('hw_status') ? r : undefined;
    },
    30_000,
  );
  const real = new Map<string, Set<string>>();
  for (const s of scraped) {
    const { __name__: name, ...labels } = s.metric;
    real.set(name!, new Set(Object.keys(labels)));
  }
  return real;
}

before(() => {
  realLabels = scrapeSim();
  // awaited by the last test; a failure before that is not an unhandled rejection
  realLabels.catch(() => undefined);
});

after(async () => {
  await sim.prom.stop();
  const codes = await Promise.all(sim.daemons.map((d) => d.stop()));
  rmSync(sim.dir, { recursive: true, force: true });
  codes.forEach((c, i) => assert.equal(c, 0, sim.daemons[i]!.stderr));
});

function promtool(args: string[], cwd = DIR): Promise<{ status: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(PROMTOOL_BIN, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    p.on('error', reject);
    p.on('close', (status) => resolve({ status, out, err }));
  });
}

/** Seconds in a Prometheus duration: promtool prints 66m as 1h6m. */
function seconds(d: string): number {
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800, y: 31_536_000 };
  let total = 0;
  for (const [, n, u] of d.matchAll(/(\d+)(ms|[smhdwy])/g)) total += Number(n) * unit[u!]!;
  return total;
}

/** A case as "alertname@seconds in <test group>". */
const caseKey = (alertname: string, time: string, group: string): string => `${alertname}@${seconds(time)} in ${group}`;

/** The keys of the cases that expect the alert or of those that expect none of it, of the groups `only` admits. */
function caseKeys(firing: boolean, only: (c: (typeof cases)[number]) => boolean = () => true): string[] {
  return [
    ...new Set(
      cases.filter((c) => (c.exp_alerts?.length ?? 0) > 0 === firing && only(c)).map((c) => caseKey(c.alertname, c.eval_time, c.group)),
    ),
  ].sort();
}

/** The cases promtool reported failing, in the same spelling (promtool names the group before each). */
function failedKeys(out: string): string[] {
  return [
    ...new Set([...out.matchAll(/name: (.*),\n\s+alertname: (\S+), time: (\S+?),/g)].map(([, g, a, t]) => caseKey(a!, t!, g!))),
  ].sort();
}

test('promtool check rules: valid, and no lint finding', async () => {
  const r = await promtool(['check', 'rules', '--lint=all', '--lint-fatal', 'l9gpu.rules.yml']);
  assert.equal(r.status, 0, r.out + r.err);
  assert.equal(r.out, `Checking l9gpu.rules.yml\n  SUCCESS: ${rules.length} rules found\n\n`);
  assert.equal(r.err, '');
});

test('promtool test rules: every unit test passes', async () => {
  const r = await promtool(['test', 'rules', 'l9gpu.rules.test.yml']);
  assert.equal(r.status, 0, r.out + r.err);
  assert.match(r.out, /^Unit Testing: {2}l9gpu\.rules\.test\.yml\n {2}SUCCESS\n/);
});

test('every alert has a case where it fires and one where it must not, and every case is of a rule the file has', () => {
  const names = alerts.map((a) => a.alert);
  assert.ok(names.length >= 14, `the rule file has its alerts (${names.length})`);
  const fires = new Set(caseKeys(true).map((k) => k.split('@')[0]));
  const quiet = new Set(caseKeys(false).map((k) => k.split('@')[0]));
  assert.deepEqual(
    names.filter((n) => !fires.has(n)),
    [],
    'alerts without a firing case',
  );
  assert.deepEqual(
    names.filter((n) => !quiet.has(n)),
    [],
    'alerts without a case where they must not fire',
  );
  assert.deepEqual(
    [...new Set(cases.map((c) => c.alertname))].filter((n) => !names.includes(n)),
    [],
    'cases of no alert in the rule file',
  );
});

test(
  'an alert on a metric the hardware conventions rename has a case where it fires and one where it must not in ' +
    'each naming, and a case for a node whose sinks change naming',
  () => {
    assert.deepEqual(renamedAlerts, ['GpuMissing', 'GpuEccUncorrected', 'SlurmJobGpuIdle']);
    const has = (alert: string, naming: string, firing: boolean) =>
      cases.some((c) => c.alertname === alert && groupNaming.get(c.group) === naming && (c.exp_alerts?.length ?? 0) > 0 === firing);
    const wanting: string[] = [];
    for (const a of renamedAlerts)
      for (const naming of ['l9gpu', 'hw'])
        for (const firing of [true, false])
          if (!has(a, naming, firing)) wanting.push(`${a}: no ${firing ? 'firing' : 'quiet'} case in ${naming} naming`);
    assert.deepEqual(wanting, []);
    assert.ok([...groupNaming.values()].includes('mixed'), 'a group whose node changes naming');
  },
);

test('every alert has a severity, a summary, a description and a runbook hint that points at its README section', () => {
  const readme = readFileSync(join(DIR, 'README.md'), 'utf8');
  for (const a of alerts) {
    assert.match(a.labels?.severity ?? '', /^(critical|warning|info)$/, a.alert);
    for (const k of ['summary', 'description', 'runbook']) assert.ok(a.annotations?.[k], `${a.alert}: ${k}`);
    assert.ok(a.annotations!.runbook!.endsWith(` dashboards/alerts/README.md#${a.alert.toLowerCase()}`), `${a.alert}: runbook anchor`);
    assert.match(readme, new RegExp(`^### ${a.alert}$`, 'm'), `${a.alert}: a README section`);
  }
});

test('the GPU alerts name the host and the GPU, and the jobs that held it in one and the same sentence', () => {
  const gpu = ruleFile.groups.find((g) => g.name === 'l9gpu-gpu')!.rules.filter((r) => r.alert);
  assert.ok(gpu.length >= 8);
  const jobSentence = (d: string) => d.slice(d.indexOf('{{- with printf'));
  const first = jobSentence(gpu[0]!.annotations!.description!);
  assert.match(first, /gpu_job_share_ratio\{cluster_name=%q,host_name=%q,gpu_uuid=%q,slurm_job_id!=""\}/);
  for (const a of gpu) {
    const d = a.annotations!.description!;
    for (const label of ['host_name', 'gpu_index', 'gpu_model', 'gpu_uuid'])
      assert.ok(d.includes(`{{ $labels.${label} }}`), `${a.alert}: ${label}`);
    assert.equal(jobSentence(d), first, `${a.alert}: the jobs sentence`);
  }
});

test(
  "a rule that reads a metric the hardware conventions rename reads both its names, the conventions' with their fixed " +
    'labels (hw_type, hw_gpu_task); the check fails a rule with one name spelled as the other',
  () => {
    for (const r of rules) assert.deepEqual(namingGaps(r.expr), [], `${r.alert ?? r.record}: ${r.expr}`);
    let mutants = 0;
    for (const r of rules)
      for (const p of NAMING_PAIRS) {
        if (!metricNamesIn(r.expr).includes(p.l9gpu)) continue;
        for (const [from, to] of [
          [p.hw, p.l9gpu],
          [p.l9gpu, p.hw],
        ] as const) {
          mutants++;
          const mutant = r.expr.replace(new RegExp(`(?<![\\w:])${from}(?![\\w:])`, 'g'), to);
          assert.notDeepEqual(namingGaps(mutant), [], `${r.alert}: ${from} -> ${to} passes: ${mutant}`);
        }
      }
    assert.equal(mutants, 6);
  },
);

test(
  'the rules read only metrics the registry exports (recorded series aside), in their ' + "expressions and their annotations' queries",
  () => {
    const known = exportedPrometheusNames();
    for (const r of rules) if (r.record) known.add(r.record);
    for (const r of rules) {
      assert.deepEqual(unknownMetricNames(r.expr, known), [], `${r.alert ?? r.record}: ${r.expr}`);
      for (const text of Object.values(r.annotations ?? {})) {
        for (const [, q] of text.matchAll(/printf\s+`([^`]*)`[^|]*\|\s*query\b/g))
          assert.deepEqual(unknownMetricNames(q!, known), [], `${r.alert}: ${q}`);
      }
    }
  },
);

test(
  'the Xid alerts split the codes as the catalog does: failed -> critical, warning and ' + "unknown -> warning, an application's -> none",
  () => {
    const codesOf = (name: string): RegExp => {
      const m = /gpu_xid_code=~"([^"]+)"/.exec(alerts.find((a) => a.alert === name)!.expr);
      assert.ok(m, name);
      // Prometheus anchors a label regex at both ends
      return new RegExp(`^(?:${m[1]})$`);
    };
    const critical = codesOf('GpuXidCritical');
    const warning = codesOf('GpuXidWarning');
    const wrong: string[] = [];
    for (let code = 1; code <= 2000; code++) {
      const severity = xidEntry(code).severity;
      const got = critical.test(String(code)) ? (warning.test(String(code)) ? 'both' : 2) : warning.test(String(code)) ? 1 : 0;
      if (got !== severity) wrong.push(`${code}: the catalog says ${severity}, the rules ${got}`);
    }
    assert.deepEqual(wrong, []);
  },
);

test(
  'the unit tests fail when a rule changes: an alert that never fires, one that fires too ' + 'soon or without cause, a threshold moved',
  async () => {
    const mutate = async (change: (r: Rule & { alert: string }) => void): Promise<{ status: number | null; out: string }> => {
      const dir = tempDir('l9gpu-alerts-');
      const copy = parse(readFileSync(RULES, 'utf8')) as RuleFile;
      for (const g of copy.groups) for (const r of g.rules) if (r.alert) change(r as Rule & { alert: string });
      writeFileSync(join(dir, 'l9gpu.rules.yml'), stringify(copy));
      copyFileSync(TESTS, join(dir, 'l9gpu.rules.test.yml'));
      const r = await promtool(['test', 'rules', 'l9gpu.rules.test.yml'], dir);
      rmSync(dir, { recursive: true, force: true });
      return { status: r.status, out: r.out + r.err };
    };
    /** Each rule with one naming's names spelled as the other's: the rule that forgot a naming. */
    const forget = (naming: 'l9gpu' | 'hw') => (r: Rule) => {
      for (const p of NAMING_PAIRS) {
        const [from, to] = naming === 'hw' ? [p.hw, p.l9gpu] : [p.l9gpu, p.hw];
        r.expr = r.expr.replace(new RegExp(`(?<![\\w:])${from}(?![\\w:])`, 'g'), to);
      }
    };
    const [never, always, threshold, noHw, noL9gpu] = await Promise.all([
      mutate((r) => (r.expr = `(${r.expr}) unless on () vector(1)`)),
      // a label-less alert wherever the real one is absent, at once: every case that expects silence must see it
      mutate((r) => {
        r.expr = `(${r.expr}) or on () vector(1)`;
        delete r.for;
      }),
      mutate((r) => {
        if (r.alert === 'GpuThermalThrottling') r.expr = r.expr.replace('> 0.5', '> 0.7');
      }),
      mutate(forget('hw')),
      mutate(forget('l9gpu')),
    ]);
    assert.equal(never.status, 1, never.out);
    assert.deepEqual(failedKeys(never.out), caseKeys(true), 'every firing case fails, no other');
    assert.equal(always.status, 1, always.out);
    assert.deepEqual(failedKeys(always.out), caseKeys(false), 'every quiet case fails, no other');
    assert.equal(threshold.status, 1, threshold.out);
    assert.deepEqual(
      failedKeys(threshold.out),
      caseKeys(true, (c) => c.alertname === 'GpuThermalThrottling'),
    );
    assert.equal(caseKeys(true, (c) => c.alertname === 'GpuThermalThrottling').length, 1);
    // a rule that forgot a naming: every firing case of its alert in that naming fails, no case in the other naming
    for (const [forgot, out, other] of [
      ['hw', noHw, 'l9gpu'],
      ['l9gpu', noL9gpu, 'hw'],
    ] as const) {
      assert.equal(out.status, 1, out.out);
      const failed = failedKeys(out.out);
      const inNaming = (naming: string) => (c: (typeof cases)[number]) =>
        renamedAlerts.includes(c.alertname) && groupNaming.get(c.group) === naming;
      assert.ok(caseKeys(true, inNaming(forgot)).length >= renamedAlerts.length, `firing cases in ${forgot} naming`);
      assert.deepEqual(
        caseKeys(true, inNaming(forgot)).filter((k) => !failed.includes(k)),
        [],
        `forgot ${forgot}: firing cases that still pass`,
      );
      const otherKeys = [...caseKeys(true, inNaming(other)), ...caseKeys(false, inNaming(other))];
      assert.deepEqual(
        failed.filter((k) => otherKeys.includes(k)),
        [],
        `forgot ${forgot}: cases in ${other} naming that fail`,
      );
    }
  },
);

test(
  "the unit tests' series carry the labels of a real daemon's series (sim GPUs scraped by a " +
    "real Prometheus, in l9gpu and in hw naming), plus the job's while a job holds the GPU",
  async () => {
    const real = await realLabels;
    const sanitize = (k: string) => k.replace(/[^a-zA-Z0-9_]/g, '_');
    // What the sim plugin does not emit (NVML's lost, Xid and remap gauges, attribution's shares) has its scope's
    // labels, as a metric of the scope without attributes of its own shows them. A metric's own attributes may be
    // absent: Prometheus drops a label whose value is empty (a healthy GPU's gpu_health_reason).
    const scopeBase = { gpu: 'gpu_utilization_ratio', agent: 'l9gpu_process_memory_rss_bytes' } as Record<string, string>;
    const attribution = ATTRIBUTION_ATTRIBUTES.map(sanitize);
    const wrong: string[] = [];
    for (const { series } of testFile.tests.flatMap((x) => x.input_series)) {
      const m = /^([a-zA-Z_:][\w:]*)\{(.*)\}$/.exec(series);
      assert.ok(m, series);
      const name = m[1]!;
      const body = m[2]!;
      const labels = [...body.matchAll(/(\w+)="(?:[^"\\]|\\.)*"/g)].map(([, k]) => k!);
      const def = [...METRICS, ...CONVENTION_ROWS.map((r) => r.to)].find((d) => prometheusName(d) === name);
      const required = real.get(name) ?? (def && real.get(scopeBase[def.scope] ?? ''));
      if (!required) {
        wrong.push(`${name}: neither scraped nor in the registry`);
        continue;
      }
      const allowed = new Set([...required, ...(def?.attributes.map(sanitize) ?? []), ...(def?.scope === 'gpu' ? attribution : [])]);
      const missing = [...required].filter((k) => !labels.includes(k));
      const extra = labels.filter((k) => !allowed.has(k));
      if (missing.length || extra.length) wrong.push(`${name}: the test lacks ${missing.join() || '-'} and adds ${extra.join() || '-'}`);
    }
    assert.deepEqual([...new Set(wrong)], []);
  },
);
