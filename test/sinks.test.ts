import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseLines, runCli } from './helpers/daemon.js';
import { HttpCapture } from './helpers/http-capture.js';
import { attrs, decodeOtlp } from './helpers/otlp-decode.js';
import { tempDir } from './helpers/paths.js';
import type { Batch } from '../src/core/metrics/model.js';
import { METRICS, prometheusName } from '../src/core/metrics/registry.js';
import { decodeExportResponse, encodeMetricsRequest } from '../src/sinks/otlp-proto.js';
import { renderExposition } from '../src/sinks/prom-text.js';
import { toResourceMetrics } from '../src/sinks/resource-metrics.js';

const dir = tempDir();

function ini(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

test('otlp: gzip protobuf with headers, decoded exactly: resource, scope, kinds, temporality, units, values', async () => {
  const rx = await new HttpCapture().start();
  try {
    const f = ini('otlp.ini', `[daemon]\nplugins = sim\nsinks = otlp, file\ncluster = alps\n[sim]\ngpus = 2\nseed = 7\n[otlp]\nendpoint = ${rx.url}/v1/metrics\nheaders = authorization=Bearer%20t0ken,x-scope-orgid=hpc\n[file]\npath = ${join(dir, 'otlp-twin.jsonl')}\n`);
    const r = await runCli(['daemon', '--once', '--config', f], { OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(rx.requests.length, 1, 'one export for one --once run');
    const req = rx.requests[0]!;
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/v1/metrics');
    assert.equal(req.headers['content-type'], 'application/x-protobuf');
    assert.equal(req.headers['content-encoding'], 'gzip');
    assert.equal(req.headers.authorization, 'Bearer t0ken');
    assert.equal(req.headers['x-scope-orgid'], 'hpc');
    assert.match(String(req.headers['user-agent']), /^l9gpu\/\d+\.\d+\.\d+$/);

    const msg = decodeOtlp(req.body);
    assert.equal(msg.resourceMetrics.length, 1);
    const rm = msg.resourceMetrics[0]!;
    const res = attrs(rm.resource.attributes);
    assert.equal(res['service.name'], 'l9gpu');
    assert.equal(res['cluster.name'], 'alps');
    assert.equal(res['deployment.environment'], 'test');
    assert.ok(res['host.name']);
    assert.equal(rm.scopeMetrics[0]!.scope.name, 'l9gpu');
    const metrics = new Map(rm.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.name, m]));

    const util = metrics.get('gpu.utilization')!;
    assert.equal(util.unit, '1');
    assert.ok(util.gauge && !util.sum, 'gpu.utilization is a gauge');
    assert.equal(util.gauge.dataPoints.length, 2);

    const energy = metrics.get('gpu.energy.consumption')!;
    assert.equal(energy.unit, 'J');
    assert.ok(energy.sum, 'energy is a sum');
    assert.equal(energy.sum.isMonotonic, true);
    assert.equal(energy.sum.aggregationTemporality, 2, 'AGGREGATION_TEMPORALITY_CUMULATIVE');
    for (const dp of energy.sum.dataPoints) assert.ok(BigInt(dp.startTimeUnixNano) > 0n && BigInt(dp.startTimeUnixNano) < BigInt(dp.timeUnixNano), 'a cumulative series has a start before its time');

    const rss = metrics.get('l9gpu.process.memory.rss')!;
    assert.equal(rss.unit, 'By');
    assert.equal(metrics.get('gpu.temperature')!.unit, 'Cel');
    assert.equal(metrics.get('gpu.power.draw')!.unit, 'W');
    assert.equal(metrics.get('gpu.clock.frequency')!.unit, 'MHz');
    assert.equal(metrics.get('gpu.pcie.throughput')!.unit, 'By/s');
    assert.equal(metrics.get('gpu.ecc.errors')!.sum!.isMonotonic, true);

    // every value equals what the file sink wrote for the same run
    const twin = parseLines(readFileSync(join(dir, 'otlp-twin.jsonl'), 'utf8'));
    let compared = 0;
    for (const p of twin) {
      const m = metrics.get(p.name);
      assert.ok(m, `${p.name} missing from the OTLP request`);
      const dps = (m.gauge ?? m.sum)!.dataPoints;
      const dp = dps.find((d) => JSON.stringify(attrs(d.attributes)) === JSON.stringify(p.attributes));
      assert.ok(dp, `${p.name} ${JSON.stringify(p.attributes)} missing`);
      assert.equal(dp.asDouble ?? 0, p.value, p.name);
      assert.equal(BigInt(dp.timeUnixNano) / 1_000_000n, BigInt(Date.parse(p.time)));
      compared++;
    }
    assert.equal(compared, [...metrics.values()].reduce((n, m) => n + (m.gauge ?? m.sum)!.dataPoints.length, 0), 'same number of points');
  } finally {
    await rx.stop();
  }
});

test('otlp: http/json protocol without compression', async () => {
  const rx = await new HttpCapture().start();
  try {
    const r = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'otlp'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'none',
    });
    assert.equal(r.status, 0, r.stderr);
    const req = rx.requests[0]!;
    assert.equal(req.url, '/v1/metrics', 'OTEL_EXPORTER_OTLP_ENDPOINT gets /v1/metrics appended');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers['content-encoding'], undefined);
    const body = JSON.parse(req.body.toString());
    const metrics = body.resourceMetrics[0].scopeMetrics[0].metrics as { name: string; unit: string; sum?: { isMonotonic: boolean } }[];
    assert.equal(metrics.find((m) => m.name === 'gpu.energy.consumption')!.sum!.isMonotonic, true);
    assert.equal(metrics.find((m) => m.name === 'gpu.power.draw')!.unit, 'W');
  } finally {
    await rx.stop();
  }
});

test('otlp: a 400 is not retried and its points are counted as dropped; a 503 is retried', async () => {
  const rx = await new HttpCapture().start();
  rx.status = (n) => (n === 1 ? 503 : 200);
  try {
    const out = join(dir, 'otlp-503.jsonl');
    const f = ini('otlp503.ini', `[daemon]\nplugins = sim\nsinks = otlp, file\n[sim]\ngpus = 1\n[otlp]\nendpoint = ${rx.url}/v1/metrics\n[file]\npath = ${out}\n`);
    const r = await runCli(['daemon', '--once', '--config', f]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(rx.requests.length, 2, 'retried after 503');
    assert.deepEqual(rx.requests[0]!.body, rx.requests[1]!.body, 'the same payload is resent');
    assert.match(r.stderr, /delivery failed: queueing and retrying with backoff reason="HTTP 503/);
    assert.match(r.stderr, /endpoint is back/);

    const rx2 = await new HttpCapture().start();
    rx2.status = 400;
    const r2 = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'otlp'], { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${rx2.url}/v1/metrics` });
    await rx2.stop();
    // every export failed: a cron job or a check must not read --once as a success
    assert.equal(r2.status, 1, r2.stderr);
    assert.match(r2.stderr, /nothing was delivered: every export failed sinks=otlp/);
    assert.equal(rx2.requests.length, 1, 'a 400 is final');
    assert.match(r2.stderr, /endpoint rejected data \(not retried\) reason="HTTP 400/);
  } finally {
    await rx.stop();
  }
});

test('webhook: JSON batches with a bearer token from a file, retried after a failure', async () => {
  const rx = await new HttpCapture().start();
  rx.status = (n) => (n === 1 ? 500 : 204);
  try {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 's3cret\n', { mode: 0o600 });
    const f = ini('webhook.ini', `[daemon]\nplugins = sim\nsinks = webhook\n[sim]\ngpus = 2\n[webhook]\nurl = ${rx.url}/ingest\ntoken_file = ${tokenFile}\nmax_batch_points = 20\n`);
    const r = await runCli(['daemon', '--once', '--config', f]);
    assert.equal(r.status, 0, r.stderr);
    const ok = rx.requests.slice(1);
    assert.ok(ok.length >= 3, 'the sim batch is split into requests of at most 20 points');
    let points = 0;
    for (const req of ok) {
      assert.equal(req.url, '/ingest');
      assert.equal(req.headers.authorization, 'Bearer s3cret');
      assert.equal(req.headers['content-type'], 'application/json');
      const body = JSON.parse(req.body.toString()) as { resource: Record<string, string>; points: { name: string; unit: string; kind: string; value: number; attributes: object; time: string }[] };
      assert.equal(body.resource['service.name'], 'l9gpu');
      assert.ok(body.points.length <= 20);
      for (const p of body.points) assert.deepEqual(Object.keys(p).filter((k) => k !== 'monotonic'), ['time', 'name', 'unit', 'kind', 'value', 'attributes']);
      points += body.points.length;
    }
    assert.deepEqual(rx.requests[0]!.body, rx.requests[1]!.body, 'the failed request is resent first');
    const sim = ok.flatMap((q) => JSON.parse(q.body.toString()).points).filter((p: { name: string }) => p.name.startsWith('gpu.'));
    assert.equal(sim.filter((p: { name: string }) => p.name === 'gpu.utilization').length, 2);
    assert.ok(points > 40);
  } finally {
    await rx.stop();
  }
});

test('file: JSON lines rotate by size and keep max_files', async () => {
  const path = join(dir, 'rot', 'metrics.jsonl');
  const f = ini('file.ini', `[daemon]\nplugins = sim\nsinks = file\n[sim]\ngpus = 8\n[file]\npath = ${path}\nmax_bytes = 64KiB\nmax_files = 2\nresource = false\n`);
  for (let i = 0; i < 6; i++) assert.equal((await runCli(['daemon', '--once', '--config', f])).status, 0);
  const files = readdirSync(join(dir, 'rot')).sort();
  assert.deepEqual(files, ['metrics.jsonl', 'metrics.jsonl.1', 'metrics.jsonl.2']);
  for (const name of files) {
    const text = readFileSync(join(dir, 'rot', name), 'utf8');
    assert.ok(Buffer.byteLength(text) <= 64 * 1024, `${name} is ${Buffer.byteLength(text)} bytes`);
    const pts = parseLines(text);
    assert.ok(pts.length > 0);
    assert.ok(pts.every((p) => p.resource === undefined), 'resource = false leaves it out');
  }
  assert.ok(!existsSync(join(dir, 'rot', 'metrics.jsonl.3')));
});

test('file: an unwritable path is counted and logged, the daemon still exits 0', async () => {
  const blocker = join(dir, 'not-a-dir');
  writeFileSync(blocker, 'x');
  const r = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'file,stdout'], {}, 60_000);
  assert.equal(r.status, 2, 'file without [file] path is a config error');
  const f = ini('badfile.ini', `[daemon]\nplugins = sim\nsinks = file, stdout\n[file]\npath = ${blocker}/m.jsonl\n`);
  const r2 = await runCli(['daemon', '--once', '--config', f]);
  assert.equal(r2.status, 0, r2.stderr);
  assert.match(r2.stderr, /sink could not start: retrying sink=file error="\S+\/not-a-dir exists and is not a folder"/);
  assert.ok(parseLines(r2.stdout).some((p) => p.name === 'gpu.utilization'), 'stdout still gets the data');
});

/** Batches with every registry metric, every attribute type, sums with and without their own start. */
function everyMetricBatches(): Batch[] {
  const t = 1_795_000_000_123.25;
  const points = METRICS.map((d, i) => ({
    metric: d,
    value: [0, 1, 0.5, -2.5, 1e21, 123456.789][i % 6]!,
    attributes: { 'gpu.uuid': `GPU-${i}`, 'gpu.index': i, 'x.neg': -7 - i, 'x.ratio': 0.25, 'x.flag': i % 2 === 0, 'x.text': 'a "quoted"\\ line\nnext', 'x.utf8': 'Grüße' },
    ...(d.kind === 'gauge' || i % 3 === 0 ? {} : { start: t - 60_000.5 }),
  }));
  return [
    { source: 'a', time: t, intervalMs: 10_000, points: points.slice(0, 30) },
    { source: 'b', time: t + 1.5, intervalMs: 10_000, points: points.slice(20) },
  ];
}

test('otlp: the protobuf encoder writes what the OpenTelemetry serializer writes, decoded by an independent decoder', async () => {
  const { ProtobufMetricsSerializer } = await import('@opentelemetry/otlp-transformer');
  const resource = { 'service.name': 'l9gpu', 'host.name': 'gpu001', 'cluster.name': 'alps', 'x.port': 9464 };
  // attribute values whose KeyValue, point and Metric outgrow the lengths the encoder reserves (127 B, 16 KiB)
  const long = everyMetricBatches().map((b) => ({
    ...b,
    points: b.points.map((p, i) => ({ ...p, attributes: { ...p.attributes, 'x.long': 'L'.repeat(i % 4 === 0 ? 100 + i * 7 : 3), ...(i === 5 ? { 'x.huge': 'H'.repeat(20_000) } : {}) } })),
  }));
  for (const batches of [everyMetricBatches(), [], long, everyMetricBatches()]) {
    const oursBytes = encodeMetricsRequest(batches, resource, 1_795_000_000_000, '1.2.3');
    const theirsBytes = ProtobufMetricsSerializer.serializeRequest(toResourceMetrics(batches, resource, 1_795_000_000_000, '1.2.3') as never)!;
    assert.deepEqual(decodeOtlp(oursBytes), decodeOtlp(theirsBytes));
    assert.ok(Buffer.from(theirsBytes).equals(oursBytes), 'byte for byte');
  }
  const one = decodeOtlp(encodeMetricsRequest(everyMetricBatches(), resource, 0, 'v'));
  assert.equal(one.resourceMetrics[0]!.scopeMetrics[0]!.metrics.length, METRICS.length, 'one Metric per registry metric');
});

test('otlp: a partial success response is read (rejected points and the message), unknown fields skipped', () => {
  // ExportMetricsServiceResponse { partial_success (1) { rejected_data_points (1) = 300; error_message (2) = "too old" } }, then field 9
  const msg = Buffer.from([0x0a, 0x0c, 0x08, 0xac, 0x02, 0x12, 0x07, ...Buffer.from('too old'), 0x48, 0x01]);
  assert.deepEqual(decodeExportResponse(msg), { rejected: 300, message: 'too old' });
  assert.deepEqual(decodeExportResponse(Buffer.alloc(0)), { rejected: 0 });
  assert.throws(() => decodeExportResponse(Buffer.from([0x0a, 0x05, 0x08])), /truncated/);
});

test('prometheus: the exposition is the OpenTelemetry serializer\'s, line for line, under the registry\'s Prometheus names', async () => {
  const { PrometheusSerializer } = await import('@opentelemetry/exporter-prometheus');
  const resource = { 'service.name': 'l9gpu', 'host.name': 'gpu001', 'cluster.name': 'alps' };
  for (const keep of [undefined, /^(cluster\.name|host\.name)$/]) {
    for (const batches of [everyMetricBatches(), []]) {
      const theirs = new PrometheusSerializer('', false, keep, false, true).serialize(toResourceMetrics(batches, resource, 0, 'v', prometheusName) as never);
      assert.equal(renderExposition(batches, resource, keep), theirs);
    }
  }
});
