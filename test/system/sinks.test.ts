import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseLines, runCli, ownStateDir } from '../helpers/daemon.js';
import { configFrom } from '../helpers/config.js';
import { cumulative, histogramDef, HISTOGRAM_SHAPES } from '../helpers/histograms.js';
import { HttpCapture } from '../helpers/http-capture.js';
import { attrs, decodeOtlp, type OtlpKeyValue, type OtlpMetric } from '../helpers/otlp-decode.js';
import { tempDir } from '../helpers/paths.js';
import { promtoolCheckMetrics } from '../helpers/prometheus.js';
import { createLogger } from '../../src/core/log.js';
import { stableAttributes, type Attributes, type Batch, type HistogramValue, type Point } from '../../src/core/metrics/model.js';
import { METRICS, metric, prometheusName } from '../../src/core/metrics/registry.js';
import type { Sink, SinkManifest } from '../../src/core/sink.js';
import { fileSink } from '../../src/sinks/file.js';
import { pointJson } from '../../src/sinks/jsonl.js';
import { otlpSink } from '../../src/sinks/otlp.js';
import { decodeExportResponse, encodeMetricsRequest } from '../../src/sinks/otlp-proto.js';
import { prometheusSink } from '../../src/sinks/prometheus.js';
import { renderExposition } from '../../src/sinks/prom-text.js';
import { toResourceMetrics } from '../../src/sinks/resource-metrics.js';
import { webhookSink } from '../../src/sinks/webhook.js';

// beside the other files of the system lane: state in a folder of this file's own, not the node's /var/lib/l9gpu
ownStateDir();

const dir = tempDir();

/** HistogramDataPoint as the independent decoder gives it (fixed64 as strings); otlp-decode.ts types gauges and sums only. */
interface OtlpHistogram {
  aggregationTemporality: number;
  dataPoints: {
    attributes?: OtlpKeyValue[];
    startTimeUnixNano: string;
    timeUnixNano: string;
    count?: string;
    sum?: number;
    bucketCounts?: string[];
    explicitBounds?: number[];
  }[];
}
const histogramOf = (m: OtlpMetric): OtlpHistogram | undefined => (m as OtlpMetric & { histogram?: OtlpHistogram }).histogram;

/** ms since the epoch -> the ns string OTLP carries. */
const ns = (ms: number): string => String(BigInt(Math.floor(ms)) * 1_000_000n + BigInt(Math.round((ms - Math.floor(ms)) * 1e6)));

/** Histogram metrics of the test's own: the sinks must carry any, whether or not the registry has one. */
const HISTOGRAMS = [
  histogramDef('test.request.duration', 's', ['test.model']),
  histogramDef('test.request.tokens', '{token}'),
  histogramDef('test.request.size', 'By'),
];

function ini(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

test('otlp: gzip protobuf with headers, decoded exactly: resource, scope, kinds, temporality, units, values', async () => {
  const rx = await new HttpCapture().start();
  try {
    const f = ini(
      'otlp.ini',
      `[daemon]\nplugins = sim\nsinks = otlp, file\ncluster = alps\n[sim]\ngpus = 2\nseed = ` +
        `7\n[otlp]\nendpoint = ${rx.url}/v1/metrics\nheaders = ` +
        `authorization=Bearer%20t0ken,x-scope-orgid=hpc\n[file]\npath = ${join(dir, 'otlp-twin.jsonl')}\n`,
    );
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
    for (const dp of energy.sum.dataPoints)
      assert.ok(
        BigInt(dp.startTimeUnixNano) > 0n && BigInt(dp.startTimeUnixNano) < BigInt(dp.timeUnixNano),
        'a cumulative series has a start before its time',
      );

    const rss = metrics.get('l9gpu.process.memory.rss')!;
    assert.equal(rss.unit, 'By');
    assert.equal(metrics.get('gpu.temperature')!.unit, 'Cel');
    assert.equal(metrics.get('gpu.power.draw')!.unit, 'W');
    assert.equal(metrics.get('gpu.clock.frequency')!.unit, 'Hz');
    assert.equal(metrics.get('gpu.pcie.throughput')!.unit, 'By/s');
    assert.equal(metrics.get('gpu.ecc.errors')!.sum!.isMonotonic, true);

    // every value equals what the file sink wrote for the same run
    const twin = parseLines(readFileSync(join(dir, 'otlp-twin.jsonl'), 'utf8'));
    let compared = 0;
    for (const p of twin) {
      const m = metrics.get(p.name);
      assert.ok(m, `${p.name} missing from the OTLP request`);
      const dps: { attributes?: OtlpKeyValue[]; timeUnixNano: string; asDouble?: number; count?: string }[] = (m.gauge ??
        m.sum ??
        histogramOf(m))!.dataPoints;
      const dp = dps.find((d) => JSON.stringify(attrs(d.attributes)) === JSON.stringify(p.attributes));
      assert.ok(dp, `${p.name} ${JSON.stringify(p.attributes)} missing`);
      assert.equal(dp.asDouble ?? Number(dp.count ?? 0), p.value, p.name);
      assert.equal(BigInt(dp.timeUnixNano) / 1_000_000n, BigInt(Date.parse(p.time)));
      compared++;
    }
    assert.equal(
      compared,
      [...metrics.values()].reduce((n, m) => n + (m.gauge ?? m.sum ?? histogramOf(m))!.dataPoints.length, 0),
      'same number of points',
    );
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
    const f = ini(
      'otlp503.ini',
      `[daemon]\nplugins = sim\nsinks = otlp, file\n[sim]\ngpus = 1\n[otlp]\nendpoint = ${rx.url}/v1/metrics\n[file]\npath = ${out}\n`,
    );
    const r = await runCli(['daemon', '--once', '--config', f]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(rx.requests.length, 2, 'retried after 503');
    assert.deepEqual(rx.requests[0]!.body, rx.requests[1]!.body, 'the same payload is resent');
    assert.match(r.stderr, /delivery failed: queueing and retrying with backoff reason="HTTP 503/);
    assert.match(r.stderr, /endpoint is back/);

    const rx2 = await new HttpCapture().start();
    rx2.status = 400;
    const r2 = await runCli(['daemon', '--once', '--plugin', 'sim', '--sink', 'otlp'], {
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${rx2.url}/v1/metrics`,
    });
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
    const f = ini(
      'webhook.ini',
      `[daemon]\nplugins = sim\nsinks = webhook\n[sim]\ngpus = 2\n[webhook]\nurl = ${rx.url}/ingest\ntoken_file ` +
        `= ${tokenFile}\nmax_batch_points = 20\n`,
    );
    const r = await runCli(['daemon', '--once', '--config', f]);
    assert.equal(r.status, 0, r.stderr);
    const ok = rx.requests.slice(1);
    assert.ok(ok.length >= 3, 'the sim batch is split into requests of at most 20 points');
    let points = 0;
    for (const req of ok) {
      assert.equal(req.url, '/ingest');
      assert.equal(req.headers.authorization, 'Bearer s3cret');
      assert.equal(req.headers['content-type'], 'application/json');
      const body = JSON.parse(req.body.toString()) as {
        resource: Record<string, string>;
        points: { name: string; unit: string; kind: string; value: number; attributes: object; time: string }[];
      };
      assert.equal(body.resource['service.name'], 'l9gpu');
      assert.ok(body.points.length <= 20);
      for (const p of body.points)
        assert.deepEqual(
          Object.keys(p).filter((k) => k !== 'monotonic'),
          ['time', 'name', 'unit', 'kind', 'value', 'attributes'],
        );
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
  const f = ini(
    'file.ini',
    `[daemon]\nplugins = sim\nsinks = file\n[sim]\ngpus = 8\n[file]\npath = ${path}\nmax_bytes = 96KiB\nmax_files = 2\nresource = false\n`,
  );
  for (let i = 0; i < 6; i++) assert.equal((await runCli(['daemon', '--once', '--config', f])).status, 0);
  const files = readdirSync(join(dir, 'rot')).sort();
  assert.deepEqual(files, ['metrics.jsonl', 'metrics.jsonl.1', 'metrics.jsonl.2']);
  for (const name of files) {
    const text = readFileSync(join(dir, 'rot', name), 'utf8');
    assert.ok(Buffer.byteLength(text) <= 96 * 1024, `${name} is ${Buffer.byteLength(text)} bytes`);
    const pts = parseLines(text);
    assert.ok(pts.length > 0);
    assert.ok(
      pts.every((p) => p.resource === undefined),
      'resource = false leaves it out',
    );
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
  assert.ok(
    parseLines(r2.stdout).some((p) => p.name === 'gpu.utilization'),
    'stdout still gets the data',
  );
});

/** Batches with every registry metric and the test's histograms, every attribute type, sums and histograms with and without their own
 * start.
 * */
function everyMetricBatches(): Batch[] {
  const t = 1_795_000_000_123.25;
  const points: Point[] = METRICS.map((d, i) => ({
    metric: d,
    value: [0, 1, 0.5, -2.5, 1e21, 123456.789][i % 6]!,
    attributes: {
      'gpu.uuid': `GPU-${i}`,
      'gpu.index': i,
      'x.neg': -7 - i,
      'x.ratio': 0.25,
      'x.flag': i % 2 === 0,
      'x.text': 'a "quoted"\\ line\nnext',
      'x.utf8': 'Grüße',
    },
    ...(d.kind === 'gauge' || i % 3 === 0 ? {} : { start: t - 60_000.5 }),
    // a registry histogram gets real buckets, like the test's own
    ...(d.kind === 'histogram'
      ? { hist: HISTOGRAM_SHAPES[i % HISTOGRAM_SHAPES.length]!, value: HISTOGRAM_SHAPES[i % HISTOGRAM_SHAPES.length]!.count }
      : {}),
  }));
  // every shape on every test histogram, spread over both batches: one Metric gathers points of two batches
  const hist: Point[] = HISTOGRAMS.flatMap((d, i) =>
    HISTOGRAM_SHAPES.map((h, j) => ({
      metric: d,
      value: h.count,
      hist: h,
      attributes: { 'test.model': `m${j}`, 'x.index': j, 'x.ratio': 0.5, 'x.flag': j % 2 === 0, 'x.text': 'a "quoted"\\ line\nnext' },
      ...((i + j) % 3 === 0 ? {} : { start: t - 30_000.25 - j }),
    })),
  );
  return [
    { source: 'a', time: t, intervalMs: 10_000, points: [...points.slice(0, 30), ...hist.filter((_, k) => k % 2 === 0)] },
    { source: 'b', time: t + 1.5, intervalMs: 10_000, points: [...points.slice(20), ...hist.filter((_, k) => k % 2 === 1)] },
  ];
}

test('otlp: the protobuf encoder writes what the OpenTelemetry serializer writes, decoded by an independent decoder', async () => {
  const { ProtobufMetricsSerializer } = await import('@opentelemetry/otlp-transformer');
  const resource = { 'service.name': 'l9gpu', 'host.name': 'gpu001', 'cluster.name': 'alps', 'x.port': 9464 };
  // attribute values whose KeyValue, point and Metric outgrow the lengths the encoder reserves (127 B, 16 KiB)
  const long = everyMetricBatches().map((b) => ({
    ...b,
    points: b.points.map((p, i) => ({
      ...p,
      attributes: {
        ...p.attributes,
        'x.long': 'L'.repeat(i % 4 === 0 ? 100 + i * 7 : 3),
        ...(i === 5 ? { 'x.huge': 'H'.repeat(20_000) } : {}),
      },
    })),
  }));
  for (const batches of [everyMetricBatches(), [], long, everyMetricBatches()]) {
    const oursBytes = encodeMetricsRequest(batches, resource, 1_795_000_000_000, '1.2.3');
    const theirsBytes = ProtobufMetricsSerializer.serializeRequest(
      toResourceMetrics(batches, resource, 1_795_000_000_000, '1.2.3') as never,
    )!;
    assert.deepEqual(decodeOtlp(oursBytes), decodeOtlp(theirsBytes));
    assert.ok(Buffer.from(theirsBytes).equals(oursBytes), 'byte for byte');
  }
  const one = decodeOtlp(encodeMetricsRequest(everyMetricBatches(), resource, 0, 'v'));
  assert.equal(one.resourceMetrics[0]!.scopeMetrics[0]!.metrics.length, METRICS.length + HISTOGRAMS.length, 'one Metric per metric');
});

test(
  'otlp: a histogram is Metric.histogram, cumulative, with the count, sum, per-bucket counts, ' +
    'bounds, start, time and attributes sent (independent decoder)',
  () => {
    const batches = everyMetricBatches();
    const defaultStart = 1_794_999_000_000.5;
    const msg = decodeOtlp(encodeMetricsRequest(batches, { 'service.name': 'l9gpu' }, defaultStart, 'v'));
    const metrics = new Map(msg.resourceMetrics[0]!.scopeMetrics[0]!.metrics.map((m) => [m.name, m]));
    let checked = 0;
    for (const b of batches) {
      for (const p of b.points) {
        if (!HISTOGRAMS.includes(p.metric)) continue;
        const m = metrics.get(p.metric.name)!;
        const h = histogramOf(m);
        assert.ok(h && !m.gauge && !m.sum, `${p.metric.name} is a histogram and nothing else`);
        assert.equal(m.unit, p.metric.unit);
        assert.equal(h.aggregationTemporality, 2, 'AGGREGATION_TEMPORALITY_CUMULATIVE');
        const dp = h.dataPoints.find((d) => JSON.stringify(attrs(d.attributes)) === JSON.stringify(p.attributes));
        assert.ok(dp, `${p.metric.name} ${JSON.stringify(p.attributes)} missing`);
        const want = p.hist!;
        assert.equal(dp.count, String(want.count));
        assert.equal(dp.sum, want.sum);
        assert.deepEqual(dp.bucketCounts, want.counts.map(String), 'per-bucket, not cumulative');
        assert.deepEqual(dp.explicitBounds, want.bounds);
        assert.equal(dp.startTimeUnixNano, ns(p.start ?? defaultStart));
        assert.equal(dp.timeUnixNano, ns(b.time));
        checked++;
      }
    }
    assert.equal(checked, HISTOGRAMS.length * HISTOGRAM_SHAPES.length);
  },
);

/** Starts a sink as the daemon does, on a configuration given inline. */
async function startSink(
  manifest: SinkManifest,
  values: Record<string, Record<string, string>>,
  resource: Attributes = { 'service.name': 'l9gpu' },
): Promise<Sink> {
  const sink = manifest.create({ config: configFrom(values), log: createLogger('error'), resource, startTime: 1_794_999_000_000 });
  await sink.start?.();
  return sink;
}

/** A batch of every test histogram in every shape, plus a gauge. */
function histogramBatch(time: number, extra: Attributes = {}): Batch {
  const points: Point[] = HISTOGRAMS.flatMap((d) =>
    HISTOGRAM_SHAPES.map((h, j) => ({ metric: d, value: h.count, hist: h, attributes: { 'test.model': `m${j}`, ...extra } })),
  );
  points.push({ metric: metric('gpu.utilization'), value: 0.5, attributes: { 'gpu.uuid': 'GPU-1', ...extra } });
  return { source: 'h', time, intervalMs: 60_000, points };
}

/** The histogram the batch sent for a metric name and attributes. */
function sentHistogram(batch: Batch, name: string, a: Record<string, unknown>): HistogramValue | undefined {
  return batch.points.find((p) => p.metric.name === name && JSON.stringify(p.attributes) === JSON.stringify(a))?.hist;
}

test('otlp sink: histograms reach the endpoint whole over http/protobuf and http/json', async () => {
  const batch = histogramBatch(Date.now());
  for (const protocol of ['http/protobuf', 'http/json']) {
    const rx = await new HttpCapture().start();
    try {
      const sink = await startSink(otlpSink, { otlp: { endpoint: `${rx.url}/v1/metrics`, protocol } });
      sink.write(batch);
      await sink.close(Date.now() + 10_000);
      assert.equal(rx.requests.length, 1, protocol);
      assert.equal(sink.stats.exported, batch.points.length, protocol);
      const body = rx.requests[0]!.body;
      const msg = (protocol === 'http/json' ? JSON.parse(body.toString()) : decodeOtlp(body)) as {
        resourceMetrics: {
          scopeMetrics: {
            metrics: (OtlpMetric & { histogram?: { aggregationTemporality: number; dataPoints: Record<string, unknown>[] } })[];
          }[];
        }[];
      };
      const metrics = msg.resourceMetrics[0]!.scopeMetrics[0]!.metrics;
      let seen = 0;
      for (const m of metrics.filter((x) => x.histogram)) {
        assert.equal(m.histogram!.aggregationTemporality, 2);
        for (const dp of m.histogram!.dataPoints) {
          const want = sentHistogram(batch, m.name, attrs(dp.attributes as OtlpKeyValue[]));
          assert.ok(want, `${protocol}: ${m.name} ${JSON.stringify(dp.attributes)} was not sent`);
          // protobuf's fixed64 decode as strings, JSON's as numbers
          assert.deepEqual(
            { count: String(dp.count), sum: dp.sum, counts: (dp.bucketCounts as unknown[]).map(String), bounds: dp.explicitBounds ?? [] },
            { count: String(want.count), sum: want.sum, counts: want.counts.map(String), bounds: want.bounds },
            `${protocol}: ${m.name}`,
          );
          seen++;
        }
      }
      assert.equal(seen, HISTOGRAMS.length * HISTOGRAM_SHAPES.length, protocol);
      assert.ok(metrics.find((m) => m.name === 'gpu.utilization')?.gauge, 'the gauge beside them is still a gauge');
    } finally {
      await rx.stop();
    }
  }
});

test(
  "a histogram metric's point without buckets (a plugin's mistake) is left out by every " + 'encoder; the rest of the batch goes on',
  async () => {
    const { ProtobufMetricsSerializer } = await import('@opentelemetry/otlp-transformer');
    const { PrometheusSerializer } = await import('@opentelemetry/exporter-prometheus');
    const bare = histogramDef('test.bare', 's');
    const batches: Batch[] = [
      {
        source: 'x',
        time: 1_795_000_000_000,
        intervalMs: 10_000,
        points: [
          { metric: bare, value: 3, attributes: { a: 1 } },
          { metric: metric('gpu.utilization'), value: 0.5, attributes: { a: 1 } },
          { metric: HISTOGRAMS[0]!, value: 5, hist: HISTOGRAM_SHAPES[2]!, attributes: { a: 1 } },
        ],
      },
    ];
    const resource = { 'service.name': 'l9gpu' };
    const ours = encodeMetricsRequest(batches, resource, 0, 'v');
    assert.deepEqual(
      decodeOtlp(ours).resourceMetrics[0]!.scopeMetrics[0]!.metrics.map((m) => m.name),
      ['gpu.utilization', 'test.request.duration'],
    );
    assert.ok(
      Buffer.from(ProtobufMetricsSerializer.serializeRequest(toResourceMetrics(batches, resource, 0, 'v') as never)!).equals(ours),
      'resource-metrics.ts leaves it out too',
    );
    const text = renderExposition(batches, resource);
    assert.doesNotMatch(text, /test_bare/);
    assert.match(text, /^gpu_utilization_ratio\{a="1"\} 0\.5$/m);
    assert.equal(
      text,
      new PrometheusSerializer('', false, undefined, false, true).serialize(
        toResourceMetrics(batches, resource, 0, 'v', prometheusName) as never,
      ),
    );
    assert.deepEqual(
      pointJson(batches[0]!, undefined).map((l) => JSON.parse(l).name),
      ['gpu.utilization', 'test.request.duration'],
    );
  },
);

test('otlp: a partial success response is read (rejected points and the message), unknown fields skipped', () => {
  // ExportMetricsServiceResponse { partial_success (1) { rejected_data_points (1) = 300; error_message (2) = "too old" } }, then field 9
  const msg = Buffer.from([0x0a, 0x0c, 0x08, 0xac, 0x02, 0x12, 0x07, ...Buffer.from('too old'), 0x48, 0x01]);
  assert.deepEqual(decodeExportResponse(msg), { rejected: 300, message: 'too old' });
  assert.deepEqual(decodeExportResponse(Buffer.alloc(0)), { rejected: 0 });
  assert.throws(() => decodeExportResponse(Buffer.from([0x0a, 0x05, 0x08])), /truncated/);
});

test("prometheus: the exposition is the OpenTelemetry serializer's, line for line, under the registry's Prometheus names", async () => {
  const { PrometheusSerializer } = await import('@opentelemetry/exporter-prometheus');
  const resource = { 'service.name': 'l9gpu', 'host.name': 'gpu001', 'cluster.name': 'alps' };
  for (const keep of [undefined, /^(cluster\.name|host\.name)$/]) {
    for (const batches of [everyMetricBatches(), []]) {
      const theirs = new PrometheusSerializer('', false, keep, false, true).serialize(
        toResourceMetrics(batches, resource, 0, 'v', prometheusName) as never,
      );
      assert.equal(renderExposition(batches, resource, keep), theirs);
    }
  }
});

test(
  'prometheus: a histogram is _count, _sum and cumulative _bucket lines ending in +Inf, TYPE ' +
    'histogram, its name with the unit and no _total',
  () => {
    const batch: Batch = {
      source: 'x',
      time: 1_795_000_000_000,
      intervalMs: 10_000,
      points: [{ metric: HISTOGRAMS[0]!, value: 17, hist: HISTOGRAM_SHAPES[0]!, attributes: { 'test.model': 'm1' } }],
    };
    const text = renderExposition([batch], { 'service.name': 'l9gpu', 'cluster.name': 'alps' }, /^cluster\.name$/);
    const series = 'test_request_duration_seconds';
    const labels = 'test_model="m1",cluster_name="alps"';
    assert.equal(
      text.slice(text.indexOf(`# HELP ${series}`)),
      [
        `# HELP ${series} Test histogram (s).`,
        `# UNIT ${series} s`,
        `# TYPE ${series} histogram`,
        `${series}_count{${labels}} 17`,
        `${series}_sum{${labels}} 61.25`,
        `${series}_bucket{${labels},le="0.005"} 3`,
        `${series}_bucket{${labels},le="0.01"} 3`,
        `${series}_bucket{${labels},le="0.1"} 10`,
        `${series}_bucket{${labels},le="1"} 12`,
        `${series}_bucket{${labels},le="2.5"} 12`,
        `${series}_bucket{${labels},le="10"} 13`,
        `${series}_bucket{${labels},le="+Inf"} 17`,
        '',
      ].join('\n'),
    );
    assert.deepEqual(HISTOGRAMS.map(prometheusName), ['test_request_duration_seconds', 'test_request_tokens', 'test_request_size_bytes']);
  },
);

test(
  "prometheus sink: the pull page's histograms pass promtool, and reading the page back gives " + 'every bucket, sum and count sent',
  async () => {
    const sink = (await startSink(prometheusSink, { prometheus: { host: '127.0.0.1', port: '0' } })) as Sink & { port: number };
    try {
      const batch = histogramBatch(Date.now());
      sink.write(batch);
      const text = await (await fetch(`http://127.0.0.1:${sink.port}/metrics`)).text();
      const lint = promtoolCheckMetrics(text);
      assert.equal(lint.status, 0, lint.output);
      assert.equal(lint.output.trim(), '', 'no finding');
      // name{labels} value -> per series (labels without le): count, sum, [le, value]...
      const read = new Map<string, { count?: number; sum?: number; buckets: [string, number][] }>();
      for (const m of text.matchAll(/^(test_\w+?)_(count|sum|bucket)\{test_model="(m\d)"(?:,le="([^"]+)")?\} (\S+)$/gm)) {
        const key = `${m[1]} ${m[3]}`;
        let r = read.get(key);
        if (!r) read.set(key, (r = { buckets: [] }));
        if (m[2] === 'bucket') r.buckets.push([m[4]!, Number(m[5])]);
        else r[m[2] as 'count' | 'sum'] = Number(m[5]);
      }
      assert.equal(read.size, HISTOGRAMS.length * HISTOGRAM_SHAPES.length);
      for (const d of HISTOGRAMS) {
        HISTOGRAM_SHAPES.forEach((h, j) => {
          assert.deepEqual(
            read.get(`${prometheusName(d)} m${j}`),
            { count: h.count, sum: h.sum, buckets: [...h.bounds.map(String), '+Inf'].map((le, i) => [le, cumulative(h)[i]]) },
            `${d.name} m${j}`,
          );
        });
      }
    } finally {
      await sink.close(Date.now() + 5000);
    }
  },
);

test(
  "prometheus sink: exported counts each batch's points once, on the first GET that serves " +
    'them; HEAD, and later scrapes of the same points, add nothing',
  async () => {
    const sink = (await startSink(prometheusSink, { prometheus: { host: '127.0.0.1', port: '0' } })) as Sink & { port: number };
    const url = `http://127.0.0.1:${sink.port}/metrics`;
    try {
      const first = histogramBatch(Date.now());
      sink.write(first);
      const head = await fetch(url, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(sink.stats.exported, 0, 'a HEAD exports nothing');
      for (let i = 0; i < 3; i++) assert.equal((await fetch(url)).status, 200);
      assert.equal(sink.stats.exported, first.points.length, 'three scrapes of one batch: its points once');
      // a batch replaced before any scrape was never exported; its successor is, once
      sink.write(histogramBatch(Date.now()));
      const latest = { ...histogramBatch(Date.now()), points: histogramBatch(Date.now()).points.slice(0, 3) };
      sink.write(latest);
      await fetch(url);
      await fetch(url, { method: 'HEAD' });
      await fetch(url);
      assert.equal(sink.stats.exported, first.points.length + 3);
    } finally {
      await sink.close(Date.now() + 5000);
    }
  },
);

test(
  'JSON lines: a histogram has kind histogram, its count as value, then sum, bounds and ' +
    "per-bucket counts; a gauge's line is unchanged",
  () => {
    const batch = histogramBatch(1_795_000_000_000);
    const lines = pointJson(batch, { 'service.name': 'l9gpu' }).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, batch.points.length);
    for (const l of lines) {
      if (l.name === 'gpu.utilization') {
        assert.deepEqual(Object.keys(l), ['time', 'name', 'unit', 'kind', 'value', 'attributes', 'resource']);
        continue;
      }
      assert.deepEqual(Object.keys(l), ['time', 'name', 'unit', 'kind', 'value', 'sum', 'bounds', 'counts', 'attributes', 'resource']);
      const h = sentHistogram(batch, l.name as string, l.attributes as Record<string, unknown>)!;
      assert.deepEqual(
        { kind: l.kind, value: l.value, sum: l.sum, bounds: l.bounds, counts: l.counts },
        { kind: 'histogram', value: h.count, sum: h.sum, bounds: h.bounds, counts: h.counts },
      );
    }
  },
);

test('file sink: histogram lines survive rotation whole; webhook: split batches carry them whole', async () => {
  const path = join(dir, 'hist', 'metrics.jsonl');
  const file = await startSink(fileSink, { file: { path, max_bytes: '4096', max_files: '100', resource: 'false' } });
  const sent = Array.from({ length: 30 }, (_, i) => histogramBatch(1_795_000_000_000 + i * 1000, { 'x.tick': i }));
  for (const b of sent) file.write(b);
  await file.close(Date.now() + 5000);
  const files = readdirSync(join(dir, 'hist'));
  assert.ok(files.length > 3, `rotated into ${files.length} files`);
  let lines = 0;
  for (const f of files) {
    const text = readFileSync(join(dir, 'hist', f), 'utf8');
    assert.ok(Buffer.byteLength(text) <= 4096, `${f} is ${Buffer.byteLength(text)} bytes`);
    for (const l of text
      .split('\n')
      .filter(Boolean)
      .map((x) => JSON.parse(x) as Record<string, unknown> & { attributes: Record<string, number> })) {
      lines++;
      if (l.kind !== 'histogram') continue;
      const h = sentHistogram(sent[l.attributes['x.tick']!]!, l.name as string, l.attributes)!;
      assert.deepEqual([l.value, l.sum, l.bounds, l.counts], [h.count, h.sum, h.bounds, h.counts]);
    }
  }
  assert.equal(lines, sent.length * sent[0]!.points.length, 'every point of every batch, once');
  assert.equal(file.stats.exported, lines);

  const rx = await new HttpCapture().start();
  try {
    const hook = await startSink(webhookSink, { webhook: { url: `${rx.url}/in`, max_batch_points: '5' } });
    const batch = histogramBatch(1_795_000_000_000);
    hook.write(batch);
    await hook.close(Date.now() + 10_000);
    assert.equal(rx.requests.length, Math.ceil(batch.points.length / 5));
    const got = rx.requests.flatMap((r) => (JSON.parse(r.body.toString()) as { points: Record<string, unknown>[] }).points);
    assert.equal(hook.stats.exported, batch.points.length);
    assert.deepEqual(
      got,
      pointJson(batch, undefined).map((l) => JSON.parse(l)),
      'the stdout objects, in order, none lost at a split',
    );
    const hists = got.filter((p) => p.kind === 'histogram');
    assert.equal(hists.length, HISTOGRAMS.length * HISTOGRAM_SHAPES.length);
    for (const l of hists) {
      const h = sentHistogram(batch, l.name as string, l.attributes as Record<string, unknown>)!;
      assert.deepEqual([l.value, l.sum, l.bounds, l.counts], [h.count, h.sum, h.bounds, h.counts]);
    }
  } finally {
    await rx.stop();
  }
});

/** Attributes that count how often their keys are listed (what rendering or encoding them does), and the count. */
function counting(): { attrs: (a: Attributes) => Attributes; listed: () => number } {
  let n = 0;
  return {
    attrs: (a) =>
      new Proxy(a, {
        ownKeys(t) {
          n++;
          return Reflect.ownKeys(t);
        },
      }),
    listed: () => n,
  };
}

test(
  'prometheus sink: a batch is rendered once, not at every scrape; the label sets of stable ' +
    "attributes are made once; the page is renderExposition's",
  async () => {
    const sink = (await startSink(prometheusSink, { prometheus: { host: '127.0.0.1', port: '0' } })) as Sink & { port: number };
    const url = `http://127.0.0.1:${sink.port}/metrics`;
    try {
      const c = counting();
      const engine = Array.from({ length: 50 }, (_, i) =>
        stableAttributes(c.attrs({ 'server.port': 8000, 'gen_ai.request.model': `m${i}`, 'x.text': 'a "quoted"\\ line\nnext' })),
      );
      const gpus = Array.from({ length: 5 }, (_, i) => c.attrs({ 'gpu.uuid': `GPU-${i}` }));
      const t = Date.now();
      const batches = (v: number): Batch[] => [
        {
          source: 'vllm',
          time: t + v,
          intervalMs: 60_000,
          points: engine.map((attributes, i) => ({ metric: metric('vllm.requests.running'), value: i + v, attributes })),
        },
        {
          source: 'nvml',
          time: t + v,
          intervalMs: 60_000,
          points: gpus.map((attributes) => ({ metric: metric('gpu.utilization'), value: v / 10, attributes })),
        },
      ];
      // (freezing stable attributes lists their keys too)
      const made = c.listed();
      for (const b of batches(1)) sink.write(b);
      const first = await (await fetch(url)).text();
      const rendered = c.listed();
      assert.equal(rendered - made, 55, 'each point rendered once');
      for (let i = 0; i < 5; i++) assert.equal(await (await fetch(url)).text(), first);
      assert.equal(c.listed(), rendered, 'scrapes between two batches render nothing');
      for (const b of batches(2)) sink.write(b);
      const second = await (await fetch(url)).text();
      assert.equal(c.listed(), rendered + 5, 'the next batches: their points rendered again, the stable label sets not made again');
      const plain = (bs: Batch[]): Batch[] =>
        bs.map((b) => ({ ...b, points: b.points.map((p) => ({ ...p, attributes: { ...p.attributes } })) }));
      assert.equal(first, renderExposition(plain(batches(1)), { 'service.name': 'l9gpu' }));
      assert.equal(second, renderExposition(plain(batches(2)), { 'service.name': 'l9gpu' }));
    } finally {
      await sink.close(Date.now() + 5000);
    }
  },
);

test('prometheus sink: a response still being written keeps its page while newer pages are put together', async () => {
  const sink = (await startSink(prometheusSink, { prometheus: { host: '127.0.0.1', port: '0' } })) as Sink & { port: number };
  try {
    // a page of ~8 MB: more than the socket buffers hold for a reader that does not read
    const big = (v: number): Batch => ({
      source: 'x',
      time: Date.now(),
      intervalMs: 60_000,
      points: Array.from({ length: 100_000 }, (_, i) => ({
        metric: metric('gpu.utilization'),
        value: v,
        attributes: { 'gpu.uuid': `GPU-${String(i).padStart(40, '0')}` },
      })),
    });
    const a = big(0.25);
    sink.write(a);
    const slow = connect(sink.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const ended = new Promise((r) => slow.once('end', r));
    // it stops reading at its first bytes
    const started = new Promise((r) => slow.once('data', () => r(slow.pause())));
    slow.on('data', (d: Buffer) => chunks.push(d));
    slow.write('GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await started;
    // while it is still being sent, two newer pages are put together and served
    for (const v of [0.5, 0.75]) {
      sink.write(big(v));
      const text = await (await fetch(`http://127.0.0.1:${sink.port}/metrics`)).text();
      assert.ok(text.includes(`gpu_utilization_ratio{gpu_uuid="GPU-${'0'.repeat(40)}"} ${v}\n`), `page of ${v}`);
    }
    slow.resume();
    await ended;
    const raw = Buffer.concat(chunks).toString('utf8');
    const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
    assert.equal(body, renderExposition([a], { 'service.name': 'l9gpu' }), 'the slow reader got its page whole, not the later ones');
  } finally {
    await sink.close(Date.now() + 5000);
  }
});

test("otlp: stable attributes are encoded once and then copied; a request's bytes are its own (the writer is used again)", async () => {
  const { ProtobufMetricsSerializer } = await import('@opentelemetry/otlp-transformer');
  const resource = { 'service.name': 'l9gpu' };
  const c = counting();
  const stableBatches = everyMetricBatches().map((b) => ({
    ...b,
    points: b.points.map((p) => ({ ...p, attributes: stableAttributes(c.attrs({ ...p.attributes })) })),
  }));
  const first = encodeMetricsRequest(stableBatches, resource, 1_795_000_000_000, 'v');
  const listed = c.listed();
  const second = encodeMetricsRequest(stableBatches, resource, 1_795_000_000_000, 'v');
  assert.equal(c.listed(), listed, 'the second request lists no stable attributes again');
  const theirs = Buffer.from(
    ProtobufMetricsSerializer.serializeRequest(toResourceMetrics(everyMetricBatches(), resource, 1_795_000_000_000, 'v') as never)!,
  );
  assert.ok(first.equals(theirs), "byte for byte the serializer's");
  assert.ok(second.equals(theirs), 'and again from the kept attributes');
  // the first request's bytes are not written over by the ones after it
  encodeMetricsRequest([histogramBatch(1_795_000_000_000)], resource, 0, 'v');
  assert.ok(first.equals(theirs), "a request's buffer is its own");
});
