/**
 * SGLang's /metrics as it is really served: prometheus_client's make_asgi_app
 * picks the page from the Accept header (choose_encoder), and under
 * `escaping=underscores` (what an OpenMetrics Accept without `escaping=` gets
 * from 0.23 on) renames the samples of colon names and not their # TYPE lines.
 * The pages were written by the real library (plugins/sglang/testdata/
 * prometheus-client-0.25.0-negotiated, record.py); the server negotiates as
 * the library does (test/helpers/prometheus-client.ts, held here to the
 * library's own answers). The scraper must get the colon names, and a page
 * that declares the engine's families with no sample of them is never silent.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { pluginContext } from '../../src/core/plugin.js';
import { PointBuffer, type Point } from '../../src/core/metrics/model.js';
import { ScrapedPlugin } from '../../src/scrape/engine-plugin.js';
import { goldenPagePoints } from '../../src/scrape/golden.js';
import { SGLANG_TABLE, sglangPlugin } from '../../plugins/sglang/index.js';
import { VLLM_TABLE } from '../../plugins/vllm/index.js';
import { chooseEncoder, recordedAnswer, servePrometheusClient } from '../helpers/prometheus-client.js';
import { configFrom } from '../helpers/config.js';
import { ROOT } from '../helpers/paths.js';

const CASE = join(ROOT, 'plugins', 'sglang', 'testdata', 'prometheus-client-0.25.0-negotiated');
const NEGOTIATION = JSON.parse(readFileSync(join(CASE, 'negotiation.json'), 'utf8')) as {
  accept: string;
  contentType: string;
  page: string;
}[];

/** A point without what differs between endpoints and scrapes (the port, the listening process, the start). */
const show = (p: Point): string => {
  const a = Object.fromEntries(Object.entries(p.attributes).filter(([k]) => k !== 'server.port' && !k.startsWith('process.')));
  return `${p.metric.name} ${JSON.stringify(a)} ${p.value}${p.hist ? ` ${JSON.stringify(p.hist)}` : ''}`;
};
const engineOnly = (ps: Point[]) =>
  ps
    .filter((p) => !p.metric.name.startsWith('l9gpu.'))
    .map(show)
    .sort();
const selfValue = (ps: Point[], name: string) => ps.find((p) => p.metric.name === name)?.value;

/** Scrapes the server n times with the SGLang plugin; the points of the last scrape and the log lines. */
async function scrape(url: string, n = 1, table = SGLANG_TABLE): Promise<{ points: Point[]; log: string[] }> {
  const log: string[] = [];
  const plugin = new ScrapedPlugin({
    table,
    endpoints: [url],
    timeoutMs: 5000,
    maxBytes: 16 << 20,
    log: createLogger('info', (l) => log.push(l)),
  });
  let out = new PointBuffer();
  try {
    for (let i = 0; i < n; i++) {
      out = new PointBuffer();
      await plugin.collect(out);
    }
  } finally {
    plugin.close();
  }
  return { points: out.points, log };
}

test('the server here negotiates as prometheus_client 0.25.0 did: its choose_encoder answer for every recorded Accept header', () => {
  assert.ok(NEGOTIATION.length >= 10);
  for (const r of NEGOTIATION)
    assert.deepEqual(
      chooseEncoder(r.accept, ['page.text-dots']),
      { page: r.page, contentType: r.contentType },
      `Accept: ${JSON.stringify(r.accept)}`,
    );
});

test(
  'SGLang behind make_asgi_app: the scraper asks for OpenMetrics with escaping=allow-utf-8, ' +
    'gets the colon names, and the points of the text page',
  async () => {
    const want = engineOnly(goldenPagePoints(SGLANG_TABLE, CASE));
    assert.equal(want.length, 13, 'every family of the recorded page gives its point');
    const s = await servePrometheusClient(CASE);
    try {
      const { points, log } = await scrape(s.url);
      assert.equal(s.served[0]!.page, 'page.om-allow-utf-8', `served for Accept ${s.served[0]!.accept}`);
      assert.deepEqual(engineOnly(points), want);
      assert.equal(selfValue(points, 'l9gpu.scrape.empty'), 0);
      assert.equal(selfValue(points, 'l9gpu.scrape.errors'), 0);
      assert.deepEqual(log, []);
    } finally {
      await s.close();
    }
  },
);

test(
  'the pages prometheus_client writes for the Accept headers Prometheus and l9gpu send: ' +
    'OpenMetrics allow-utf-8 and text give the same points; underscores gives none and says so',
  async () => {
    const want = engineOnly(goldenPagePoints(SGLANG_TABLE, CASE));
    for (const page of ['page.prom', 'page.om-allow-utf-8']) {
      const s = await servePrometheusClient(CASE, recordedAnswer(CASE, page));
      try {
        const { points, log } = await scrape(s.url);
        assert.deepEqual(engineOnly(points), want, page);
        assert.deepEqual(log, [], page);
      } finally {
        await s.close();
      }
    }
    // what the scraper got before it sent escaping=allow-utf-8 (and Prometheus 2 gets): every sample renamed
    const s = await servePrometheusClient(CASE, recordedAnswer(CASE, 'page.om-underscores'));
    try {
      const { points, log } = await scrape(s.url, 3);
      assert.deepEqual(engineOnly(points), []);
      assert.equal(selfValue(points, 'l9gpu.scrape.empty'), 3, 'every scrape counted');
      assert.equal(selfValue(points, 'l9gpu.scrape.errors'), 0, 'no error');
      assert.equal(log.length, 1, `one line for the endpoint, not one a scrape: ${log.join('')}`);
      assert.match(
        log[0]!,
        new RegExp(
          String.raw` warn .*endpoint page has no samples of the engine ` +
            String.raw`url=http:\/\/127\.0\.0\.1:\d+\/metrics families="sglang:num_running_reqs, ` +
            String.raw`sglang:num_queue_reqs, sglang:num_used_tokens and 10 more"`,
        ),
      );
      assert.match(
        log[0]!,
        /samples are named like sglang_num_running_reqs: the server escaped the sample names and not their # TYPE lines/,
      );
    } finally {
      await s.close();
    }
  },
);

test(
  'SGLang before its first request (metrics declared, none set): no points, said once and ' +
    'counted; a page without its families is not said',
  async () => {
    // the same registry with no values, answered as the library answers text 0.0.4
    const s = await servePrometheusClient(CASE, {
      page: 'page.before-first-request',
      contentType: recordedAnswer(CASE, 'page.prom').contentType,
    });
    try {
      const { points, log } = await scrape(s.url, 2);
      assert.deepEqual(engineOnly(points), []);
      assert.equal(selfValue(points, 'l9gpu.scrape.empty'), 2);
      assert.equal(log.length, 1, log.join(''));
      assert.match(
        log[0]!,
        new RegExp(
          String.raw`endpoint page has no samples of the engine .*families="sglang:num_running_reqs, ` +
            String.raw`.* and 10 more" why="the engine has not filled them yet \(before its first ` +
            String.raw`request\)`,
        ),
      );
      // vLLM's plugin on SGLang's page: not its families, nothing to say
      const other = await scrape(s.url, 1, VLLM_TABLE);
      assert.equal(selfValue(other.points, 'l9gpu.scrape.empty'), 0);
      assert.deepEqual(other.log, []);
    } finally {
      await s.close();
    }
  },
);

test("doctor's probe of the sglang plugin says an endpoint whose page has the families and no samples", async () => {
  const probe = async (url: string) =>
    sglangPlugin.probe({ ...pluginContext(configFrom({ sglang: { endpoints: url } }), createLogger('error')), hostName: 'h' });
  const good = await servePrometheusClient(CASE);
  const renamed = await servePrometheusClient(CASE, recordedAnswer(CASE, 'page.om-underscores'));
  try {
    assert.deepEqual(await probe(good.url), { ok: true, detail: `1 of 1 endpoint(s) answer: ${good.url}` });
    assert.deepEqual(await probe(renamed.url), {
      ok: true,
      detail: `1 of 1 endpoint(s) answer: ${renamed.url}; 1 with the engine's families and no sample of them (no points)`,
    });
  } finally {
    await good.close();
    await renamed.close();
  }
});
