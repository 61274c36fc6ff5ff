/** A real Prometheus 2.42 scrapes the daemon's pull endpoint and answers PromQL. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DaemonProcess, ownStateDir } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/paths.js';
import { Prometheus, promtoolCheckMetrics } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/wait.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

let daemon: DaemonProcess;
let prom: Prometheus;
let port: number;

before(async () => {
  port = await freePort();
  const f = join(tempDir(), 'prom.ini');
  writeFileSync(
    f,
    `[daemon]\nplugins = sim, host\nsinks = prometheus\ninterval = 500ms\ncluster = ` +
      `ci\n[sim]\ngpus = 3\n[prometheus]\nhost = 127.0.0.1\nport = ${port}\n`,
  );
  daemon = new DaemonProcess(['--config', f]);
  await daemon.waitStderr(/prometheus endpoint listening/);
  prom = await new Prometheus().start(`127.0.0.1:${port}`);
});

after(async () => {
  await prom?.stop();
  assert.equal(await daemon.stop(), 0, daemon.stderr);
});

test('Prometheus scrapes every sim GPU and answers PromQL with the labels and resource labels', async () => {
  const util = await waitFor(
    'gpu_utilization_ratio for 3 GPUs',
    async () => {
      const r = await prom.query('gpu_utilization_ratio{gpu_vendor="sim"}');
      return r.length === 3 ? r : undefined;
    },
    30_000,
  );
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
  const rate = await waitFor(
    'energy rate',
    async () => {
      const r = await prom.query('rate(gpu_energy_consumption_joules_total[5s])');
      return r.length === 3 ? r : undefined;
    },
    30_000,
  );
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
  assert.deepEqual(
    problems,
    ['system_cpu_logical_count non-histogram and non-summary metrics should not have "_count" suffix'],
    lint.output,
  );
  const notFound = await fetch(`http://127.0.0.1:${port}/nope`);
  assert.equal(notFound.status, 404);
});

test(
  'the page gzipped when the scraper asks (as Prometheus does on every scrape): the same ' +
    'series, a tenth of the bytes; identity when gzip is refused',
  async () => {
    const get = (encoding: string | undefined, method = 'GET') =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, path: '/metrics', method, headers: encoding === undefined ? {} : { 'accept-encoding': encoding } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    // series without their values: the page is rendered again at each batch, the series stay
    const series = (page: string) =>
      page
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => l.slice(0, l.lastIndexOf(' ')))
        .sort();
    const plain = await waitFor('a page with the sim GPUs', async () => {
      const r = await get(undefined);
      return r.body.includes('gpu_utilization_ratio') ? r : undefined;
    });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.headers.vary, 'accept-encoding');
    const gz = await get('gzip, deflate');
    assert.equal(gz.status, 200);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(Number(gz.headers['content-length']), gz.body.length);
    const unzipped = gunzipSync(gz.body).toString('utf8');
    assert.deepEqual(series(unzipped), series(plain.body.toString('utf8')));
    assert.ok(gz.body.length * 5 < plain.body.length, `gzipped ${gz.body.length} B of ${plain.body.length} B`);
    const head = await get('gzip', 'HEAD');
    assert.equal(head.headers['content-encoding'], 'gzip');
    assert.equal(head.body.length, 0);
    for (const refused of ['gzip;q=0', 'identity', 'br', '*;q=0, br', 'gzip;q=0, *']) {
      const r = await get(refused);
      assert.equal(r.headers['content-encoding'], undefined, refused);
      assert.ok(r.body.toString('utf8').includes('# TYPE gpu_utilization_ratio gauge'), refused);
    }
    for (const taken of ['*', 'x-gzip', 'br;q=1, GZIP;q=0.5']) assert.equal((await get(taken)).headers['content-encoding'], 'gzip', taken);
  },
);
