/**
 * Differential test of the exposition parser against a real one: the same
 * pages (every recorded engine page under plugins/{name}/testdata, plus pages
 * generated from a fixed seed to hit the grammar's corners) are imported into
 * a real VictoriaMetrics (/api/v1/import/prometheus) and parsed by
 * src/scrape/exposition.ts; the series and values must be the same.
 *
 * Where the two are known to differ by design, the generator stays out (each
 * is a unit case in test/system/exposition.test.ts instead): VictoriaMetrics drops
 * NaN samples and empty label values (Prometheus' semantics too: we compare
 * without them), stores 12 significant digits, reads 1e400 as +Inf (Go's
 * ParseFloat, which Prometheus uses, and this parser refuse it), refuses a
 * leading "+" and misreads exemplars and Prometheus 3 quoted names.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { formatOf, parseExposition } from '../../src/scrape/exposition.js';
import { ROOT } from '../helpers/paths.js';
import { VictoriaMetrics } from '../helpers/victoriametrics.js';

const vm = new VictoriaMetrics();
before(async () => {
  await vm.start();
});
after(async () => {
  await vm.stop();
});

/** name{sorted labels} -> value and timestamp; NaN and empty label values left out (neither is stored). */
type Series = Map<string, { v: number; ts?: number }>;
const key = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels)
    .filter(([k, v]) => v !== '' && k !== 'l9gpu_page')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',')}}`;
/** VictoriaMetrics keeps 12 significant digits (cut, not rounded): equal within that. */
const same = (a: number, b: number) => a === b || Math.abs(a - b) <= 2e-12 * Math.max(Math.abs(a), Math.abs(b));

function ours(page: string): Series {
  const out: Series = new Map();
  for (const f of parseExposition(page))
    for (const s of f.samples) if (!Number.isNaN(s.value)) out.set(key(s.name, s.labels), { v: s.value, ts: s.timestampMs });
  return out;
}

let pageNo = 0;
async function theirs(page: string): Promise<Series> {
  const id = String(++pageNo);
  const r = await fetch(`${vm.url}/api/v1/import/prometheus?extra_label=l9gpu_page=${id}`, { method: 'POST', body: page });
  assert.equal(r.status, 204, `VictoriaMetrics refused page ${id}: ${await r.text()}`);
  await vm.flush();
  const out: Series = new Map();
  // the export's end defaults to now, in whole seconds: a sample stamped on arrival this second would fall after it
  const q = new URLSearchParams({
    'match[]': `{l9gpu_page="${id}"}`,
    start: String(Math.floor(Date.now() / 1000) - 3600),
    end: String(Math.ceil(Date.now() / 1000) + 60),
  });
  const rows = (await (await fetch(`${vm.url}/api/v1/export?${q}`)).text())
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { metric: Record<string, string>; values: (number | string)[]; timestamps: number[] });
  for (const row of rows) {
    const { __name__: name, ...labels } = row.metric;
    assert.equal(row.values.length, 1, `one value per series: ${JSON.stringify(row)}`);
    const v = row.values[0] as number | string;
    out.set(key(name!, labels), { v: Number(v), ts: row.timestamps[0] });
  }
  return out;
}

/** What differs; a sample without a timestamp gets the time it arrived at VictoriaMetrics, so only a page's own timestamps are compared. */
const diff = (a: Series, b: Series) => {
  const lines: string[] = [];
  for (const [k, x] of a) {
    const y = b.get(k);
    if (!y || !same(y.v, x.v) || (x.ts !== undefined && y.ts !== x.ts))
      lines.push(`ours ${k} ${x.v} @${x.ts ?? '-'}, VictoriaMetrics ${y ? `${y.v} @${y.ts}` : '(none)'}`);
  }
  for (const [k, y] of b) if (!a.has(k)) lines.push(`VictoriaMetrics ${k} ${y.v}, ours (none)`);
  return lines;
};

/** Every recorded page (testdata/<case>/*.prom) that is Prometheus text (OpenMetrics pages carry exemplars VictoriaMetrics misreads). */
export function recordedPages(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const plugin of readdirSync(join(ROOT, 'plugins'))) {
    const dir = join(ROOT, 'plugins', plugin, 'testdata');
    if (!existsSync(dir)) continue;
    for (const c of readdirSync(dir, { withFileTypes: true })) {
      if (!c.isDirectory()) continue;
      for (const f of readdirSync(join(dir, c.name))) {
        if (!f.endsWith('.prom')) continue;
        const text = readFileSync(join(dir, c.name, f), 'utf8');
        if (formatOf(/^# EOF\s*$/m.test(text) ? 'application/openmetrics-text' : undefined) === 'prometheus')
          out.push({ file: `plugins/${plugin}/testdata/${c.name}/${f}`, text });
      }
    }
  }
  return out;
}

test('every recorded engine and dcgm-exporter page: the same series and values as VictoriaMetrics reads', async (t) => {
  const pages = recordedPages();
  assert.ok(pages.length >= 6, `recorded pages found: ${pages.length}`);
  let samples = 0;
  for (const { file, text } of pages) {
    const a = ours(text);
    samples += a.size;
    assert.ok(a.size > 0, `${file}: no sample read`);
    assert.deepEqual(diff(a, await theirs(text)), [], file);
  }
  t.diagnostic(`${pages.length} pages, ${samples} samples agree`);
});

// --- generated pages: the grammar's corners, within what both read the same ---
const NAMES = ['a', 'vllm:x', 'b_total', 'c_bucket', 'Z9', '_u', 'n:m:o'];
const LABELS = ['l', 'le', 'quantile', 'model_name', '_x', 'A1'];
/** Label value text as written on the page: escapes, unknown escapes, UTF-8, the grammar's own characters. */
const valueText = fc
  .array(fc.constantFrom('a', 'Z', '0', ' ', 'é', '☃', '𝄞', '\\\\', '\\"', '\\n', '\\t', '\\q', '{', '}', ',', '=', '#', "'", '/'), {
    maxLength: 8,
  })
  .map((xs) => xs.join(''));
const number = fc.oneof(
  fc.integer({ min: -1e9, max: 1e9 }).map(String),
  fc.tuple(fc.integer({ min: -999_999, max: 999_999 }), fc.integer({ min: -200, max: 200 })).map(([m, e]) => `${m}e${e}`),
  fc.tuple(fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: 0, max: 9_999_999 })).map(([a, b]) => `${a}.${b}`),
  fc.constantFrom('+Inf', '-Inf', 'Inf', 'inf', '-infinity', 'NaN', 'nan', '0', '-0', '.5', '5.', '1E3'),
);
const blank = fc.constantFrom(' ', '\t', '  ', ' \t');
const sampleLine = fc.record({
  name: fc.constantFrom(...NAMES),
  labels: fc.uniqueArray(fc.tuple(fc.constantFrom(...LABELS), valueText), { maxLength: 4, selector: ([k]) => k }),
  value: number,
  ts: fc.option(fc.integer({ min: 1, max: 3_000_000 }), { nil: undefined }),
  b1: blank,
  b2: blank,
  comma: fc.boolean(),
  spaced: fc.boolean(),
});
const NOW = Date.now();
const page = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: sampleLine },
      { weight: 1, arbitrary: fc.constantFrom('# a comment', '#', '# HELP a Some \\\\ help\\n.', '', '   ', '# TYPE unrelated gauge') },
    ),
    { minLength: 1, maxLength: 30 },
  )
  .map((lines) => {
    const seen = new Set<string>();
    let text = '';
    for (const l of lines) {
      if (typeof l === 'string') {
        text += `${l}\n`;
        continue;
      }
      // one sample per series: two with one timestamp would leave which one VictoriaMetrics keeps open
      // (the series as stored: \\q and \q are one value, an empty value no label)
      const id = `${l.name}${JSON.stringify(
        l.labels
          .map(([k, v]) => [k, v.replace(/\\([\\"n])/g, (_m, c: string) => (c === 'n' ? '\n' : c))] as const)
          .filter(([, v]) => v !== '')
          .sort(),
      )}`;
      if (seen.has(id)) continue;
      seen.add(id);
      const eq = l.spaced ? ' = ' : '=';
      const labels = l.labels.length ? `{${l.labels.map(([k, v]) => `${k}${eq}"${v}"`).join(',')}${l.comma ? ',' : ''}}` : '';
      text += `${l.name}${labels}${l.b1}${l.value}${l.ts === undefined ? '' : `${l.b2}${NOW - l.ts}`}\n`;
    }
    return text;
  });

test(
  'generated pages (escapes, blanks, specials, timestamps, comments): the same series, values ' + 'and timestamps as VictoriaMetrics reads',
  async (t) => {
    const pages = fc.sample(page, { numRuns: 80, seed: 20261123 });
    let samples = 0;
    for (const text of pages) {
      const a = ours(text);
      samples += a.size;
      assert.deepEqual(diff(a, await theirs(text)), [], text);
    }
    assert.ok(samples > 300, `samples compared: ${samples}`);
    t.diagnostic(`${pages.length} generated pages, ${samples} samples agree`);
  },
);
