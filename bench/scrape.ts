/**
 * The scrape path's figures: the exposition parser's throughput on a
 * real-size vLLM page against parse-prometheus-text-format (the npm parser,
 * the same page, the same run), and the cost of one scrape (loopback HTTP GET,
 * parse, conversion by the vLLM table into points) of a ~500-series page.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { PointBuffer } from '../src/core/metrics/model.js';
import { parseExposition, parsePage } from '../src/scrape/exposition.js';
import { ScrapedPlugin } from '../src/scrape/engine-plugin.js';
import { VLLM_TABLE } from '../plugins/vllm/index.js';
import { ROOT } from '../test/helpers/paths.js';

const npmParse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => unknown[];

export const LARGE_VLLM_PAGE = join(ROOT, 'plugins', 'vllm', 'testdata', 'built-vllm-0.10-large', 'page.prom');

/** Calls per second of fn over about `ms` of wall time (after a warm-up). */
function rate(fn: () => void, ms: number): number {
  for (let i = 0; i < 20; i++) fn();
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    fn();
    n++;
    if ((n & 7) === 0) t = performance.now();
  }
  return n / ((performance.now() - t0) / 1000);
}

/** Whole families of the page, in order, until at least `series` samples. */
export function pageOfSeries(page: string, series: number): { text: string; series: number } {
  const blocks = page.split(/\n(?=# HELP )/);
  let text = '';
  let n = 0;
  for (const b of blocks) {
    if (n >= series) break;
    text += b.endsWith('\n') ? b : `${b}\n`;
    n += b.split('\n').filter((l) => l && !l.startsWith('#')).length;
  }
  return { text, series: n };
}

export interface ScrapeBench {
  pageBytes: number;
  pageSeries: number;
  oursMBps: number;
  npmMBps: number;
  small: { series: number; bytes: number; cpuUsPerScrape: number; wallUsPerScrape: number; points: number };
  /** A user's page of 250,000 gauges read under the default series_per_endpoint, and without a bound. */
  hostile: { series: number; bytes: number; kept: number; boundedMs: number; unboundedMs: number };
}

/** Milliseconds of the fastest of `n` runs. */
function fastest(fn: () => void, n: number): number {
  let best = Infinity;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

export async function benchScrape(ms = 2000): Promise<ScrapeBench> {
  const page = readFileSync(LARGE_VLLM_PAGE, 'utf8');
  const bytes = Buffer.byteLength(page);
  const pageSeries = parseExposition(page).reduce((a, f) => a + f.samples.length, 0);
  // interleaved rounds: the two parsers see the same machine state
  let ours = 0;
  let npm = 0;
  for (let r = 0; r < 3; r++) {
    ours = Math.max(
      ours,
      rate(() => parseExposition(page), ms / 3),
    );
    npm = Math.max(
      npm,
      rate(() => npmParse(page), ms / 3),
    );
  }
  const small = pageOfSeries(page, 500);
  const server = http.createServer((_req, res) => res.end(small.text));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  const plugin = new ScrapedPlugin({ table: VLLM_TABLE, endpoints: [url], timeoutMs: 5000, maxBytes: 16 << 20 });
  let points = 0;
  for (let i = 0; i < 20; i++) await plugin.collect(new PointBuffer());
  const runs = 300;
  // the server answers from this process too: its share is measured alone and taken out
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < runs; i++) {
    const out = new PointBuffer();
    await plugin.collect(out);
    points = out.points.length;
  }
  const wall = performance.now() - w0;
  const c = process.cpuUsage(c0);
  plugin.close();
  server.close();
  let huge = '# TYPE vllm:num_requests_running gauge\n';
  for (let i = 0; i < 250_000; i++) huge += `vllm:num_requests_running{engine="${i}",model_name="m"} 1\n`;
  const kept = parsePage(huge, { maxSamples: 10_000 }).samples;
  const hostile = {
    series: 250_000,
    bytes: huge.length,
    kept,
    boundedMs: fastest(() => parsePage(huge, { maxSamples: 10_000 }), 5),
    unboundedMs: fastest(() => parsePage(huge), 3),
  };
  return {
    hostile,
    pageBytes: bytes,
    pageSeries,
    oursMBps: (ours * bytes) / 1e6,
    npmMBps: (npm * bytes) / 1e6,
    small: {
      series: small.series,
      bytes: Buffer.byteLength(small.text),
      cpuUsPerScrape: (c.user + c.system) / runs,
      wallUsPerScrape: (wall * 1000) / runs,
      points,
    },
  };
}
