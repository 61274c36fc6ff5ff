/**
 * Real OTLP/HTTP protobuf into a real VictoriaMetrics 1.112, read back through
 * its query API: names, attributes, resource labels, values, and units (made
 * visible by -opentelemetry.usePrometheusNaming, which derives suffixes from
 * the OTLP unit field).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseLines, runCli } from './helpers/daemon.js';
import { tempDir } from './helpers/paths.js';
import { VictoriaMetrics } from './helpers/victoriametrics.js';
import { waitFor } from './helpers/wait.js';

const dir = tempDir();
const vm = new VictoriaMetrics();
const vmProm = new VictoriaMetrics();
before(async () => {
  await Promise.all([vm.start(), vmProm.start({ prometheusNaming: true })]);
});
after(async () => {
  await Promise.all([vm.stop(), vmProm.stop()]);
});

async function exportOnce(endpoint: string, name: string): Promise<ReturnType<typeof parseLines>> {
  const twin = join(dir, `${name}.jsonl`);
  const f = join(dir, `${name}.ini`);
  writeFileSync(f, `[daemon]\nplugins = sim, host\nsinks = otlp, file\ncluster = ci-cluster\n[sim]\ngpus = 4\n[otlp]\nendpoint = ${endpoint}\n[file]\npath = ${twin}\n`);
  const r = await runCli(['daemon', '--once', '--config', f]);
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /delivery failed|rejected/);
  return parseLines(readFileSync(twin, 'utf8'));
}

test('series keep dotted names and carry identity and resource labels; values match what was sent', async () => {
  const sent = await exportOnce(vm.otlpEndpoint, 'dotted');
  await vm.flush();
  const series = await waitFor('gpu.utilization series', async () => {
    const s = await vm.series('{__name__="gpu.utilization"}');
    return s.length === 4 ? s : undefined;
  });
  for (const s of series) {
    assert.equal(s['gpu.vendor'], 'sim');
    assert.match(s['gpu.uuid']!, /^GPU-/);
    assert.ok(s['gpu.index'] !== undefined && s['gpu.model'] && s['gpu.pci.bus_id']);
    assert.equal(s['service.name'], 'l9gpu');
    assert.equal(s['cluster.name'], 'ci-cluster');
    assert.ok(s['host.name']);
  }
  assert.deepEqual(series.map((s) => s['gpu.index']).sort(), ['0', '1', '2', '3']);

  // every point sent arrives with its exact value and timestamp
  for (const name of ['gpu.utilization', 'gpu.power.draw', 'gpu.energy.consumption', 'gpu.memory.used', 'system.memory.limit']) {
    const want = sent.filter((p) => p.name === name);
    const raw = await waitFor(`${name} samples`, async () => {
      await vm.flush();
      const r = await vm.exportRaw(`{__name__="${name}"}`);
      return r.length === want.length ? r : undefined;
    });
    for (const p of want) {
      const s = raw.find((x) => Object.entries(p.attributes).every(([k, v]) => x.metric[k] === String(v)));
      assert.ok(s, `${name} ${JSON.stringify(p.attributes)}`);
      assert.deepEqual(s.values, [p.value], name);
      assert.deepEqual(s.timestamps, [Date.parse(p.time)], name);
    }
  }
  const temp = await vm.query('gpu.temperature{"gpu.temperature.sensor"="memory"}');
  assert.equal(temp.length, 4);
  const sums = await vm.query('sum by (gpu.ecc.scope) (gpu.ecc.errors)');
  assert.deepEqual(sums.map((s) => s.metric['gpu.ecc.scope']).sort(), ['aggregate', 'volatile']);
});

test('the OTLP unit reaches the backend: Prometheus-style names carry the unit suffix', async () => {
  await exportOnce(vmProm.otlpEndpoint, 'units');
  await vmProm.flush();
  const names = await waitFor('names with units', async () => {
    const n = await vmProm.names();
    return n.includes('gpu_power_draw_watts') ? n : undefined;
  });
  for (const n of [
    'gpu_utilization_ratio',
    'gpu_memory_utilization_ratio',
    'gpu_memory_used_bytes',
    'gpu_memory_total_bytes',
    'gpu_temperature_celsius',
    'gpu_power_draw_watts',
    'gpu_power_limit_watts',
    'gpu_energy_consumption_joules_total',
    'gpu_pcie_throughput_bytes_per_second',
    'gpu_interconnect_throughput_bytes_per_second',
    'gpu_ecc_errors_total',
    'system_cpu_utilization_ratio',
    'system_memory_usage_bytes',
    'l9gpu_process_memory_rss_bytes',
    'l9gpu_process_cpu_time_seconds_total',
  ]) {
    assert.ok(names.includes(n), `${n} not in ${names.join(' ')}`);
  }
  const labels = await vmProm.series('gpu_utilization_ratio');
  assert.equal(labels.length, 4);
  assert.ok(labels.every((l) => l.gpu_uuid?.startsWith('GPU-') && l.gpu_vendor === 'sim'));
});
