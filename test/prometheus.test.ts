/** A real Prometheus 2.42 scrapes the daemon's pull endpoint and answers PromQL. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DaemonProcess } from './helpers/daemon.js';
import { freePort } from './helpers/net.js';
import { tempDir } from './helpers/paths.js';
import { Prometheus, promtoolCheckMetrics } from './helpers/prometheus.js';
import { waitFor } from './helpers/wait.js';

let daemon: DaemonProcess;
let prom: Prometheus;
let port: number;

before(async () => {
  port = await freePort();
  const f = join(tempDir(), 'prom.ini');
  writeFileSync(f, `[daemon]\nplugins = sim, host\nsinks = prometheus\ninterval = 500ms\ncluster = ci\n[sim]\ngpus = 3\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n`);
  daemon = new DaemonProcess(['--config', f]);
  await daemon.waitStderr(/prometheus endpoint listening/);
  prom = await new Prometheus().start(`127.0.0.1:${port}`);
});

after(async () => {
  await prom?.stop();
  assert.equal(await daemon.stop(), 0, daemon.stderr);
});

test('Prometheus scrapes every sim GPU and answers PromQL with the labels and resource labels', async () => {
  const util = await waitFor('gpu_utilization_ratio for 3 GPUs', async () => {
    const r = await prom.query('gpu_utilization_ratio{gpu_vendor="sim"}');
    return r.length === 3 ? r : undefined;
  }, 30_000);
  for (const s of util) {
    assert.match(s.metric.gpu_uuid!, /^GPU-/);
    // the default resource_labels: the labels an OTLP backend gives every series, so one dashboard serves both paths
    assert.equal(s.metric.cluster_name, 'ci', 'cluster.name on every series');
    assert.equal(s.metric.host_name, hostname(), 'host.name on every series');
    assert.equal(s.metric.job, 'l9gpu');
    assert.equal(s.metric.otel_scope_name, undefined, 'no scope labels on every series');
    const v = Number(s.value![1]);
    assert.ok(v >= 0 && v <= 1);
  }
  const info = await prom.query('target_info');
  assert.equal(info.length, 1);
  assert.equal(info[0]!.metric.service_name, 'l9gpu');
  // a counter: rate() over scrapes works and is non-negative for each GPU
  const rate = await waitFor('energy rate', async () => {
    const r = await prom.query('rate(gpu_energy_consumption_joules_total[5s])');
    return r.length === 3 ? r : undefined;
  }, 30_000);
  for (const s of rate) assert.ok(Number(s.value![1]) >= 0);
  const temps = await prom.query('count by (gpu_temperature_sensor) (gpu_temperature_celsius)');
  assert.deepEqual(temps.map((t) => t.metric.gpu_temperature_sensor).sort(), ['edge', 'memory']);
  const host = await prom.query('system_memory_limit_bytes');
  assert.equal(host.length, 1);
});

test('the exposition page passes promtool check metrics and declares types, help and units', async () => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  assert.match(text, /^# HELP gpu_utilization_ratio Fraction of the time during which one or more kernels ran/m);
  assert.match(text, /^# TYPE gpu_utilization_ratio gauge$/m);
  assert.match(text, /^# TYPE gpu_energy_consumption_joules_total counter$/m);
  assert.match(text, /^# UNIT gpu_power_draw_watts W$/m);
  assert.match(text, /^# TYPE system_memory_usage_bytes gauge$/m, 'an up-down sum is a Prometheus gauge');
  const lint = promtoolCheckMetrics(text);
  // Exactly one style finding: system.cpu.logical.count is the OpenTelemetry semantic-convention
  // name. (gpu.memory.total, a design.md contract name, was the other until the unit word made it
  // gpu_memory_total_bytes.) Any other finding is a defect.
  const problems = lint.output.split('\n').filter((l) => l.trim());
  assert.deepEqual(problems, ['system_cpu_logical_count non-histogram and non-summary metrics should not have "_count" suffix'], lint.output);
  const notFound = await fetch(`http://127.0.0.1:${port}/nope`);
  assert.equal(notFound.status, 404);
});
