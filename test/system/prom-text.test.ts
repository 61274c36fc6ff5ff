/**
 * The pull page's text (src/sinks/prom-text.ts) on hostile attribute sets:
 * an engine page's label names and values are its user's, and one series
 * Prometheus cannot take costs the whole node's page (up = 0 for every GPU of
 * it). Every page here is held to what Prometheus' text parser takes (label
 * names [a-zA-Z_][a-zA-Z0-9_]*, none starting with __, each once per series;
 * valid UTF-8 values), to `promtool check metrics`, and read back by the
 * project's own parser (src/scrape/exposition.ts); and, beyond the format, to
 * no raw control or invisible format character in a label value (they would
 * run in the terminal of an admin who curls the page) and no series twice.
 *
 * A system file, not a unit one: promtool is a child process (test/README.md).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteBuffer } from '../../src/core/byte-buffer.js';
import { stableAttributes, type Attributes, type Batch, type HistogramValue, type Point } from '../../src/core/metrics/model.js';
import { metric, type MetricDef } from '../../src/core/metrics/registry.js';
import { rng } from '../../src/core/rng.js';
import { toHistogram } from '../../src/scrape/convert.js';
import { parseExposition, type Family, type Labels, type Sample } from '../../src/scrape/exposition.js';
import {
  batchLines,
  constantLabels,
  metricHeader,
  NO_METRICS,
  pagePieces,
  renderExposition,
  targetInfo,
} from '../../src/sinks/prom-text.js';
import { promtoolCheckMetrics } from '../helpers/prometheus.js';

const GAUGE = metric('vllm.requests.running');
const OTHER = metric('vllm.requests.waiting');
const HIST = metric('vllm.time_to_first_token');
const GAUGE_NAME = 'vllm_requests_running';
const HIST_NAME = 'vllm_time_to_first_token_seconds';
const RESOURCE: Attributes = { 'service.name': 'l9gpu', 'host.name': 'gpu001', 'cluster.name': 'alps' };
/** [prometheus] resource_labels' default. */
const KEEP = /^(cluster\.name|host\.name)$/;
const H: HistogramValue = { bounds: [0.1, 1, 2.5], counts: [1, 2, 0, 4], sum: 9.5, count: 7 };

/** A label name as Prometheus 2.42's parser and storage take it, not one of the reserved __ names. */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** What no label value may hold raw: C0 but tab and newline, DEL, C1, Unicode Cf (bidi, zero width, BOM), U+2028/U+2029. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/u;
/** The same as bytes of the page: C0 but tab and newline, and DEL. */
const RAW_CONTROL_BYTE = (b: number): boolean => b <= 0x08 || (b >= 0x0b && b <= 0x1f) || b === 0x7f;

const batch = (points: Point[]): Batch => ({ source: 'vllm', time: 1_795_000_000_000, intervalMs: 1000, points });
const gauge = (attributes: Attributes, value = 1, def: MetricDef = GAUGE): Point => ({ metric: def, value, attributes });
const hist = (attributes: Attributes, h: HistogramValue = H): Point => ({ metric: HIST, value: h.count, hist: h, attributes });

/**
 * The page's bytes, assembled from the pieces the pull sink serves
 * (prometheus.ts: targetInfo, batchLines, pagePieces), checked against
 * renderExposition's string; and how many points batchLines left out as
 * repeated series.
 */
function render(
  points: Point[],
  o: { resource?: Attributes; keep?: RegExp; hide?: ReadonlySet<string> } = {},
): { bytes: Buffer; text: string; duplicates: number } {
  const resource = o.resource ?? RESOURCE;
  const keep = 'keep' in o ? o.keep : KEEP;
  const b = batch(points);
  let duplicates = 0;
  const lines = batchLines(b, new ByteBuffer(), constantLabels(resource, keep), { hide: o.hide, duplicate: () => duplicates++ });
  const bytes = Buffer.concat(
    pagePieces(Buffer.from(targetInfo(resource)), [lines], (def) => Buffer.from(metricHeader(def)), Buffer.from(NO_METRICS)),
  );
  // a lone surrogate written as CESU bytes, or any other invalid UTF-8, throws here: Prometheus refuses such a label value
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  assert.equal(renderExposition([b], resource, keep, o.hide), text, 'renderExposition writes the pieces the pull sink serves');
  return { bytes, text, duplicates };
}

/** The series' identity as Prometheus' storage has it: the sample's name and its labels sorted by name. */
const identity = (s: Sample): string =>
  `${s.name}${JSON.stringify(Object.entries(s.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`;

/**
 * Holds a page to Prometheus' rules and to ours (see the header) and reads it
 * back: promtool check metrics (unless told not to), the project's parser (which refuses a label
 * named twice in one series), every label name, no raw control character or
 * byte, every series once.
 */
function checked(page: { bytes: Buffer; text: string }, promtool = true): Family[] {
  if (promtool) {
    const lint = promtoolCheckMetrics(page.text);
    assert.equal(lint.status, 0, `promtool check metrics: ${lint.output}\n${page.text}`);
  }
  const families = parseExposition(page.text);
  const seen = new Set<string>();
  for (const f of families) {
    for (const s of f.samples) {
      for (const [k, v] of Object.entries(s.labels)) {
        assert.match(k, LABEL_NAME, `label name ${JSON.stringify(k)} of ${s.name}`);
        assert.ok(!k.startsWith('__'), `reserved label name ${k}`);
        assert.doesNotMatch(v, RAW_CONTROL, `raw control character in ${s.name}{${k}=${JSON.stringify(v)}}`);
      }
      const id = identity(s);
      assert.ok(!seen.has(id), `series twice on the page: ${id}`);
      seen.add(id);
    }
  }
  assert.doesNotMatch(page.text.replace(/[\t\n]/g, ''), RAW_CONTROL, 'no raw control or format character anywhere on the page');
  const raw = page.bytes.findIndex(RAW_CONTROL_BYTE);
  assert.equal(raw, -1, `raw control byte 0x${page.bytes[raw]?.toString(16)} at ${raw}`);
  return families;
}

/** The samples of one sample name, in page order. */
function samples(families: Family[], name: string): Sample[] {
  return families.flatMap((f) => f.samples).filter((s) => s.name === name);
}

/** The one sample of `name` whose label `k` is `v`. */
function sampleWith(families: Family[], name: string, k: string, v: string): Sample {
  const found = samples(families, name).filter((s) => s.labels[k] === v);
  assert.equal(found.length, 1, `one ${name}{${k}="${v}"}: ${JSON.stringify(samples(families, name).map((s) => s.labels))}`);
  return found[0]!;
}

/** A sample's labels without the constant ones, in page order. */
function own(l: Labels): [string, string][] {
  return Object.entries(l).filter(([k]) => k !== 'host_name' && k !== 'cluster_name');
}

test(
  'vllm.x and vllm._x (both vllm_x) are two labels of the series, the later vllm_x_1, ' +
    'whichever comes first; both values stay; the old page (vllm_x twice) is one Prometheus ' +
    'refuses',
  () => {
    const f = checked(
      render([
        gauge({ 'vllm.x': 'plain', 'vllm._x': 'underscore', 'vllm.i': '1' }),
        gauge({ 'vllm._x': 'underscore', 'vllm.x': 'plain', 'vllm.i': '2' }, 2),
      ]),
    );
    assert.deepEqual(own(sampleWith(f, GAUGE_NAME, 'vllm_i', '1').labels), [
      ['vllm_x', 'plain'],
      ['vllm_x_1', 'underscore'],
      ['vllm_i', '1'],
    ]);
    assert.deepEqual(own(sampleWith(f, GAUGE_NAME, 'vllm_i', '2').labels), [
      ['vllm_x', 'underscore'],
      ['vllm_x_1', 'plain'],
      ['vllm_i', '2'],
    ]);
    // the page the code wrote before labels were made unique: what the checks above refuse, as Prometheus does
    const before = `# HELP ${GAUGE_NAME} x\n# TYPE ${GAUGE_NAME} gauge\n${GAUGE_NAME}{vllm_x="plain",vllm_x="underscore"} 1\n`;
    assert.throws(() => parseExposition(before), /label vllm_x twice/);
    assert.notEqual(promtoolCheckMetrics(before).status, 0, 'promtool refuses a label named twice');
  },
);

test(
  'names that sanitise alike in other ways (x.y, x_y, x__y, x-y, "x y", and a name the ' +
    'renaming itself would make) each get a label of their own, every value kept',
  () => {
    const a: Attributes = {
      'vllm.x.y': 'dot',
      'vllm.x_y': 'under',
      'vllm.x__y': 'double',
      'vllm.x-y': 'dash',
      'vllm.x y': 'space',
      'vllm.x_y_1': 'one',
      'vllm.x_y_2': 'two',
      'vllm.x/y': 'slash',
    };
    const s = samples(checked(render([gauge(a)])), GAUGE_NAME);
    assert.equal(s.length, 1);
    const l = own(s[0]!.labels);
    assert.equal(l.length, Object.keys(a).length, `a label for each attribute: ${JSON.stringify(l)}`);
    assert.deepEqual(l.map(([, v]) => v).sort(), Object.values(a).map(String).sort(), 'every value on the series');
    assert.ok(
      l.every(([k]) => k.startsWith('vllm_x_y')),
      JSON.stringify(l),
    );
    // the first of each name keeps it: x.y (the first attribute) is vllm_x_y
    assert.equal(s[0]!.labels.vllm_x_y, 'dot');
  },
);

test(
  'UTF-8 label names (Prometheus 3 quoted names: accents, CJK, an emoji, the Kelvin sign, ' +
    'long s, dotted I) become ASCII names, each its own',
  () => {
    const names = ['vllm.é', 'vllm.ü', 'vllm.日本', 'vllm.😀', 'vllm.\u212a', 'vllm.\u017f', 'vllm.\u0130', 'vllm.\ud800', 'vllm.k'];
    const a: Attributes = Object.fromEntries(names.map((n, i) => [n, `v${i}`]));
    const s = samples(checked(render([gauge(a)])), GAUGE_NAME);
    const l = own(s[0]!.labels);
    assert.equal(l.length, names.length, JSON.stringify(l));
    assert.deepEqual(
      l.map(([, v]) => v),
      names.map((_, i) => `v${i}`),
    );
    // case folding does not turn the Kelvin sign into k (which would collide with vllm.k's label)
    assert.equal(s[0]!.labels.vllm_k, `v${names.length - 1}`);
  },
);

test(
  'an attribute that sanitises to a constant label (host.name, host_name, cluster.name) is ' +
    "the series' one label of that name, the resource's left off; target_info keeps the " +
    'resource',
  () => {
    const f = checked(
      render([
        gauge({ 'host.name': 'other', 'vllm.i': '1' }),
        gauge({ host_name: 'a', 'host.name': 'b', 'vllm.i': '2' }),
        gauge({ 'cluster.name': 'elsewhere', 'vllm.i': '3' }),
        gauge({ 'vllm.i': '4' }),
      ]),
    );
    assert.deepEqual(Object.entries(sampleWith(f, GAUGE_NAME, 'vllm_i', '1').labels), [
      ['host_name', 'other'],
      ['vllm_i', '1'],
      ['cluster_name', 'alps'],
    ]);
    assert.deepEqual(Object.entries(sampleWith(f, GAUGE_NAME, 'vllm_i', '2').labels), [
      ['host_name', 'a'],
      ['host_name_1', 'b'],
      ['vllm_i', '2'],
      ['cluster_name', 'alps'],
    ]);
    assert.deepEqual(Object.entries(sampleWith(f, GAUGE_NAME, 'vllm_i', '3').labels), [
      ['cluster_name', 'elsewhere'],
      ['vllm_i', '3'],
      ['host_name', 'gpu001'],
    ]);
    assert.deepEqual(Object.entries(sampleWith(f, GAUGE_NAME, 'vllm_i', '4').labels), [
      ['vllm_i', '4'],
      ['host_name', 'gpu001'],
      ['cluster_name', 'alps'],
    ]);
    assert.deepEqual(samples(f, 'target_info')[0]!.labels, { service_name: 'l9gpu', host_name: 'gpu001', cluster_name: 'alps' });
    // two resource attributes of one label name: the first
    const dup = checked(render([gauge({ 'vllm.i': '1' })], { resource: { 'host.name': 'h1', host_name: 'h2' }, keep: /^host[._]name$/ }));
    assert.deepEqual(samples(dup, GAUGE_NAME)[0]!.labels, { vllm_i: '1', host_name: 'h1' });
  },
);

test(
  "an attribute named le: on a histogram it is le_1 beside each bucket's own le, which reads " +
    'back as the buckets; on a gauge le_1 too; le and le_1 together stay two',
  () => {
    const f = checked(render([hist({ le: 'x', 'vllm.m': 'm' }), gauge({ le: '0.5', le_1: 'one', 'vllm.m': 'm' })]));
    const buckets = samples(f, `${HIST_NAME}_bucket`);
    assert.deepEqual(
      buckets.map((s) => s.labels.le),
      ['0.1', '1', '2.5', '+Inf'],
    );
    for (const s of [...buckets, ...samples(f, `${HIST_NAME}_count`), ...samples(f, `${HIST_NAME}_sum`)]) {
      assert.equal(s.labels.le_1, 'x', JSON.stringify(s.labels));
      assert.deepEqual(Object.keys(s.labels).filter((k) => k === 'le').length, s.name.endsWith('_bucket') ? 1 : 0);
    }
    const back = toHistogram(
      buckets.map((s) => [Number(s.labels.le === '+Inf' ? Infinity : s.labels.le), s.value]),
      samples(f, `${HIST_NAME}_sum`)[0]!.value,
      samples(f, `${HIST_NAME}_count`)[0]!.value,
    );
    assert.deepEqual(back, H, 'the buckets read back as the histogram written');
    assert.deepEqual(own(samples(f, GAUGE_NAME)[0]!.labels), [
      ['le_1', '0.5'],
      ['le_1_1', 'one'],
      ['vllm_m', 'm'],
    ]);
  },
);

test(
  'an empty name, names of only punctuation and digit-led names: key_ for the empty one, ' + 'key_<name> for a digit-led one, each unique',
  () => {
    const a: Attributes = {
      '': 'empty',
      '.': 'dot',
      _: 'under',
      'vllm.': 'prefix',
      '0': 'zero',
      '1.5': 'one-five',
      '9lives': 'nine',
      key_0: 'taken',
      __: 'dunder',
    };
    const s = samples(checked(render([gauge(a)])), GAUGE_NAME)[0]!;
    const l = own(s.labels);
    assert.equal(l.length, Object.keys(a).length, JSON.stringify(l));
    assert.deepEqual(l.map(([, v]) => v).sort(), Object.values(a).map(String).sort());
    assert.equal(s.labels.key_, 'empty');
    assert.equal(s.labels.key_1_5, 'one-five');
    assert.equal(s.labels.key_9lives, 'nine');
    assert.equal(s.labels.vllm_, 'prefix');
    // names of _ alone: _, then _1 and _2 (not __1: a reserved name)
    assert.deepEqual([s.labels._, s.labels._1, s.labels._2], ['dot', 'under', 'dunder']);
    // JavaScript orders integer-like keys first: "0" is key_0, and the attribute key_0 its second
    assert.equal(s.labels.key_0, 'zero');
    assert.equal(s.labels.key_0_1, 'taken');
  },
);

/** Hostile label values and what each reads back as. */
const VALUES: readonly (readonly [string, string])[] = [
  ['esc \u001b[2J\u001b]0;title\u0007', 'esc \ufffd[2J\ufffd]0;title\ufffd'],
  ['bel\u0007', 'bel\ufffd'],
  ['cr\rover', 'cr\ufffdover'],
  ['nul\u0000x', 'nul\ufffdx'],
  ['del\u007f', 'del\ufffd'],
  ['c1 nel\u0085 csi\u009b31m', 'c1 nel\ufffd csi\ufffd31m'],
  ['bidi \u202eevil\u202c \u2066iso\u2069', 'bidi \ufffdevil\ufffd \ufffdiso\ufffd'],
  ['ls\u2028ps\u2029', 'ls\ufffdps\ufffd'],
  ['bom\ufeff zw\u200b', 'bom\ufffd zw\ufffd'],
  ['vt\u000bff\u000c', 'vt\ufffdff\ufffd'],
  ['lone high \ud800', 'lone high \ufffd'],
  ['lone low \udc00x', 'lone low \ufffdx'],
  ['a pair 😀 stays', 'a pair 😀 stays'],
  ['quote " and \\"', 'quote " and \\"'],
  ['back\\slash\\', 'back\\slash\\'],
  ['new\nline\n', 'new\nline\n'],
  ['tab\tkept', 'tab\tkept'],
  ['all "\\\n\u001b\r', 'all "\\\n\ufffd\ufffd'],
  ['\\n is not a newline', '\\n is not a newline'],
  ['', ''],
];

test(
  'label values with ESC, BEL, CR, NUL, DEL, C1, bidi overrides, U+2028, a lone surrogate: ' +
    'U+FFFD on the page (no raw byte of them); quotes, backslashes and newlines escaped and ' +
    'read back as they were; tab kept',
  () => {
    const points = VALUES.map(([v], i) => gauge({ 'vllm.i': String(i), 'vllm.v': v }));
    const page = render(points);
    const f = checked(page);
    for (const [i, [, want]] of VALUES.entries())
      assert.equal(sampleWith(f, GAUGE_NAME, 'vllm_i', String(i)).labels.vllm_v, want, `value ${i}: ${JSON.stringify(VALUES[i]![0])}`);
    // the escapes are the format's: \\, \" and \n, written so
    assert.ok(page.text.includes('vllm_v="quote \\" and \\\\\\""'), page.text);
    assert.ok(page.text.includes('vllm_v="new\\nline\\n"'));
    // numbers and booleans are values too
    const typed = samples(checked(render([gauge({ 'vllm.n': 1.5, 'vllm.b': true, 'vllm.z': -0 })])), GAUGE_NAME)[0]!;
    assert.deepEqual(own(typed.labels), [
      ['vllm_n', '1.5'],
      ['vllm_b', 'true'],
      ['vllm_z', '0'],
    ]);
  },
);

test('hostile values in the resource: target_info and the constant labels get U+FFFD too', () => {
  const resource: Attributes = { 'service.name': 'l9gpu\u001b[31m', 'host.name': 'gpu\u0007001\u202e', 'cluster.name': 'a"b\\c\nd' };
  const f = checked(render([gauge({ 'vllm.i': '1' })], { resource }));
  assert.deepEqual(samples(f, 'target_info')[0]!.labels, {
    service_name: 'l9gpu\ufffd[31m',
    host_name: 'gpu\ufffd001\ufffd',
    cluster_name: 'a"b\\c\nd',
  });
  assert.deepEqual(samples(f, GAUGE_NAME)[0]!.labels, { vllm_i: '1', host_name: 'gpu\ufffd001\ufffd', cluster_name: 'a"b\\c\nd' });
});

test(
  'two points of one metric whose labels end up the same (names that sanitise alike, values ' +
    'that differ in replaced characters or lone surrogates only, a label left off): the later ' +
    'is left out and counted; other points stay',
  () => {
    const r = render(
      [
        gauge({ 'vllm.a.b': '1' }, 1),
        gauge({ 'vllm.a_b': '1' }, 2),
        gauge({ 'vllm.v': '\u001b' }, 3),
        gauge({ 'vllm.v': '\u0007' }, 4),
        gauge({ 'vllm.v': '\u009b' }, 5, OTHER),
        gauge({ 'process.owner': 'alice', 'vllm.w': '1' }, 6),
        gauge({ 'process.owner': 'bob', 'vllm.w': '1' }, 7),
        // lone surrogates: both are U+FFFD in UTF-8, one series
        gauge({ 'vllm.s': '\ud800' }, 12),
        gauge({ 'vllm.s': '\udc00' }, 13),
        gauge({ 'vllm.v': 'a' }, 8),
        gauge({ 'vllm.v': 'b' }, 9),
        // a metric's points in two runs: a repeat in a later run is left out too (3's on the gauge, 5's on the other)
        gauge({ 'vllm.v': '\u0085' }, 10),
        gauge({ 'vllm.v': '\u0085' }, 11, OTHER),
      ],
      { hide: new Set(['process.owner']) },
    );
    const f = checked(r);
    assert.equal(r.duplicates, 6);
    assert.deepEqual(
      samples(f, GAUGE_NAME).map((s) => [s.labels, s.value]),
      [
        [{ vllm_a_b: '1', host_name: 'gpu001', cluster_name: 'alps' }, 1],
        [{ vllm_v: '\ufffd', host_name: 'gpu001', cluster_name: 'alps' }, 3],
        [{ vllm_w: '1', host_name: 'gpu001', cluster_name: 'alps' }, 6],
        [{ vllm_s: '\ufffd', host_name: 'gpu001', cluster_name: 'alps' }, 12],
        [{ vllm_v: 'a', host_name: 'gpu001', cluster_name: 'alps' }, 8],
        [{ vllm_v: 'b', host_name: 'gpu001', cluster_name: 'alps' }, 9],
      ],
    );
    // the same labels on another metric are another series
    assert.deepEqual(
      samples(f, 'vllm_requests_waiting').map((s) => [s.labels.vllm_v, s.value]),
      [['\ufffd', 5]],
    );
    // one header per metric although its points came in runs
    assert.equal(r.text.split('\n').filter((l) => l === `# TYPE ${GAUGE_NAME} gauge`).length, 1);
  },
);

test("a histogram repeated under labels that end up the same is written once, with the first's buckets", () => {
  const other: HistogramValue = { bounds: [0.1, 1, 2.5], counts: [0, 0, 0, 1], sum: 30, count: 1 };
  const r = render([
    hist({ 'vllm.x': 'a', 'vllm._x': 'b' }),
    hist({ 'vllm.x': 'a', 'vllm._x': 'b' }, other),
    hist({ 'vllm.m': '\u001b' }, other),
    hist({ 'vllm.m': '\u0007' }),
  ]);
  const f = checked(r);
  assert.equal(r.duplicates, 2);
  assert.deepEqual(
    samples(f, `${HIST_NAME}_count`).map((s) => [own(s.labels), s.value]),
    [
      [
        [
          ['vllm_x', 'a'],
          ['vllm_x_1', 'b'],
        ],
        7,
      ],
      [[['vllm_m', '\ufffd']], 1],
    ],
  );
  assert.equal(samples(f, `${HIST_NAME}_bucket`).length, 8);
});

test(
  "stable attributes (an engine's series, page after page): their label sets are made once " +
    'and kept, the page is the same, and a repeat is still left out',
  () => {
    const a = stableAttributes({ 'vllm.x': 'plain', 'vllm._x': 'u\u001b' });
    const b = stableAttributes({ 'vllm._x': 'u\u0007', 'vllm.x': 'plain' });
    const c = stableAttributes({ 'vllm.x': 'plain', 'vllm._x': 'u\u009b' });
    const cache = new WeakMap<Attributes, string>();
    const w = new ByteBuffer();
    const pages: string[] = [];
    let duplicates = 0;
    for (let round = 0; round < 2; round++) {
      const lines = batchLines(batch([gauge(a, 1), gauge(b, 2), gauge(c, 3)]), w, constantLabels(RESOURCE, KEEP), {
        cache,
        duplicate: () => duplicates++,
      });
      const bytes = Buffer.concat(
        pagePieces(Buffer.from(targetInfo(RESOURCE)), [lines], (def) => Buffer.from(metricHeader(def)), Buffer.from(NO_METRICS)),
      );
      pages.push(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
      assert.ok(cache.has(a) && cache.has(b) && cache.has(c));
    }
    assert.equal(pages[0], pages[1]);
    assert.equal(duplicates, 2, 'c repeats a, each round');
    const f = checked({ bytes: Buffer.from(pages[0]!), text: pages[0]! });
    assert.deepEqual(
      samples(f, GAUGE_NAME).map((s) => [own(s.labels), s.value]),
      [
        [
          [
            ['vllm_x', 'plain'],
            ['vllm_x_1', 'u\ufffd'],
          ],
          1,
        ],
        [
          [
            ['vllm_x', 'u\ufffd'],
            ['vllm_x_1', 'plain'],
          ],
          2,
        ],
      ],
    );
  },
);

// the characters hostile names and values are drawn from
const NAME_PARTS = [
  'x',
  '_x',
  '.',
  '_',
  '__',
  'x.y',
  'x_y',
  'le',
  'le_1',
  'host.name',
  'host_name',
  '0',
  '9',
  'key_',
  'é',
  '日',
  '😀',
  '\ud800',
  '-',
  ' ',
  '"',
  '\\',
  '\n',
  '{',
  '}',
  '=',
  ',',
  'vllm.',
  '_1',
  '_2',
];
const VALUE_PARTS = [
  'a',
  ' ',
  '"',
  '\\',
  '\n',
  '\\n',
  '\t',
  '\r',
  '\u0000',
  '\u0007',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u009b',
  '\u202e',
  '\u2066',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\u200b',
  '\ud800',
  '\udc00',
  '😀',
  'é',
  '}',
  ',',
  '=',
];

test(
  'seeded hostile attribute sets: every page is one Prometheus and promtool take, each ' +
    "point's labels all there under unique names with its values, every series once",
  () => {
    const seed = Number(process.env.L9GPU_FUZZ_SEED ?? 20261202);
    const rand = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const word = (parts: readonly string[], max: number): string =>
      Array.from({ length: Math.floor(rand() * (max + 1)) }, () => pick(parts)).join('');
    const clean = (v: string): string =>
      Buffer.from(v)
        .toString('utf8')
        .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/gu, '\ufffd');
    const points: Point[] = [];
    for (let i = 0; i < 1500; i++) {
      let p: Point;
      if (rand() < 0.05 && points.length) {
        // an earlier point again, or with a control character swapped for another (the same label set once replaced)
        const was = points[Math.floor(rand() * points.length)]!;
        p = {
          ...was,
          attributes:
            rand() < 0.5
              ? was.attributes
              : Object.fromEntries(Object.entries(was.attributes).map(([k, v]) => [k, String(v).replace(/\u0007/g, '\u001b')])),
        };
      } else {
        const a: Attributes = {};
        const n = 1 + Math.floor(rand() * 6);
        for (let j = 0; j < n; j++) a[word(NAME_PARTS, 3)] = word(VALUE_PARTS, 4);
        p = rand() < 0.3 ? hist(a) : gauge(a, i);
      }
      points.push(p);
      const count = p.metric === HIST ? `${HIST_NAME}_count` : GAUGE_NAME;
      const keys = Object.keys(p.attributes);
      // each point alone, without constant labels: every attribute a label of its own, with its value
      const alone = Object.entries(samples(checked(render([p], { keep: undefined }), false), count)[0]!.labels);
      assert.equal(alone.length, keys.length, `seed ${seed} point ${i}: ${JSON.stringify(p.attributes)} -> ${JSON.stringify(alone)}`);
      assert.deepEqual(
        alone.map(([, v]) => v).sort(),
        Object.values(p.attributes)
          .map((v) => clean(String(v)))
          .sort(),
        `seed ${seed} point ${i}`,
      );
      // with them: host_name and cluster_name once each, the point's own where it has a label of that name
      const withConstant = samples(checked(render([p]), false), count)[0]!.labels;
      assert.ok('host_name' in withConstant && 'cluster_name' in withConstant, `seed ${seed} point ${i}: ${JSON.stringify(withConstant)}`);
      assert.ok(Object.keys(withConstant).length <= keys.length + 2);
    }
    // all of them on one page: promtool once, every series once
    const all = render(points);
    const f = checked(all);
    const written = samples(f, GAUGE_NAME).length + samples(f, `${HIST_NAME}_count`).length;
    assert.equal(written + all.duplicates, points.length, `seed ${seed}: each point written or counted as a repeat`);
    assert.ok(all.duplicates >= 1, `seed ${seed}: the run repeats some points`);
  },
);
