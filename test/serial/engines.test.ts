/**
 * The scraped plugins end to end: a real HTTP server serves a sequence of
 * vLLM pages (prometheus_client's layout), the real daemon scrapes it and
 * exports OTLP into a real VictoriaMetrics, and the windowed quantiles there
 * are the ones computed by hand from the bucket deltas, across a restart of
 * the engine (its counters go down). Then the faults: an engine down, one
 * that never answers, one serving garbage: one error line each, the other
 * endpoints and plugins unaffected.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { metric, prometheusName } from '../../src/core/metrics/registry.js';
import { pageLines } from '../../src/scrape/engine-plugin.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';
import { waitFor } from '../helpers/wait.js';

const vm = new VictoriaMetrics();
before(async () => {
  await vm.start({ prometheusNaming: true });
});
after(async () => {
  await vm.stop();
});

const BOUNDS = ['0.1', '0.5', '1.0', '5.0', '+Inf'];
const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';

/** A vLLM page as prometheus_client 0.21 writes it: _total and _created families, sorted labels, le first in the bucket's labels. */
function vllmPage(ttft: number[], sum: number, promptTokens: number, running: number, created: number): string {
  const l = `engine="0",model_name="${MODEL}"`;
  let p =
    `# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE ` +
    `vllm:num_requests_running gauge\nvllm:num_requests_running{${l}} ${running}.0\n`;
  p +=
    `# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n# TYPE ` +
    `vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{${l}} ${promptTokens}.0\n`;
  p +=
    `# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n# TYPE ` +
    `vllm:prompt_tokens_created gauge\nvllm:prompt_tokens_created{${l}} ${created}\n`;
  p +=
    `# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n# ` +
    `TYPE vllm:time_to_first_token_seconds histogram\n`;
  ttft.forEach((c, i) => (p += `vllm:time_to_first_token_seconds_bucket{engine="0",le="${BOUNDS[i]}",model_name="${MODEL}"} ${c}.0\n`));
  p += `vllm:time_to_first_token_seconds_count{${l}} ${ttft.at(-1)}.0\nvllm:time_to_first_token_seconds_sum{${l}} ${sum}\n`;
  return p;
}

/**
 * The engine's life, one page per scrape: requests arrive, the engine
 * restarts (every counter lower, a new _created), requests arrive again, then
 * nothing happens. Cumulative bucket counts for le 0.1, 0.5, 1, 5, +Inf.
 */
const T0 = Math.floor(Date.now() / 1000) - 600;
const PAGES = [
  vllmPage([2, 4, 6, 8, 8], 10, 100, 1, T0),
  vllmPage([2, 14, 16, 18, 18], 13, 150, 3, T0), // +10 in (0.1, 0.5]
  vllmPage([1, 1, 1, 1, 1], 0.05, 20, 1, T0 + 300), // restarted: 1 in (0, 0.1]
  vllmPage([1, 1, 3, 5, 6], 20, 40, 2, T0 + 300), // +2 in (0.5, 1], +2 in (1, 5], +1 above 5
  vllmPage([1, 1, 3, 5, 6], 20, 40, 0, T0 + 300), // nothing: no quantile
];
/**
 * By hand, Prometheus' histogram_quantile over each window's buckets:
 * 10 in (0.1, 0.5]: p50 = 0.1 + 0.4 * 5/10; p95 = 0.1 + 0.4 * 9.5/10; p99 = 0.1 + 0.4 * 9.9/10.
 * After the restart, the new process's 1 in (0, 0.1]: 0.05, 0.095, 0.099.
 * 2 in (0.5, 1], 2 in (1, 5], 1 above: p50 rank 2.5 = 1 + 4 * 0.5/2 = 2; p95 and p99 in the +Inf bucket: the last bound, 5.
 */
const WANT: Record<string, number[]> = { '0.5': [0.3, 0.05, 2], '0.95': [0.48, 0.095, 5], '0.99': [0.496, 0.099, 5] };

async function serve(
  handler: http.RequestListener,
): Promise<{ url: (path: string) => string; server: http.Server; requests: () => number }> {
  let n = 0;
  const server = http.createServer((req, res) => {
    n++;
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return { url: (p) => `http://127.0.0.1:${port}${p}`, server, requests: () => n };
}

test(
  'a sequence of vLLM pages into a real VictoriaMetrics: windowed p50/p95/p99 as computed by ' +
    'hand, across an engine restart; counters and histograms as sent',
  async () => {
    let served = 0;
    const engine = await serve((_req, res) => {
      res.setHeader('content-type', 'text/plain; version=0.0.4; charset=utf-8');
      res.end(PAGES[Math.min(served++, PAGES.length - 1)]);
    });
    const dir = tempDir('l9gpu-engines-');
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(
      cfg,
      `[daemon]\nplugins = vllm\nsinks = otlp, stdout\ninterval = 500ms\n[vllm]\nendpoints = ${engine.url('/metrics')}\n[otlp]\nendpoint ` +
        `= ${vm.otlpEndpoint}\nexport_interval = 500ms\n`,
    );
    const d = new DaemonProcess(['--config', cfg]);
    try {
      // the pages run out at the fifth scrape; two more and every window has been exported
      await waitFor('seven scrapes', () => served >= PAGES.length + 2, 30_000);
      await waitFor(
        'the last scrape exported',
        () => d.points().filter((p) => p.name === 'vllm.requests.running').length >= PAGES.length + 2,
        10_000,
      );
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
      engine.server.close();
    }
    assert.doesNotMatch(d.stderr, /error|failed/i, d.stderr);
    await vm.flush();
    const qName = prometheusName(metric('vllm.time_to_first_token.quantile'));
    assert.equal(qName, 'vllm_time_to_first_token_quantile_seconds');
    for (const [q, want] of Object.entries(WANT)) {
      const rows: { metric: Record<string, string>; values: number[] }[] = await waitFor(
        `${qName}{quantile="${q}"} in VictoriaMetrics`,
        async () => {
          const r = await vm.exportRaw(`${qName}{quantile="${q}"}`);
          return r.length && r[0]!.values.length >= want.length ? r : undefined;
        },
        15_000,
      );
      assert.equal(rows.length, 1, `one series: ${JSON.stringify(rows.map((r) => r.metric))}`);
      assert.equal(rows[0]!.metric.gen_ai_request_model, MODEL);
      assert.equal(rows[0]!.metric.vllm_engine, '0');
      const got = rows[0]!.values;
      assert.equal(
        got.length,
        want.length,
        `one value per window with requests, none for the first scrape or the idle window: ${got.join(', ')}`,
      );
      got.forEach((v: number, i: number) =>
        assert.ok(Math.abs(v - want[i]!) < 1e-9, `p${Number(q) * 100} window ${i}: ${v}, by hand ${want[i]}`),
      );
    }
    // the counter as the engine counted it, restart included (a backend's increase() sees the reset)
    const tokens = await vm.exportRaw(prometheusName(metric('vllm.tokens.prompt')));
    assert.deepEqual([...new Set(tokens[0]!.values)], [100, 150, 20, 40]);
    // the histogram's own buckets, cumulative, as the page had them at its last scrape
    const buckets = await vm.query(`${prometheusName(metric('vllm.time_to_first_token'))}_bucket`);
    assert.deepEqual(Object.fromEntries(buckets.map((b) => [b.metric.le, Number(b.value?.[1])])), {
      '0.1': 1,
      '0.5': 1,
      '1': 3,
      '5': 5,
      '+Inf': 6,
    });
  },
);

test(
  'an engine down, one that never answers, one serving garbage: one error line each naming ' +
    'it, the healthy endpoint and the other plugins go on',
  async () => {
    const good = await serve((_req, res) => res.end(PAGES[1]));
    const garbage = await serve((_req, res) => res.end('vllm:num_requests_running{model_name="x" 1\n'));
    const hung = await serve(() => undefined); // takes the request, never answers
    const down = await freePort();
    const dir = tempDir('l9gpu-engines-faults-');
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(
      cfg,
      `[daemon]\nplugins = vllm, sglang, host\nsinks = stdout\ninterval = ` +
        `500ms\n[vllm]\nendpoints = ${good.url('/metrics')}, ${garbage.url('/metrics')}, ${hung.url('/metrics')}\ntimeout ` +
        `= 400ms\n[sglang]\nendpoints = http://127.0.0.1:${down}/metrics\n`,
    );
    const d = new DaemonProcess(['--config', cfg]);
    try {
      // and five of the host plugin's: on a loaded machine its first collection can outlast the interval, and the
      // runner skips its ticks until that one returns
      await waitFor(
        'six ticks of vllm points from the good endpoint, five of the host plugin',
        () => {
          const pts = d.points();
          return (
            pts.filter((p) => p.name === 'vllm.requests.running').length >= 6 &&
            pts.filter((p) => p.name === 'system.cpu.logical.count').length >= 5
          );
        },
        20_000,
      );
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
      for (const s of [good, garbage, hung]) {
        s.server.closeAllConnections();
        s.server.close();
      }
    }
    const lines = d.stderr.trim().split('\n');
    const about = (url: string, re: RegExp) => lines.filter((l) => l.includes('endpoint failed') && l.includes(`url=${url}`) && re.test(l));
    assert.equal(
      about(garbage.url('/metrics'), /line 1: label model_name: unexpected/).length,
      1,
      `the garbage page, said once:\n${d.stderr}`,
    );
    assert.equal(about(hung.url('/metrics'), /no whole answer within 360 ms/).length, 1, `the silent engine, said once:\n${d.stderr}`);
    assert.equal(
      about(`http://127.0.0.1:${down}/metrics`, /ECONNREFUSED 127\.0\.0\.1/).length,
      1,
      `the engine down, said once:\n${d.stderr}`,
    );
    // nothing else said, but for a first collection outlasting its timeout on a loaded machine (its code loaded then):
    // the runner's own warning, and the scrape that timeout cut ("aborted"), only where that plugin's collection was cut
    const late = new Set(lines.map((l) => /collection timed out: .* plugin=(\w+) /.exec(l)?.[1]).filter(Boolean));
    const cut = (l: string) => late.has(/\[l9gpu\/(\w+)\] endpoint failed .*: aborted"$/.exec(l)?.[1] ?? '');
    const said = lines.filter((l) => / (error|warn) /.test(l) && !/collection timed out: /.test(l) && !cut(l));
    assert.equal(said.length, 3, `nothing else said:\n${d.stderr}`);
    // and counted, per endpoint, every failed scrape
    const errors = (port: number) =>
      Math.max(
        ...d
          .points()
          .filter((p) => p.name === 'l9gpu.scrape.errors' && p.attributes['server.port'] === port)
          .map((p) => p.value),
      );
    assert.ok(errors(Number(new URL(garbage.url('/')).port)) >= 5 && errors(down) >= 5, 'a failure counted at every scrape');
    assert.equal(errors(Number(new URL(good.url('/')).port)), 0);
    // the healthy endpoint's points and the host plugin's went on every tick
    const points = d.points();
    assert.ok(points.filter((p) => p.name === 'system.cpu.logical.count').length >= 5);
    assert.ok(
      points
        .filter((p) => p.name === 'vllm.requests.running')
        .every((p) => p.attributes['server.port'] === Number(new URL(good.url('/')).port)),
    );
    assert.ok(hung.requests() >= 1 && garbage.requests() >= 6);
  },
);

test(
  '[daemon] engines = auto: an engine process found by its command line and listening port is ' +
    'scraped, with its pid; a server that names no engine is left alone',
  async () => {
    const server = join(ROOT, 'test', 'fixtures', 'engine-server.mjs');
    const page = join(ROOT, 'plugins', 'vllm', 'testdata', 'vllm-datadog-fixture-mixed-0.4-to-0.11', 'page.prom');
    const [enginePort, otherPort] = [await freePort(), await freePort()];
    // the words after the page are the stand-in's command line, as `vllm serve <model>` would show it
    const engine = spawn(process.execPath, [server, String(enginePort), page, 'vllm', 'serve', 'facebook/opt-125m'], { stdio: 'ignore' });
    const other = spawn(process.execPath, [server, String(otherPort), page, 'web-app'], { stdio: 'ignore' });
    const dir = tempDir('l9gpu-engines-auto-');
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(cfg, `[daemon]\nplugins = host\nengines = auto\nsinks = stdout\ninterval = 300ms\n`);
    try {
      await waitFor('the stand-ins listening', async () =>
        (
          await Promise.all(
            [enginePort, otherPort].map((p) =>
              fetch(`http://127.0.0.1:${p}/metrics`).then(
                (r) => r.ok,
                () => false,
              ),
            ),
          )
        ).every(Boolean),
      );
      const d = new DaemonProcess(['--config', cfg]);
      let pts;
      try {
        // this engine's points (another vLLM on the machine, a real one or a leftover, is found too, and rightly)
        pts = await waitFor(
          'vllm points from the discovered engine',
          () => {
            const p = d.points().filter((x) => x.name === 'vllm.tokens.prompt' && x.attributes['server.port'] === enginePort);
            return p.length >= 2 ? p : undefined;
          },
          20_000,
        );
      } finally {
        assert.equal(await d.stop(), 0, d.stderr);
      }
      assert.ok(
        pts.every((p) => p.attributes['process.pid'] === engine.pid),
        JSON.stringify(pts[0]),
      );
      assert.ok(!d.points().some((p) => p.attributes['server.port'] === otherPort), 'the server that names no engine is not scraped');
      assert.match(
        d.stderr,
        new RegExp(`\\[l9gpu/vllm\\] engine found url=http://127\\.0\\.0\\.1:${enginePort}/metrics pid=${engine.pid}`),
      );
      assert.match(d.stderr, /plugins=host,vllm,sglang,tgi,triton,nim /);
      assert.doesNotMatch(d.stderr, /error|failed/i, 'the engines not running here are no error');
    } finally {
      engine.kill();
      other.kill();
    }
  },
);

test(
  '[limits] series_per_endpoint on a configured endpoint: a page of 500 series gives 50 a ' +
    "scrape; the page is root's (this test process serves it), so the hits count against root, " +
    'and no user budget applies',
  async () => {
    let page = '# TYPE vllm:num_requests_running gauge\n';
    for (let i = 0; i < 500; i++) page += `vllm:num_requests_running{engine="${i}",model_name="m"} 1\n`;
    const engine = await serve((_req, res) => res.end(page));
    const dir = tempDir('l9gpu-engines-limit-');
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(
      cfg,
      `[daemon]\nplugins = vllm\nsinks = stdout\ninterval = 300ms\n[vllm]\nendpoints = ` +
        `${engine.url('/metrics')}\n[limits]\nseries_per_endpoint ` +
        `= 50\nseries_per_user = 10\n`,
    );
    const d = new DaemonProcess(['--config', cfg]);
    try {
      await waitFor(
        'three scrapes',
        () =>
          new Set(
            d
              .points()
              .filter((p) => p.name === 'vllm.requests.running')
              .map((p) => p.time),
          ).size >= 3,
        15_000,
      );
    } finally {
      assert.equal(await d.stop(), 0, d.stderr);
      engine.server.close();
    }
    const byTime = new Map<string, number>();
    for (const p of d.points().filter((x) => x.name === 'vllm.requests.running')) byTime.set(p.time, (byTime.get(p.time) ?? 0) + 1);
    // the family declared counts as one: 49 samples
    assert.deepEqual([...new Set(byTime.values())], [49]);
    const pts = d.points().filter((x) => x.name === 'vllm.requests.running');
    assert.ok(
      pts.every((p) => p.attributes['process.owner'] === 'root' && p.attributes['process.pid'] === process.pid),
      JSON.stringify(pts[0]?.attributes),
    );
    const hits = d.points().filter((p) => p.name === 'l9gpu.budget.exceeded');
    // the page is read to pageLines(50) lines (its # TYPE line and 215 samples) and the connection closed: each scrape
    // counts the samples read past the 49 kept, and one for the unread rest, the same count every scrape. The counter
    // is sent by the agent's own collection, which may come after one scrape or several: a multiple of that count
    const per = pageLines(50) - 1 - 49 + 1;
    const counted = hits.filter((p) => p.attributes['l9gpu.budget'] === 'series_per_endpoint');
    assert.ok(counted.length > 0, 'the hits counted');
    assert.ok(
      counted.every((p) => p.attributes['user.name'] === 'root' && p.value > 0 && p.value % per === 0),
      `multiples of ${per} (less than the page's 451 past the bound: its rest is never read), against root: ` +
        JSON.stringify(counted.map((p) => [p.value, p.attributes['user.name']])),
    );
    assert.ok(!hits.some((p) => p.attributes['l9gpu.budget'] === 'series_per_user'));
    assert.match(
      d.stderr,
      /limit reached: http:\/\/127\.0\.0\.1:\d+\/metrics: \d+\+ \(the rest of the page unread\) series past the 50 of one endpoint dropped/,
    );
  },
);
