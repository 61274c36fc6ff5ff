import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONVENTION_ROWS, namingOf } from '../../src/core/metrics/conventions.js';
import type { Attributes, Batch, Point } from '../../src/core/metrics/model.js';
import { metric, prometheusName } from '../../src/core/metrics/registry.js';

const GPU: Attributes = {
  'gpu.index': 0,
  'gpu.uuid': 'GPU-aaaa',
  'gpu.model': 'NVIDIA H100 80GB HBM3',
  'gpu.vendor': 'nvidia',
  'gpu.pci.bus_id': '0000:18:00.0',
};
const point = (name: string, value: number, extra: Attributes = {}): Point => ({
  metric: metric(name),
  value,
  attributes: { ...GPU, ...extra },
});
const batch = (points: Point[]): Batch => ({ source: 'nvml', time: 1, intervalMs: 1000, points });

test('hw naming: each row renames its metric, adds the identity from gpu.info and keeps every l9gpu attribute', () => {
  const map = namingOf('hw');
  const info = point('gpu.info', 1, {
    'gpu.driver.version': '550.54.15',
    'gpu.serial_number': '1650523012345',
    'gpu.firmware.version': '96.00.5E.00.01',
  });
  const out = map(
    batch([
      info,
      point('gpu.utilization', 0.5, { 'slurm.job.id': '42' }),
      point('gpu.power.draw', 300),
      point('gpu.temperature', 40, { 'gpu.temperature.sensor': 'edge' }),
      point('gpu.fan.speed_ratio', 0.3),
      point('gpu.sm.active', 0.2),
    ]),
  ).points;
  const names = out.map((p) => p.metric.name);
  assert.deepEqual(names, ['gpu.info', 'hw.gpu.utilization', 'hw.power', 'hw.temperature', 'hw.fan.speed_ratio', 'gpu.sm.active']);
  assert.equal(out[0], info, 'gpu.info as it was');
  assert.equal(out[5]!.metric, metric('gpu.sm.active'), 'a metric the conventions do not define keeps its name');
  const identity = {
    'hw.id': 'GPU-aaaa',
    'hw.model': 'NVIDIA H100 80GB HBM3',
    'hw.vendor': 'nvidia',
    'hw.driver_version': '550.54.15',
    'hw.serial_number': '1650523012345',
    'hw.firmware_version': '96.00.5E.00.01',
  };
  assert.deepEqual(out[1]!.attributes, { ...GPU, 'slurm.job.id': '42', ...identity, 'hw.type': 'gpu', 'hw.gpu.task': 'general' });
  assert.equal(out[1]!.value, 0.5);
  assert.deepEqual(out[2]!.attributes, { ...GPU, ...identity, 'hw.type': 'gpu' });
  assert.equal(out[3]!.attributes['hw.sensor_location'], 'edge');
  assert.equal(out[3]!.attributes['gpu.temperature.sensor'], 'edge');
  assert.deepEqual(
    [out[4]!.attributes['hw.type'], out[4]!.attributes['hw.id'], out[4]!.attributes['hw.parent']],
    ['fan', 'GPU-aaaa/fan', 'GPU-aaaa'],
  );
});

test('hw naming: gpu.health becomes hw.status, one point per state, 1 for the one that holds; a later batch keeps the identity', () => {
  const map = namingOf('hw');
  map(batch([point('gpu.info', 1, { 'gpu.serial_number': 'S1' })]));
  for (const [health, holds] of [
    [0, 'ok'],
    [1, 'degraded'],
    [2, 'failed'],
  ] as const) {
    const out = map({ ...batch([point('gpu.health', health, { 'gpu.health.reason': '' })]), source: 'health' }).points;
    assert.deepEqual(
      out.map((p) => [p.metric.name, p.attributes['hw.state'], p.value]),
      ['ok', 'degraded', 'failed'].map((s) => ['hw.status', s, s === holds ? 1 : 0]),
    );
    assert.ok(out.every((p) => p.attributes['hw.serial_number'] === 'S1' && p.attributes['hw.type'] === 'gpu'));
  }
});

test('the l9gpu naming passes batches through untouched; a batch with no mapped metric is the same object', () => {
  const b = batch([point('gpu.utilization', 1)]);
  assert.equal(namingOf('l9gpu')(b), b);
  const none = batch([point('gpu.sm.active', 1)]);
  assert.equal(namingOf('hw')(none), none);
});

test("every row: an l9gpu metric, an hw.* name, the conventions' kind and Prometheus name", () => {
  const want: Record<string, [string, string]> = {
    'gpu.utilization': ['hw.gpu.utilization', 'hw_gpu_utilization_ratio'],
    'gpu.memory.used': ['hw.gpu.memory.usage', 'hw_gpu_memory_usage_bytes'],
    'gpu.memory.total': ['hw.gpu.memory.limit', 'hw_gpu_memory_limit_bytes'],
    'gpu.memory.capacity.utilization': ['hw.gpu.memory.utilization', 'hw_gpu_memory_utilization_ratio'],
    'gpu.pcie.io': ['hw.gpu.io', 'hw_gpu_io_bytes_total'],
    'gpu.power.draw': ['hw.power', 'hw_power_watts'],
    'gpu.energy.consumption': ['hw.energy', 'hw_energy_joules_total'],
    'gpu.temperature': ['hw.temperature', 'hw_temperature_celsius'],
    'gpu.ecc.errors': ['hw.errors', 'hw_errors_total'],
    'gpu.fan.speed_ratio': ['hw.fan.speed_ratio', 'hw_fan_speed_ratio'],
    'gpu.health': ['hw.status', 'hw_status'],
  };
  assert.deepEqual(Object.fromEntries(CONVENTION_ROWS.map((r) => [r.from.name, [r.to.name, prometheusName(r.to)]])), want);
  for (const r of CONVENTION_ROWS) {
    // the conventions' instruments: memory usage and limit are up-down counters, the rest as ours
    if (r.to.name === 'hw.gpu.memory.usage' || r.to.name === 'hw.gpu.memory.limit' || r.to.name === 'hw.status')
      assert.equal(r.to.kind, 'updown', r.to.name);
    else assert.equal(r.to.kind, r.from.kind, r.to.name);
    assert.equal(r.to.unit, r.from.name === 'gpu.health' ? '1' : r.from.unit, r.to.name);
  }
});
