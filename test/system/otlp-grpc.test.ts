/**
 * OTLP/gRPC ([otlp] protocol = grpc): the sink's requests as
 * MetricsService/Export calls to a grpc-js receiver built from the official
 * opentelemetry-proto definitions (test/helpers/otlp-grpc-receiver.ts), over
 * plaintext and over TLS with a private CA and client certificates made here
 * by openssl. The figures are held to what a real VictoriaMetrics stores of
 * the same batches sent over OTLP/HTTP; the status codes to the OTLP
 * specification's retry rules; the TLS failures to what they are, a
 * configuration problem naming the key that fixes it (in the log and in
 * doctor).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadAgentConfig } from '../../daemon/catalog.js';
import { simPlugin } from '../../plugins/sim/index.js';
import { BudgetLedger, DEFAULT_LIMITS } from '../../src/core/limits.js';
import { createLogger } from '../../src/core/log.js';
import { PointBuffer, type Batch } from '../../src/core/metrics/model.js';
import { VERSION } from '../../src/core/resource.js';
import type { Sink } from '../../src/core/sink.js';
import { createGrpcPoster, retryDelayMs, type GrpcPosterOptions } from '../../src/sinks/otlp-grpc.js';
import { otlpSink } from '../../src/sinks/otlp.js';
import { configFrom } from '../helpers/config.js';
import { DaemonProcess, runCli } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { attrs, type OtlpRequest } from '../helpers/otlp-decode.js';
import { OtlpGrpcReceiver, statusWithRetryInfo, type ReceiverTls } from '../helpers/otlp-grpc-receiver.js';
import { tempDir } from '../helpers/paths.js';
import { makePki } from '../helpers/certs.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

const dir = tempDir('l9gpu-grpc-');

const pki = makePki(dir);
const serverTls = (mtls: boolean): ReceiverTls => ({
  cert: readFileSync(pki.server),
  key: readFileSync(pki.serverKey),
  ...(mtls ? { clientCa: readFileSync(pki.ca) } : {}),
});

const TOKEN = 'grpc-t0ken-9f2c1a77e4';
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
const headersFile = join(dir, 'headers');
writeFileSync(headersFile, '# the tenant\nX-Scope-OrgID: tenant-7\n', { mode: 0o600 });

/** The receivers every test may use: plaintext, TLS, TLS requiring a client certificate of the private CA. */
const plain = new OtlpGrpcReceiver();
const tls = new OtlpGrpcReceiver();
const mtls = new OtlpGrpcReceiver();
before(async () => {
  await Promise.all([plain.start(), tls.start({ tls: serverTls(false) }), mtls.start({ tls: serverTls(true) })]);
});
after(async () => {
  await Promise.all([plain.stop(), tls.stop(), mtls.stop()]);
});
const reset = (...rs: OtlpGrpcReceiver[]): void => {
  for (const r of rs) {
    r.calls.length = 0;
    r.script = [];
  }
};

let configs = 0;
/** A Config as the daemon reads it, from an ini file written to the test's folder. */
function configOf(ini: string, env: NodeJS.ProcessEnv = {}): ReturnType<typeof loadAgentConfig> {
  const f = join(dir, `c${++configs}.ini`);
  writeFileSync(f, ini);
  return loadAgentConfig({ configPath: f, env });
}

const RESOURCE = { 'service.name': 'l9gpu', 'host.name': 'grpc-node' };
const T0 = Date.now() - 120_000;

/** An OTLP sink made and started as the daemon does; its log lines kept. */
async function startSink(ini: string, env: NodeJS.ProcessEnv = {}): Promise<{ sink: Sink; log: string[] }> {
  const log: string[] = [];
  const sink = otlpSink.create({
    config: configOf(ini, env),
    log: createLogger('info', (l) => log.push(l)),
    resource: RESOURCE,
    startTime: T0,
  });
  await sink.start?.();
  return { sink, log };
}

/** Batches of the sim plugin, `n` collections a minute apart, the last a minute ago. */
async function simBatches(gpus: number, n: number): Promise<Batch[]> {
  const p = await simPlugin.create({
    config: configFrom({ sim: { gpus: String(gpus) } }),
    log: createLogger('error', () => {}),
    hostName: 'grpc-node',
    limits: DEFAULT_LIMITS,
    budgets: new BudgetLedger(),
  });
  const out: Batch[] = [];
  for (let i = 0; i < n; i++) {
    const buf = new PointBuffer();
    await p.collect(buf, AbortSignal.timeout(5000));
    out.push({ source: 'sim', time: Math.floor(Date.now() / 1000) * 1000 - (n - i) * 60_000, intervalMs: 60_000, points: buf.points });
  }
  await p.close?.();
  return out;
}
const pointsOf = (bs: Batch[]): number => bs.reduce((n, b) => n + b.points.length, 0);

/** Every number data point of the requests as the series a Prometheus-like backend keys them by: name, attributes and resource as labels.
 * */
function seriesOf(reqs: OtlpRequest[]): Map<string, { values: number[]; timestamps: number[] }> {
  const out = new Map<string, { values: number[]; timestamps: number[] }>();
  for (const r of reqs) {
    for (const rm of r.resourceMetrics) {
      const res = attrs(rm.resource.attributes);
      for (const sm of rm.scopeMetrics) {
        for (const m of sm.metrics) {
          for (const dp of m.gauge?.dataPoints ?? m.sum?.dataPoints ?? []) {
            const key = labelKey({ __name__: m.name, ...stringify(attrs(dp.attributes)), ...stringify(res) });
            let s = out.get(key);
            if (!s) out.set(key, (s = { values: [], timestamps: [] }));
            s.values.push(dp.asDouble ?? Number(dp.asInt));
            s.timestamps.push(Number(BigInt(dp.timeUnixNano) / 1_000_000n));
          }
        }
      }
    }
  }
  return out;
}
const stringify = (a: Record<string, string | number | boolean>): Record<string, string> =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, String(v)]));
const labelKey = (l: Record<string, string>): string => JSON.stringify(Object.entries(l).sort(([a], [b]) => (a < b ? -1 : 1)));
const sorted = <T>(m: Map<string, T>): Record<string, T> => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)));

function posterOptions(url: string, extra: Partial<GrpcPosterOptions> = {}): GrpcPosterOptions {
  return {
    url,
    insecure: false,
    tls: { section: 'otlp', keys: { ca: 'certificate', cert: 'client_certificate', key: 'client_key' }, ca: null, cert: null, key: null },
    credentials: () => ({}),
    timeoutMs: 5000,
    gzip: false,
    tlsKeys: { ca: '[otlp] certificate', cert: '[otlp] client_certificate', endpoint: '[otlp] endpoint' },
    ...extra,
  };
}
const tlsFiles = (ca: string | null, cert: string | null = null, key: string | null = null): GrpcPosterOptions['tls'] => ({
  ...posterOptions('').tls,
  ca,
  cert,
  key,
});
const EMPTY_REQUEST = Buffer.alloc(0);

test(
  'the figures: batches sent over gRPC with TLS, a client certificate, a token and a header ' +
    'file, gzipped, decode to every series and value VictoriaMetrics stores of the same batches ' +
    'sent over http/protobuf',
  async () => {
    reset(mtls);
    const vm = await new VictoriaMetrics().start();
    try {
      const batches = await simBatches(3, 3);
      const points = pointsOf(batches);
      const overGrpc = await startSink(
        `[otlp]\nprotocol = grpc\nendpoint = ${mtls.url}\ncertificate = ${pki.ca}\nclient_certificate ` +
          `= ${pki.client}\nclient_key = ${pki.clientKey}\ntoken_file = ${tokenFile}\nheaders_file = ${headersFile}\ncompression ` +
          `= gzip\n`,
      );
      const overHttp = await startSink(`[otlp]\nprotocol = http/protobuf\nendpoint = ${vm.otlpEndpoint}\n`);
      for (const b of batches) {
        overGrpc.sink.write(b);
        overHttp.sink.write(b);
      }
      await Promise.all([overGrpc.sink.close(Date.now() + 15_000), overHttp.sink.close(Date.now() + 15_000)]);
      for (const [what, s] of [
        ['grpc', overGrpc],
        ['http', overHttp],
      ] as const) {
        assert.deepEqual(
          { exported: s.sink.stats.exported, errors: s.sink.stats.errors, dropped: s.sink.stats.dropped },
          { exported: points, errors: 0, dropped: 0 },
          `${what}: ${s.log.join('')}`,
        );
      }

      assert.equal(mtls.calls.length, 1, 'one Export call for the batches buffered');
      const call = mtls.calls[0]!;
      assert.deepEqual(call.metadata.authorization, [`Bearer ${TOKEN}`], 'the token file, as metadata');
      assert.deepEqual(call.metadata['x-scope-orgid'], ['tenant-7'], 'the headers file, its key lower-cased');
      assert.equal(call.encoding, 'gzip', 'the message came gzipped');
      assert.match(call.metadata['user-agent']?.[0] ?? '', new RegExp(`^l9gpu/${VERSION.replace(/\./g, '\\.')} grpc-node-js/`));

      const want = seriesOf(mtls.calls.map((c) => c.request!));
      assert.ok(want.size >= 3 * 10, `the sim plugin's series for 3 GPUs (${want.size})`);
      assert.ok(
        [...want.values()].every((s) => s.values.length === 3),
        'each series: a value per batch',
      );
      const stored = await waitFor('every series in VictoriaMetrics', async () => {
        await vm.flush();
        const r = await vm.exportRaw('{__name__=~".+"}');
        return r.length >= want.size && r.every((s) => s.values.length === 3) ? r : undefined;
      });
      const got = new Map(stored.map((s) => [labelKey(s.metric), { values: s.values, timestamps: s.timestamps }]));
      assert.deepEqual(sorted(got), sorted(want));
    } finally {
      await vm.stop();
    }
  },
);

test(
  'the poster: metadata lower-cased and asked at each call, the user agent, identity without ' + "gzip, the answer's bytes returned whole",
  async () => {
    reset(plain);
    let n = 0;
    const poster = createGrpcPoster(
      posterOptions(plain.url, { credentials: () => ({ Authorization: `Bearer ${TOKEN}`, 'X-Scope-OrgID': `t${++n}` }) }),
    );
    try {
      plain.script = [{ ok: true, rejected: 7, message: 'too old' }];
      const a = await poster.post(EMPTY_REQUEST, { 'content-type': 'application/x-protobuf' });
      const b = await poster.post(EMPTY_REQUEST, {});
      assert.ok(a.ok && b.ok, JSON.stringify([a, b]));
      // ExportMetricsServiceResponse { partial_success { rejected_data_points = 7, error_message = "too old" } }, as the receiver encoded
      // it
      assert.deepEqual(a.body, Buffer.from([0x0a, 0x0b, 0x08, 0x07, 0x12, 0x07, ...Buffer.from('too old')]));
      assert.equal(a.status, 0);
      assert.equal(b.body.length, 0);
      assert.deepEqual(
        plain.calls.map((c) => c.metadata['x-scope-orgid']),
        [['t1'], ['t2']],
      );
      assert.deepEqual(
        plain.calls.map((c) => c.encoding),
        ['identity', 'identity'],
      );
      assert.ok(plain.calls.every((c) => c.metadata['user-agent']?.[0]?.startsWith(`l9gpu/${VERSION} `)));
    } finally {
      poster.close();
    }
  },
);

test(
  'the poster: each status code retried or not as the OTLP specification says; RetryInfo read ' +
    'from grpc-status-details-bin; the reason names the status, credentials masked',
  async () => {
    reset(plain);
    const poster = createGrpcPoster(
      posterOptions(plain.url, { credentials: () => ({ authorization: `Bearer ${TOKEN}`, 'x-api-key': 'k3y-abcdef' }) }),
    );
    try {
      const S = grpc.status;
      const retryable = [S.CANCELLED, S.DEADLINE_EXCEEDED, S.ABORTED, S.OUT_OF_RANGE, S.UNAVAILABLE, S.DATA_LOSS];
      for (const code of Object.values(S).filter((c): c is grpc.status => typeof c === 'number' && c !== S.OK)) {
        plain.script = [{ code, details: `no: ${TOKEN} k3y-abcdef` }];
        const r = await poster.post(EMPTY_REQUEST, {});
        assert.ok(!r.ok);
        assert.equal(r.retryable, retryable.includes(code), `${S[code]}: ${r.reason}`);
        assert.equal(r.reason, `${S[code]}: no: *** ***`);
        assert.equal(r.retryAfterMs, undefined, S[code]);
        assert.equal(r.config, undefined, S[code]);
      }
      const cases: [grpc.status, number | undefined, Buffer | undefined, { retryable: boolean; retryAfterMs?: number }][] = [
        [S.RESOURCE_EXHAUSTED, 1000, undefined, { retryable: true, retryAfterMs: 1000 }],
        [S.RESOURCE_EXHAUSTED, 1250, undefined, { retryable: true, retryAfterMs: 1250 }],
        [S.RESOURCE_EXHAUSTED, 3_600_000, undefined, { retryable: true, retryAfterMs: 300_000 }],
        // a RetryInfo without a delay: the server will recover, when it does not say
        [S.RESOURCE_EXHAUSTED, 0, undefined, { retryable: true }],
        [S.UNAVAILABLE, 2500, undefined, { retryable: true, retryAfterMs: 2500 }],
        [S.INVALID_ARGUMENT, 1000, undefined, { retryable: false }],
        // garbage, a Status without details, a detail of another type, a truncated one: no RetryInfo
        [S.RESOURCE_EXHAUSTED, undefined, Buffer.from([0xff, 0xff, 0xff]), { retryable: false }],
        [S.RESOURCE_EXHAUSTED, undefined, Buffer.from([0x08, 0x08, 0x12, 0x02, 0x6e, 0x6f]), { retryable: false }],
        [S.RESOURCE_EXHAUSTED, undefined, Buffer.from([0x1a, 0x07, 0x0a, 0x01, 0x78, 0x12, 0x02, 0x0a, 0x00]), { retryable: false }],
        [S.RESOURCE_EXHAUSTED, undefined, statusWithRetryInfo(8, 'x', 1000).subarray(0, -2), { retryable: false }],
      ];
      for (const [code, retryDelay, statusDetails, want] of cases) {
        plain.script = [
          { code, ...(retryDelay !== undefined ? { retryDelayMs: retryDelay } : {}), ...(statusDetails ? { statusDetails } : {}) },
        ];
        const r = await poster.post(EMPTY_REQUEST, {});
        assert.ok(!r.ok);
        assert.deepEqual(
          { retryable: r.retryable, ...(r.retryAfterMs !== undefined ? { retryAfterMs: r.retryAfterMs } : {}) },
          want,
          `${S[code]} ${retryDelay} ${statusDetails?.toString('hex')}`,
        );
      }
      // the reader never throws, whatever the bytes
      for (let i = 0; i < 2000; i++) {
        const b = Buffer.from(Array.from({ length: i % 40 }, (_, j) => (i * 31 + j * 17) % 256));
        assert.doesNotThrow(() => retryDelayMs(b));
      }
      assert.equal(retryDelayMs('a string'), undefined);
    } finally {
      poster.close();
    }
  },
);

test('the poster: a call is given timeout ms (DEADLINE_EXCEEDED, retried), and gzip is said as grpc-encoding', async () => {
  reset(plain);
  const poster = createGrpcPoster(posterOptions(plain.url, { timeoutMs: 300, gzip: true }));
  try {
    plain.script = [{ ok: true, delayMs: 2000 }];
    const t0 = Date.now();
    const r = await poster.post(Buffer.from('x'.repeat(100)), {});
    assert.ok(!r.ok && r.retryable && r.reason.startsWith('DEADLINE_EXCEEDED'), JSON.stringify(r));
    assert.ok(Date.now() - t0 < 1500, `${Date.now() - t0} ms`);
    assert.equal(plain.calls[0]?.encoding, 'gzip');
  } finally {
    poster.close();
  }
});

test('the poster: each TLS failure is a configuration problem naming the key that fixes it; the data reaches nobody', async (t) => {
  reset(plain, tls, mtls);
  const cases: [string, GrpcPosterOptions, string | undefined][] = [
    ["a CA that did not sign the server's certificate", posterOptions(tls.url, { tls: tlsFiles(pki.ca2) }), '[otlp] certificate'],
    ["the system's CAs for a private one", posterOptions(tls.url), '[otlp] certificate'],
    ['no client certificate where one is required', posterOptions(mtls.url, { tls: tlsFiles(pki.ca) }), '[otlp] client_certificate'],
    [
      'a client certificate the server refuses',
      posterOptions(mtls.url, { tls: tlsFiles(pki.ca, pki.client2, pki.client2Key) }),
      '[otlp] client_certificate',
    ],
    ['TLS to a plaintext server', posterOptions(plain.url.replace('http:', 'https:'), { tls: tlsFiles(pki.ca) }), '[otlp] endpoint'],
    ['plaintext to a TLS server', posterOptions(tls.url.replace('https:', 'http:')), '[otlp] endpoint'],
    [
      'insecure: plaintext to a TLS server all the same',
      posterOptions(tls.url, { insecure: true, tls: tlsFiles(pki.ca) }),
      '[otlp] endpoint',
    ],
    ['nothing listening: an outage', posterOptions(`https://127.0.0.1:${await freePort()}`, { tls: tlsFiles(pki.ca) }), undefined],
  ];
  for (const [what, o, key] of cases) {
    const poster = createGrpcPoster(o);
    try {
      for (let i = 0; i < 2; i++) {
        const r = await poster.post(EMPTY_REQUEST, {});
        assert.ok(!r.ok && r.retryable, `${what}: ${JSON.stringify(r)}`);
        assert.equal(r.config, key, `${what}: ${r.reason}`);
        assert.match(r.reason, /^UNAVAILABLE: /, what);
        if (i === 0) t.diagnostic(`${what}: ${r.reason}`);
      }
    } finally {
      poster.close();
    }
  }
  assert.deepEqual([plain.calls.length, tls.calls.length, mtls.calls.length], [0, 0, 0]);
  // the same files the right way round: delivered
  for (const [url, o] of [
    [tls.url, { tls: tlsFiles(pki.ca) }],
    [mtls.url, { tls: tlsFiles(pki.ca, pki.client, pki.clientKey) }],
    [plain.url, {}],
  ] as const) {
    const poster = createGrpcPoster(posterOptions(url, o));
    try {
      const r = await poster.post(EMPTY_REQUEST, {});
      assert.ok(r.ok, `${url}: ${JSON.stringify(r)}`);
    } finally {
      poster.close();
    }
  }
  assert.deepEqual([plain.calls.length, tls.calls.length, mtls.calls.length], [1, 1, 1]);
});

test(
  'retries through the sink: UNAVAILABLE then OK is delivered after; RESOURCE_EXHAUSTED with ' +
    'a RetryInfo is sent again after its delay; without one, and INVALID_ARGUMENT, the points ' +
    'are dropped',
  async () => {
    const batches = await simBatches(2, 1);
    const points = pointsOf(batches);
    const ini = `[otlp]\nprotocol = grpc\nendpoint = ${plain.url}\nexport_interval = 50ms\n`;

    // the queue's first backoff is 1 s: a RetryInfo of 2.5 s is what spaces the tries, not the queue
    const tries = [
      { first: { code: grpc.status.UNAVAILABLE, details: 'restarting' }, gap: [900, 2000] },
      { first: { code: grpc.status.RESOURCE_EXHAUSTED, details: 'slow down', retryDelayMs: 1000 }, gap: [900, 2000] },
      { first: { code: grpc.status.RESOURCE_EXHAUSTED, details: 'slow down more', retryDelayMs: 2500 }, gap: [2400, 4000] },
    ];
    for (const { first, gap } of tries) {
      reset(plain);
      plain.script = [first];
      const { sink, log } = await startSink(ini);
      try {
        for (const b of batches) sink.write(b);
        await waitFor('delivered after the failure', () => sink.stats.exported === points, 10_000);
        assert.equal(plain.calls.length, 2, grpc.status[first.code]);
        const took = plain.calls[1]!.at - plain.calls[0]!.at;
        assert.ok(took >= gap[0]! && took < gap[1]!, `${grpc.status[first.code]} ${first.details}: tried again after ${took} ms`);
        assert.deepEqual(plain.calls[1]!.request, plain.calls[0]!.request, 'the same request again');
        assert.deepEqual(
          { exported: sink.stats.exported, dropped: sink.stats.dropped, errors: sink.stats.errors },
          { exported: points, dropped: 0, errors: 1 },
        );
        assert.match(
          log.join(''),
          new RegExp(`delivery failed: queueing and retrying with backoff reason="?${grpc.status[first.code]}: ${first.details}`),
        );
      } finally {
        await sink.close(Date.now() + 5000);
      }
    }

    for (const answer of [
      { code: grpc.status.RESOURCE_EXHAUSTED, details: 'over quota' },
      { code: grpc.status.INVALID_ARGUMENT, details: 'bad metric' },
    ]) {
      reset(plain);
      plain.script = [answer];
      const { sink, log } = await startSink(ini);
      try {
        for (const b of batches) sink.write(b);
        await waitFor('the points counted as dropped', () => sink.stats.dropped === points, 10_000);
        assert.deepEqual(
          { exported: sink.stats.exported, errors: sink.stats.errors, queued: sink.stats.queueBytes },
          { exported: 0, errors: 1, queued: 0 },
          grpc.status[answer.code],
        );
        assert.match(
          log.join(''),
          new RegExp(`endpoint rejected data \\(not retried\\) reason="?${grpc.status[answer.code]}: ${answer.details}`),
        );
        // a later batch is sent (and taken): the rejected one is not sent again with it
        for (const b of batches) sink.write(b);
        await waitFor('the next batch delivered', () => sink.stats.exported === points, 10_000);
        assert.deepEqual([plain.calls.length, plain.delivered.length], [2, 1]);
      } finally {
        await sink.close(Date.now() + 5000);
      }
    }
  },
);

test(
  'TLS misconfigured: no data delivered, the log says once that it is a configuration problem ' +
    'and names the key, the data stays in the queue',
  async () => {
    const batches = await simBatches(1, 1);
    const cases = [
      { what: "a CA that did not sign the receiver's certificate", rx: tls, ini: `certificate = ${pki.ca2}\n`, key: '[otlp] certificate' },
      {
        what: 'a client certificate required, none configured',
        rx: mtls,
        ini: `certificate = ${pki.ca}\n`,
        key: '[otlp] client_certificate',
      },
    ];
    for (const c of cases) {
      reset(c.rx);
      const { sink, log } = await startSink(`[otlp]\nprotocol = grpc\nendpoint = ${c.rx.url}\nexport_interval = 50ms\n${c.ini}`);
      try {
        for (const b of batches) sink.write(b);
        const line = await waitFor('the configuration problem said', () => log.find((l) => /configuration problem/.test(l)), 10_000);
        assert.match(
          line,
          new RegExp(
            `^\\S+ error \\[l9gpu\\] cannot deliver: a configuration problem, not an outage: fix ${c.key.replace(/[[\]]/g, '\\$&')} `,
          ),
          c.what,
        );
        // tried again (a flush tries at once): the same problem, not said again
        for (const b of batches) sink.write(b);
        await sink.flush(Date.now() + 500);
        assert.equal(log.filter((l) => /configuration problem|delivery failed/.test(l)).length, 1, `${c.what}: ${log.join('')}`);
        assert.ok(sink.stats.errors >= 2, `${c.what}: tried twice (${sink.stats.errors})`);
        assert.equal(c.rx.calls.length, 0, c.what);
        assert.deepEqual({ exported: sink.stats.exported, dropped: sink.stats.dropped }, { exported: 0, dropped: 0 }, c.what);
        assert.ok(sink.stats.queueBytes > 0, `${c.what}: the data waits in the queue`);
      } finally {
        await sink.close(Date.now() + 200);
      }
    }
  },
);

test(
  'doctor: an otlp gRPC endpoint whose certificate the CA does not verify, or that wants a ' +
    'client certificate, is a problem naming the key; the right files are ok',
  async () => {
    const state = join(dir, 'doctor-state');
    const ini = (name: string, url: string, extra: string): string => {
      const f = join(dir, `${name}.ini`);
      writeFileSync(
        f,
        `[daemon]\nplugins = sim\nsinks = otlp\nstate_dir = ${state}\nattribution = ` +
          `none\n[sim]\ngpus = 1\n[otlp]\nprotocol = grpc\nendpoint = ${url}\n${extra}`,
      );
      return f;
    };
    const cases = [
      {
        f: ini('doctor-ca', tls.url, `certificate = ${pki.ca2}\n`),
        status: 1,
        re: new RegExp(
          String.raw`^FAIL otlp\s+enabled .* - the server's certificate was not verified: unable to ` +
            String.raw`verify the first certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): fix \[otlp\] ` +
            String.raw`certificate$`,
        ),
      },
      {
        f: ini('doctor-cert', mtls.url, `certificate = ${pki.ca}\n`),
        status: 1,
        re: new RegExp(
          String.raw`^FAIL otlp\s+enabled .* - the server refused the client certificate: .*alert ` +
            String.raw`certificate required.*\(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED\): fix ` +
            String.raw`\[otlp\] client_certificate$`,
        ),
      },
      // a grpc-js server closes the connection on a client certificate it cannot verify, without an alert
      {
        f: ini(
          'doctor-refused',
          mtls.url,
          `certificate = ${pki.ca}\nclient_certificate = ${pki.client2}\nclient_key = ${pki.client2Key}\n`,
        ),
        status: 1,
        re: new RegExp(
          String.raw`^FAIL otlp\s+enabled .* - 127\.0\.0\.1:\d+ closed the connection right after the` +
            String.raw` TLS handshake: it did not take the client certificate: fix \[otlp\] ` +
            String.raw`client_certificate$`,
        ),
      },
      {
        f: ini('doctor-ok', mtls.url, `certificate = ${pki.ca}\nclient_certificate = ${pki.client}\nclient_key = ${pki.clientKey}\n`),
        status: 0,
        re: new RegExp(
          String.raw`^ok\s+otlp\s+enabled\s+grpc to https:\/\/127\.0\.0\.1:\d+ .* - 127\.0\.0\.1:\d+ ` +
            String.raw`accepts TLS \(TLSv1\.3\), its certificate verified, the client certificate ` +
            String.raw`taken$`,
        ),
      },
      // insecure: plaintext (h2c) to an https:// endpoint, as the sink sends: no handshake asked of it
      {
        f: ini('doctor-insecure', plain.url.replace('http:', 'https:'), 'insecure = true\n'),
        status: 0,
        re: /^ok\s+otlp\s+enabled\s+grpc to https:\/\/127\.0\.0\.1:\d+ .* - 127\.0\.0\.1:\d+ accepts connections$/,
      },
    ];
    for (const c of cases) {
      const r = await runCli(['doctor', '--config', c.f]);
      // the otlp sink's row, on one line (an OpenSSL message in it may hold a line break)
      const row =
        /^\s*(?:ok|FAIL)\s+otlp\s[\s\S]*?(?=\n\s+(?:ok|FAIL|-)\s+\w+\s+(?:enabled|disabled)\s)/m
          .exec(r.stdout)?.[0]
          .replace(/\s+/g, ' ')
          .trim() ?? '';
      assert.match(row, c.re, `${r.stdout}\n${r.stderr}`);
      assert.equal(r.status, c.status, r.stdout);
    }
  },
);

test(
  'the daemon delivers to the receiver with [otlp] protocol = grpc, and with ' + 'OTEL_EXPORTER_OTLP_PROTOCOL=grpc from the environment',
  async () => {
    const state = join(dir, 'daemon-state');
    for (const viaEnv of [false, true]) {
      reset(plain);
      const f = join(dir, `daemon-${viaEnv}.ini`);
      const otlp = viaEnv ? '' : `[otlp]\nprotocol = grpc\nendpoint = ${plain.url}\nexport_interval = 200ms\n`;
      writeFileSync(
        f,
        `[daemon]\nplugins = sim\nsinks = otlp\ninterval = 200ms\nstate_dir = ${state}\nattribution = none\n[sim]\ngpus = 2\n${otlp}`,
      );
      const env: Record<string, string> = viaEnv
        ? { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: plain.url, OTEL_EXPORTER_OTLP_COMPRESSION: 'none' }
        : {};
      const d = new DaemonProcess(['--config', f], env);
      try {
        const got = await waitFor(
          'gpu.utilization of both sim GPUs over gRPC',
          () => {
            const series = seriesOf(plain.delivered.map((c) => c.request!));
            const util = [...series.keys()].filter((k) => k.includes('"gpu.utilization"'));
            return util.length === 2 ? series : undefined;
          },
          20_000,
        ).catch((e: Error) => {
          throw new Error(`${e.message}; the daemon's stderr: ${d.stderr.slice(-3000)}`);
        });
        assert.ok(got.size > 10);
        assert.deepEqual([...new Set(plain.delivered.map((c) => c.encoding))], [viaEnv ? 'identity' : 'gzip']);
        assert.doesNotMatch(d.stderr, /delivery failed|rejected|error/, d.stderr);
      } finally {
        assert.equal(await d.stop(), 0, d.stderr);
      }
    }
  },
);
