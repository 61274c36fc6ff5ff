import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { ALL_SECTIONS, ATTRIBUTIONS, METRIC_EMITTERS, PLUGINS } from '../../daemon/catalog.js';
import {
  renderRoleArgumentSpecs,
  renderRoleDefaults,
  renderRoleKeys,
  withGeneratedBlock,
  withRoleVersion,
} from '../../src/core/config/ansible.js';
import { VERSION } from '../../src/core/resource.js';
import { renderConfigSection, renderExampleConfig, renderMetricsDoc, withConfigSection } from '../../src/core/docs.js';
import { METRICS, metric, prometheusName } from '../../src/core/metrics/registry.js';
import { toResourceMetrics } from '../../src/sinks/resource-metrics.js';
import { ROOT } from '../helpers/paths.js';

// '': a 0/1 state or an info metric (always 1), which is no ratio
const UCUM = new Set([
  '',
  '{binding}',
  '{device}',
  '1',
  'By',
  'By/s',
  'Cel',
  'W',
  'J',
  'Hz',
  's',
  '{error}',
  '{state}',
  '{cpu}',
  '{thread}',
  '{point}',
  '{tick}',
  '{row}',
  '{page}',
  '{replay}',
  '{process}',
  '{request}',
  '{token}',
  '{token}/s',
  '{preemption}',
  '{inference}',
  '{execution}',
  '{operation}',
  '{line}',
  '{event}',
  'g',
  '{currency}',
  '{currency}/h',
  '{cycle}',
  '{connection}',
]);

test('every metric has a known UCUM unit, a kind, a description and a dotted lower-case name', () => {
  for (const d of METRICS) {
    assert.ok(UCUM.has(d.unit), `${d.name}: unit ${d.unit}`);
    assert.ok(['gauge', 'sum', 'updown', 'histogram'].includes(d.kind), d.name);
    assert.match(d.name, /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/, d.name);
    assert.ok(d.description.length > 10, `${d.name} needs a description`);
    if (d.unit === '1' && d.kind === 'gauge')
      assert.match(d.description, /0\.\.1|1 while|1 if|always 1|fraction/i, `${d.name}: a ratio must say its range`);
  }
});

test('the contract metrics of design.md have their contract unit and kind', () => {
  const contract: [string, string, string][] = [
    ['gpu.utilization', '1', 'gauge'],
    ['gpu.memory.controller.utilization', '1', 'gauge'],
    ['gpu.memory.capacity.utilization', '1', 'gauge'],
    ['gpu.memory.used', 'By', 'gauge'],
    ['gpu.memory.free', 'By', 'gauge'],
    ['gpu.memory.total', 'By', 'gauge'],
    ['gpu.temperature', 'Cel', 'gauge'],
    ['gpu.power.draw', 'W', 'gauge'],
    ['gpu.power.limit', 'W', 'gauge'],
    ['gpu.energy.consumption', 'J', 'sum'],
    ['gpu.clock.frequency', 'Hz', 'gauge'],
    ['gpu.throttle.active', '1', 'gauge'],
    ['gpu.ecc.errors', '{error}', 'sum'],
    ['gpu.xid.errors', '{error}', 'sum'],
    ['gpu.pcie.throughput', 'By/s', 'gauge'],
    ['gpu.interconnect.throughput', 'By/s', 'gauge'],
  ];
  for (const [name, unit, kind] of contract) {
    const d = metric(name);
    assert.equal(d.unit, unit, name);
    assert.equal(d.kind, kind, name);
  }
  assert.deepEqual(metric('gpu.temperature').attributes, ['gpu.temperature.sensor']);
  assert.deepEqual(metric('gpu.throttle.active').attributes, ['gpu.throttle.cause']);
  assert.throws(() => metric('gpu.utilisation'), /unknown metric "gpu.utilisation"/);
});

test('prometheusName(): the OpenTelemetry compatibility rules, and the serializer writes the name unchanged', () => {
  const want: Record<string, string> = {
    'gpu.utilization': 'gpu_utilization_ratio',
    'gpu.power.draw': 'gpu_power_draw_watts',
    'gpu.memory.used': 'gpu_memory_used_bytes',
    'gpu.temperature': 'gpu_temperature_celsius',
    'gpu.energy.consumption': 'gpu_energy_consumption_joules_total',
    'gpu.pcie.throughput': 'gpu_pcie_throughput_bytes_per_second',
    'gpu.clock.frequency': 'gpu_clock_frequency_hertz',
    'gpu.ecc.errors': 'gpu_ecc_errors_total',
    'gpu.info': 'gpu_info',
    'gpu.lost': 'gpu_lost',
    'gpu.interconnect.io': 'gpu_interconnect_io_bytes_total',
    'system.cpu.logical.count': 'system_cpu_logical_count',
    'system.memory.usage': 'system_memory_usage_bytes',
    'l9gpu.process.cpu.time': 'l9gpu_process_cpu_time_seconds_total',
    'gpu.job.duration': 'gpu_job_duration_seconds',
    'gpu.memory.remapped_rows': 'gpu_memory_remapped_rows',
    'system.cpu.load_average.1m': 'system_cpu_load_average_1m',
  };
  for (const [n, p] of Object.entries(want)) assert.equal(prometheusName(metric(n)), p, n);
  assert.equal(new Set(METRICS.map(prometheusName)).size, METRICS.length, 'no two metrics share a Prometheus name');
  const batch = {
    source: 't',
    time: Date.now(),
    intervalMs: 1000,
    points: METRICS.map((d) =>
      d.kind === 'histogram'
        ? { metric: d, value: 1, attributes: {}, hist: { bounds: [1], counts: [0, 1], sum: 2, count: 1 } }
        : { metric: d, value: 1, attributes: {} },
    ),
  };
  const text = new PrometheusSerializer('', false).serialize(
    toResourceMetrics([batch], { 'service.name': 'l9gpu' }, Date.now(), '0', prometheusName) as never,
  );
  const written = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
  written.delete('target_info');
  assert.deepEqual([...written].sort(), METRICS.map(prometheusName).sort());
});

test('docs/metrics.md and docs/l9gpu.example.ini are up to date (npm run docs)', () => {
  assert.equal(
    readFileSync(join(ROOT, 'docs', 'metrics.md'), 'utf8'),
    renderMetricsDoc(METRIC_EMITTERS),
    'docs/metrics.md is stale: run npm run docs',
  );
  assert.equal(
    readFileSync(join(ROOT, 'docs', 'l9gpu.example.ini'), 'utf8'),
    renderExampleConfig(ALL_SECTIONS),
    'docs/l9gpu.example.ini is stale: run npm run docs',
  );
});

test('the Ansible role has a variable for every key of the schema (npm run docs)', () => {
  const file = (f: string) => readFileSync(join(ROOT, 'ansible/roles/l9gpu', f), 'utf8');
  assert.equal(
    file('defaults/main.yml'),
    withRoleVersion(withGeneratedBlock(file('defaults/main.yml'), renderRoleDefaults(ALL_SECTIONS), 'defaults'), VERSION),
    'defaults/main.yml is stale: run npm run docs',
  );
  assert.equal(
    file('meta/argument_specs.yml'),
    withGeneratedBlock(file('meta/argument_specs.yml'), renderRoleArgumentSpecs(ALL_SECTIONS), 'specs'),
    'meta/argument_specs.yml is stale: run npm run docs',
  );
  assert.equal(
    file('vars/main.yml'),
    withGeneratedBlock(file('vars/main.yml'), renderRoleKeys(ALL_SECTIONS), 'vars'),
    'vars/main.yml is stale: run npm run docs',
  );
  for (const s of ALL_SECTIONS)
    for (const k of s.keys) assert.match(file('defaults/main.yml'), new RegExp(`^l9gpu_${s.name}_${k.key}: null$`, 'm'));
});

test('every key of the schema is documented in the example config', () => {
  const text = readFileSync(join(ROOT, 'docs', 'l9gpu.example.ini'), 'utf8');
  for (const s of ALL_SECTIONS) {
    assert.ok(text.includes(`[${s.name}]`), s.name);
    for (const k of s.keys) assert.ok(new RegExp(`^;${k.key} = `, 'm').test(text.split(`[${s.name}]`)[1]!), `[${s.name}] ${k.key}`);
  }
});

test('every plugin README has its config section as the manifest defines it (npm run docs)', () => {
  for (const p of PLUGINS) {
    const readme = readFileSync(join(ROOT, 'plugins', p.name, 'README.md'), 'utf8');
    assert.equal(readme, withConfigSection(readme, p.section), `plugins/${p.name}/README.md config section is stale: run npm run docs`);
    assert.ok(readme.includes(renderConfigSection(p.section)), p.name);
  }
});

test('the config section of a README is replaced up to the next heading, and a key change shows', () => {
  const section = {
    name: 'x',
    description: '',
    keys: [{ key: 'k', type: 'duration' as const, default: 5, description: 'A | B.', env: [{ name: 'X_K' }] }],
  };
  const readme = '# x\n\n## Config (`[x]`)\nold text\n\n## Example output\nkeep\n';
  const out = withConfigSection(readme, section);
  assert.equal(out, '# x\n\n' + renderConfigSection(section) + '\n## Example output\nkeep\n');
  assert.match(out, /^\| `k` \| duration \| 5s \| `X_K` \| A \\\| B\. \|$/m);
  assert.notEqual(withConfigSection(out, { ...section, keys: [{ ...section.keys[0]!, default: 6 }] }), out);
  assert.throws(() => withConfigSection('# x\n', section), /no "## Config" section for \[x\]/);
});

test('every registry metric names who emits it, and every manifest names only registry metrics', () => {
  for (const d of METRICS) assert.ok(METRIC_EMITTERS.get(d.name)?.length, `${d.name}: no plugin, provider or agent stage lists it`);
  const names = new Set(METRICS.map((d) => d.name));
  for (const m of [...PLUGINS, ...ATTRIBUTIONS])
    for (const n of m.metrics) assert.ok(names.has(n), `${m.name}: ${n} is not in the registry`);
});
