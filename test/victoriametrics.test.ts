/**
 * Real OTLP/HTTP protobuf into a real VictoriaMetrics 1.112, read back through
 * its query API: names, attributes, resource labels, values, and units (made
 * visible by -opentelemetry.usePrometheusNaming, which derives suffixes from
 * the OTLP unit field).
 */
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { METRICS, prometheusName } from '../src/core/metrics/registry.js';
import { recordEnd, recordStart } from '../src/store/jobs.js';
import { openStore } from '../src/store/open.js';
import { simUuid } from '../plugins/sim/index.js';
import { Prometheus } from './helpers/prometheus.js';
import { slurmControllerDown } from './helpers/slurm-down.js';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DaemonProcess, parseLines, runCli } from './helpers/daemon.js';
import { FakeNvml, h100 } from './helpers/fake-nvml.js';
import { freePort } from './helpers/net.js';
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

test('one name per metric on both paths: the pull endpoint\'s names are those VictoriaMetrics gives the same metrics over OTLP with Prometheus naming (sim, nvml, host, self-metrics)', async () => {
  const port = await freePort();
  const f = join(dir, 'both.ini');
  writeFileSync(f, `[daemon]\nplugins = sim, nvml, host\nsinks = otlp, prometheus\ninterval = 1s\n[sim]\ngpus = 2\n[otlp]\nendpoint = ${vmProm.otlpEndpoint}\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n`);
  // an Xid queued: gpu.xid.errors too; the second tick on brings the interval peaks, NVLink rates and GPM activity
  const fake = new FakeNvml({ devices: [h100(0), h100(1)], events: [{ device: 1, type: 8, data: 79 }] });
  const d = new DaemonProcess(['--config', f], fake.env());
  let pulled: Set<string>;
  try {
    const scrape = async () => new Set([...(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    pulled = await waitFor('every late metric on the pull page', async () => {
      const n = await scrape().catch(() => new Set<string>());
      return ['gpu_sm_active_ratio', 'gpu_xid_errors_total', 'gpu_interconnect_throughput_bytes_per_second', 'gpu_utilization_max_ratio', 'l9gpu_sink_exported_total'].every((x) => n.has(x)) ? n : undefined;
    }, 30_000);
    pulled = await scrape(); // after the check: one more complete page
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
  pulled.delete('target_info'); // the resource, which an OTLP backend spreads over every series' labels instead
  await vmProm.flush();
  const pushed = new Set(await waitFor('the pushed names', async () => {
    const n = await vmProm.names();
    return pulled.size && [...pulled].every((x) => n.includes(x)) ? n : undefined;
  }, 20_000).catch(async () => vmProm.names()));
  // the earlier tests of this file pushed sim and host metrics too: every name in the backend is one this daemon served
  assert.deepEqual([...pulled].filter((x) => !pushed.has(x)), [], 'served but named otherwise over OTLP');
  assert.deepEqual([...pushed].filter((x) => !pulled.has(x)), [], 'named over OTLP but not served');
  const registry = new Set(METRICS.map(prometheusName));
  assert.deepEqual([...pulled].filter((x) => !registry.has(x)), [], 'every name is a registry metric\'s prometheusName()');
  assert.ok(pulled.size >= 45, `${pulled.size} names`);
});

test('l9gpu jobs --source promql reads a job from both namings: a real Prometheus scraping the pull endpoint, and VictoriaMetrics fed over OTLP with Prometheus naming', async () => {
  const d0 = tempDir('l9gpu-promql-both-');
  chmodSync(d0, 0o755);
  // the binding the "prolog" (recordStart) opens stays open: slurmctld does not answer
  const slurm = slurmControllerDown(d0, 'promqlnode');
  const state = slurm.state;
  const port = await freePort();
  const config = join(d0, 'l9gpu.ini');
  writeFileSync(config, `[daemon]\n${slurm.daemon}plugins = sim\nsinks = otlp, prometheus\ninterval = 1s\nhost_name = promqlnode\n[sim]\ngpus = 2\n[otlp]\nendpoint = ${vmProm.otlpEndpoint}\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n${slurm.slurm}`);
  const uuid = simUuid('promqlnode', 1);
  const db = openStore(state);
  recordStart(db, { jobId: '4242', runKey: 'r0', user: 'alice', uid: 1001, partition: 'gpu' }, [{ uuid, shared: false }], 'prolog', Date.now());
  db.close();
  const prom = await new Prometheus().start(`127.0.0.1:${port}`);
  const d = new DaemonProcess(['--config', config]);
  const show = async (extra: string[]) => {
    const r = await runCli(['jobs', 'show', '4242', '--json', '--config', config, ...extra]);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { source: string; gpus: { uuid: string; figures: { samples: number; utilMean: number | null; memTotal: number | null } }[] };
  };
  try {
    await waitFor('5 scrapes of the job\'s GPU', async () => Number((await prom.query(`count_over_time(gpu_utilization_ratio{slurm_job_id="4242"}[1m])`))[0]?.value?.[1] ?? 0) >= 5, 40_000);
  } finally {
    assert.equal(await d.stop(), 0, d.stderr);
  }
  const rw = openStore(state);
  recordEnd(rw, { jobId: '4242', runKey: 'r0' }, { endTime: Date.now(), state: 'COMPLETED', exitCode: 0 }, [], 'epilog');
  rw.close();
  try {
    const store = await show([]);
    await vmProm.flush();
    // here the naming: the report finds the job's series under Prometheus names and folds them. The exact agreement
    // of the two sources is the Slurm suite's (a running daemon); with this daemon stopped, a CI run once saw the
    // two differ by the samples at the ends, not explained yet
    const viaVm = await waitFor('the PromQL report from VictoriaMetrics', async () => {
      const r = await show(['--source', 'promql', '--url', vmProm.url]).catch(() => undefined);
      return r && Math.abs(r.gpus[0]!.figures.samples - store.gpus[0]!.figures.samples) <= 1 ? r : undefined;
    });
    assert.equal(viaVm.source, 'promql');
    assert.deepEqual(viaVm.gpus.map((g) => g.uuid), [uuid]);
    assert.ok(Math.abs(viaVm.gpus[0]!.figures.utilMean! - store.gpus[0]!.figures.utilMean!) < 0.05, `${viaVm.gpus[0]!.figures.utilMean} vs the store's ${store.gpus[0]!.figures.utilMean}`);
    assert.equal(viaVm.gpus[0]!.figures.memTotal, store.gpus[0]!.figures.memTotal);
    const viaProm = await show(['--source', 'promql', '--url', prom.url]);
    assert.deepEqual(viaProm.gpus.map((g) => g.uuid), [uuid]);
    const f = viaProm.gpus[0]!.figures;
    assert.ok(f.samples >= 5 && f.utilMean !== null && f.utilMean >= 0 && f.utilMean <= 1, JSON.stringify(f));
    assert.equal(f.memTotal, store.gpus[0]!.figures.memTotal);
  } finally {
    await prom.stop();
  }
});
