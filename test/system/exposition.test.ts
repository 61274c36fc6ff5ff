/**
 * The exposition parser (src/scrape/exposition.ts) case by case: what each
 * format allows, grouping by name rather than position, and an error naming
 * the line for everything else. The differential test against a real
 * VictoriaMetrics is test/system/exposition-vm.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExpositionError, formatOf, LabelSets, parseExposition, parsePage, type Family } from '../../src/scrape/exposition.js';

const fam = (fs: Family[], name: string): Family => {
  const f = fs.find((x) => x.name === name);
  assert.ok(f, `family ${name} in ${fs.map((x) => x.name).join(', ')}`);
  return f;
};
const fails = (page: string, line: number, re: RegExp, format: 'prometheus' | 'openmetrics' = 'prometheus') =>
  assert.throws(
    () => parseExposition(page, { format, source: 'test page' }),
    (e: unknown) => {
      assert.ok(e instanceof ExpositionError, String(e));
      assert.equal(e.line, line, e.message);
      assert.match(e.message, /^test page: line \d+: /);
      assert.match(e.message, re);
      return true;
    },
  );

test(
  'a labelled histogram keeps every label set apart, its _bucket/_sum/_count wherever they ' + 'stand (the npm parser collapses them)',
  () => {
    const fs = parseExposition(`# HELP lat Latency.
# TYPE lat histogram
lat_bucket{model="a",le="0.5"} 1
lat_bucket{model="b",le="0.5"} 4
lat_sum{model="a"} 0.25
lat_bucket{model="a",le="+Inf"} 2
lat_bucket{model="b",le="+Inf"} 5
lat_count{model="b"} 5
lat_count{model="a"} 2
lat_sum{model="b"} 2.5
lat_created{model="a"} 1.7e9
`);
    const f = fam(fs, 'lat');
    assert.equal(f.type, 'histogram');
    assert.equal(f.help, 'Latency.');
    assert.equal(f.samples.length, 9);
    assert.deepEqual(
      f.samples.filter((s) => s.labels.model === 'b').map((s) => [s.name, s.labels.le ?? '', s.value]),
      [
        ['lat_bucket', '0.5', 4],
        ['lat_bucket', '+Inf', 5],
        ['lat_count', '', 5],
        ['lat_sum', '', 2.5],
      ],
    );
    assert.equal(fs.length, 1, 'no stray family for the suffixed names');
    assert.equal(typeof f.samples[0]!.value, 'number');
  },
);

test('counters: Prometheus text names the family with _total; OpenMetrics without it, _total and _created its samples', () => {
  const prom = parseExposition('# TYPE req_total counter\nreq_total{a="1"} 3\n# TYPE req_created gauge\nreq_created{a="1"} 1.7e9\n');
  assert.deepEqual(
    prom.map((f) => [f.name, f.type, f.samples.length]),
    [
      ['req_total', 'counter', 1],
      ['req_created', 'gauge', 1],
    ],
  );
  const om = parseExposition('# TYPE req counter\n# HELP req Requests.\nreq_total{a="1"} 3\nreq_created{a="1"} 1.7e9\n# EOF\n', {
    format: 'openmetrics',
  });
  assert.deepEqual(
    om.map((f) => [f.name, f.type, f.help, f.samples.map((s) => s.name)]),
    [['req', 'counter', 'Requests.', ['req_total', 'req_created']]],
  );
});

test('values: NaN, +Inf, -Inf, Go-style inf/Infinity in any case, exponents; timestamps in ms (Prometheus) and in s (OpenMetrics)', () => {
  const fs = parseExposition('a NaN\nb +Inf\nc -Inf\nd inf\ne -infinity\nf 1.5e-3 1700000000123\ng -0.0\nh .5\ni 5.\n');
  const v = (n: string) => fam(fs, n).samples[0]!;
  assert.ok(Number.isNaN(v('a').value));
  assert.deepEqual(
    [v('b').value, v('c').value, v('d').value, v('e').value, v('f').value, v('h').value, v('i').value],
    [Infinity, -Infinity, Infinity, -Infinity, 0.0015, 0.5, 5],
  );
  assert.equal(v('f').timestampMs, 1700000000123);
  assert.ok(Object.is(v('g').value, -0));
  const om = parseExposition('# TYPE a gauge\na 1 1700000000.25\n# EOF\n', { format: 'openmetrics' });
  assert.equal(om[0]!.samples[0]!.timestampMs, 1700000000250);
});

test('numbers ParseFloat does not read are errors, not what Number() makes of them', () => {
  for (const bad of ['0x10', '0b1', '0o7', '1_000', '', 'Infinityx', '1e400', '--1', '+', 'nanx'])
    fails(`ok 1\nx ${bad}${bad === '' ? '' : ''}\n`, 2, bad === '' ? /no value/ : /is not a number/);
});

test(
  'label values: escapes \\\\ \\" \\n; an unknown escape stays as written (as Prometheus ' + 'keeps it); UTF-8; a trailing comma; blanks',
  () => {
    const fs = parseExposition('m{a="x\\"y\\\\z\\nq",b="\\t",c="é☃",} 1\nn { a = "1" , b="2" } 2\n');
    assert.deepEqual({ ...fam(fs, 'm').samples[0]!.labels }, { a: 'x"y\\z\nq', b: '\\t', c: 'é☃' });
    assert.deepEqual({ ...fam(fs, 'n').samples[0]!.labels }, { a: '1', b: '2' });
  },
);

test("a label named __proto__ is a label like any other, not the object's prototype", () => {
  const s = parseExposition('m{__proto__="x",constructor="y"} 1\n')[0]!.samples[0]!;
  assert.deepEqual(Object.entries(s.labels), [
    ['__proto__', 'x'],
    ['constructor', 'y'],
  ]);
  assert.equal(Object.getPrototypeOf(s.labels), Object.prototype);
});

test('Prometheus 3 quoted UTF-8 names: {"my.metric", "label.x"="v"} and # TYPE "my.metric"', () => {
  const fs = parseExposition('# HELP "my.metric" Dots.\n# TYPE "my.metric" gauge\n{"my.metric", "label.x"="v", plain="p"} 4\n');
  const f = fam(fs, 'my.metric');
  assert.equal(f.type, 'gauge');
  assert.equal(f.help, 'Dots.');
  assert.deepEqual({ ...f.samples[0]!.labels }, { 'label.x': 'v', plain: 'p' });
});

test('what Prometheus reads and a strict parser would refuse (issue 30): each loses a whole page if refused', () => {
  // an unknown escape in a label value, in either format: kept as written, as Prometheus' lexers and prometheus_client keep it
  assert.equal(parseExposition('m{a="x\\zy"} 1\n')[0]!.samples[0]!.labels.a, 'x\\zy');
  assert.equal(parseExposition('m{a="\\f\\z"} 1\n# EOF\n', { format: 'openmetrics' })[0]!.samples[0]!.labels.a, '\\f\\z');
  // comment lines indented with spaces or tabs (Prometheus text): still HELP and TYPE
  const ind = parseExposition('   # a comment\n  # HELP x Doc.\n\t\t#   TYPE   x counter\nx_total 2\n');
  assert.deepEqual([ind.length, fam(ind, 'x').type, fam(ind, 'x').help], [1, 'counter', 'Doc.']);
  // a value right after the labels' brace (Prometheus text): the lexer reads the value from there
  const touch = parseExposition('x{a="1"}-Inf\ny{ a = "2" , }+Inf 17\nz{}3\n');
  assert.deepEqual(
    touch.map((f) => [f.name, f.samples[0]!.value, f.samples[0]!.timestampMs]),
    [
      ['x', -Infinity, undefined],
      ['y', Infinity, 17],
      ['z', 3, undefined],
    ],
  );
  // the quoted metric name anywhere among the labels, in either format
  const q = parseExposition('{a="v", "my.metric", b="w"} 1\n');
  assert.deepEqual([q[0]!.name, { ...q[0]!.samples[0]!.labels }], ['my.metric', { a: 'v', b: 'w' }]);
  const qo = parseExposition('# TYPE "http.status" gauge\n{q="0.9","http.status",a="b"} 8\n# EOF\n', { format: 'openmetrics' });
  assert.deepEqual([qo[0]!.name, qo[0]!.type, { ...qo[0]!.samples[0]!.labels }], ['http.status', 'gauge', { q: '0.9', a: 'b' }]);
  // label pairs without the comma between them (Prometheus text; Prometheus' own parser takes them)
  const nc = parseExposition('s{ quantile = "2.0" a = "b" } 1\nt{a="1"b="2""c.d"="3"} 2\n');
  assert.deepEqual(
    nc.map((f) => ({ ...f.samples[0]!.labels })),
    [
      { quantile: '2.0', a: 'b' },
      { a: '1', b: '2', 'c.d': '3' },
    ],
  );
});

test('what stays an error around those forms: a second quoted name, a value after the bare name, and each of them in OpenMetrics', () => {
  fails('{"a", b="1", "c"} 1\n', 1, /"c": a second quoted metric name/);
  fails('m{"n"} 1\n', 1, /"n": a quoted metric name where a label belongs/);
  fails('ok 1\nx-1\n', 2, /x: unexpected "-" after the name/);
  fails('x{a="1"} 1 # {t="x"} 1\n', 1, /only OpenMetrics/);
  fails('x{a="b" 1\n', 1, /label a: unexpected "1" after its value/);
  fails(' # HELP x y\n# EOF\n', 1, /starts with white space/, 'openmetrics');
  fails('x{a="1"}-Inf\n# EOF\n', 1, /unexpected "-" after the labels/, 'openmetrics');
  fails('x{a="1" b="2"} 1\n# EOF\n', 1, /label a: unexpected " " after its value/, 'openmetrics');
});

test("OpenMetrics: one space between the parts and none at a line's end, as Prometheus' OpenMetrics lexer reads it", () => {
  fails('# HELP a\n# EOF\n', 1, /# HELP a: no space and text after the metric name/, 'openmetrics');
  fails('# UNIT a_s\n# EOF\n', 1, /# UNIT a_s: no space and text/, 'openmetrics');
  fails('# HELP a\tx\n# EOF\n', 1, /# HELP: a tab where OpenMetrics puts one space/, 'openmetrics');
  fails('a 1 \n# EOF\n', 1, /a: a space at the end of the line/, 'openmetrics');
  fails('a 1 2 \n# EOF\n', 1, /a: a space at the end of the line/, 'openmetrics');
  // an empty HELP text is one space and nothing: allowed; Prometheus text takes all of these
  assert.equal(parseExposition('# HELP a \na 1\n# EOF\n', { format: 'openmetrics' })[0]!.help, '');
  assert.deepEqual(
    parseExposition('# HELP a\n# HELP b\tx\na 1 \nb 1 2 \n').map((f) => [f.name, f.help]),
    [
      ['a', ''],
      ['b', 'x'],
    ],
  );
});

test('a summary: quantile samples under the bare name, _sum and _count beside them; untyped lines are families of their own', () => {
  const fs = parseExposition(
    '# TYPE rpc summary\nrpc{quantile="0.5"} 0.1\nrpc{quantile="0.99"} 0.9\nrpc_sum 12\nrpc_count 40\nloose 1\nloose_sum 2\n',
  );
  assert.deepEqual(
    fam(fs, 'rpc').samples.map((s) => s.name),
    ['rpc', 'rpc', 'rpc_sum', 'rpc_count'],
  );
  assert.equal(fam(fs, 'loose').type, 'untyped');
  assert.equal(fam(fs, 'loose_sum').type, 'untyped');
});

test('OpenMetrics: exemplars, # UNIT, # EOF required, nothing after it', () => {
  const fs = parseExposition(
    '# TYPE foo_seconds histogram\n# UNIT foo_seconds seconds\nfoo_seconds_bucket{le="1"} 2 # ' +
      '{trace_id="abc"} 0.5 1700000000\nfoo_seconds_bucket{le="+Inf"} 3\nfoo_seconds_count ' +
      '3\nfoo_seconds_sum 1.5\n# EOF\n',
    { format: 'openmetrics' },
  );
  const f = fam(fs, 'foo_seconds');
  assert.equal(f.unit, 'seconds');
  assert.deepEqual(f.samples[0]!.exemplar, { labels: { trace_id: 'abc' }, value: 0.5, timestampMs: 1700000000000 });
  fails('# TYPE a gauge\na 1\n', 2, /no # EOF/, 'openmetrics');
  fails('a 1\n# EOF\nb 2\n', 3, /after # EOF/, 'openmetrics');
  fails('# UNIT foo_bytes seconds\n# EOF\n', 1, /must end in _seconds/, 'openmetrics');
  fails('a 1 # {t="x"} 1\n', 1, /only OpenMetrics has them/);
});

test('the content type picks the format', () => {
  assert.equal(formatOf('application/openmetrics-text; version=1.0.0; charset=utf-8'), 'openmetrics');
  assert.equal(formatOf('text/plain; version=0.0.4; charset=utf-8'), 'prometheus');
  assert.equal(formatOf(undefined), 'prometheus');
});

test(
  'HELP before TYPE (real pages do it) types the family; a second TYPE, TYPE after samples, a ' + 'second HELP in OpenMetrics are errors',
  () => {
    const fs = parseExposition('# HELP q Queue.\n# TYPE q gauge\nq 1\n');
    assert.deepEqual([fs[0]!.type, fs[0]!.help], ['gauge', 'Queue.']);
    fails('# TYPE q gauge\n# TYPE q counter\n', 2, /TYPE q counter after # TYPE gauge/);
    fails('q 1\n# TYPE q gauge\n', 2, /after its samples/);
    fails('# HELP q a\n# HELP q b\n# EOF\n', 2, /second # HELP/, 'openmetrics');
    assert.equal(parseExposition('# HELP q a\n# HELP q b\nq 1\n')[0]!.help, 'a', 'Prometheus text: the first HELP stands');
  },
);

test('malformed lines: each an error naming its line and what is wrong', () => {
  fails('ok 1\nx{a="b" 1\n', 2, /label a: unexpected "1"/);
  fails('ok 1\nx{a=b} 1\n', 2, /label a: its value is not quoted/);
  fails('ok 1\n9x 1\n', 2, /"9x 1" is not a metric name/);
  fails('ok 1\nx 1 2 3\n', 2, /unexpected "3" after the timestamp/);
  fails('ok 1\nx 1 1.5\n', 2, /not an integer of milliseconds/);
  fails('x{a="1",a="2"} 1\n', 1, /label a twice/);
  fails('x{a="1"\n', 1, /closing "}"/);
  fails('x{a="1} 1\n', 1, /without its closing quote/);
  fails('# TYPE h histogram\nh_bucket 1\n', 2, /without an "le" label/);
  fails('# TYPE h histogram\nh 1\n', 2, /without the suffix its type needs/);
  fails('# TYPE x nonsense\n', 1, /unknown type "nonsense"/);
  fails('x\n', 1, /x: no value/);
});

test('bounded: a page over maxBytes and a line over maxLineLength are refused, naming the limit', () => {
  assert.throws(() => parseExposition('a 1\n'.repeat(100), { maxBytes: 300 }), { message: /over the 300 limit/ });
  assert.throws(() => parseExposition(`a 1\nb{x="${'y'.repeat(200)}"} 1\n`, { maxLineLength: 100 }), {
    message: /^line 2: line longer than 100 characters/,
  });
});

test('CRLF line ends and blank lines (Prometheus text) are read as plain lines; OpenMetrics allows no blank line', () => {
  const fs = parseExposition('# TYPE a gauge\r\na 1\r\n\r\n   \nb 2\r\n');
  assert.deepEqual(
    fs.map((f) => [f.name, f.samples[0]!.value]),
    [
      ['a', 1],
      ['b', 2],
    ],
  );
  fails('a 1\n\n# EOF\n', 2, /empty line/, 'openmetrics');
});

test(
  'maxSamples: a page of 250,000 series keeps at most the bound, counts the rest without ' + 'reading them, and costs no memory for them',
  () => {
    let page = '# TYPE g gauge\n';
    for (let i = 0; i < 250_000; i++) page += `g{i="${i}"} ${i}\n`;
    const before = process.memoryUsage().heapUsed;
    const p = parsePage(page, { maxSamples: 10_000 });
    const grew = process.memoryUsage().heapUsed - before;
    assert.ok(p.samples <= 10_000 && p.samples >= 9_990, `kept ${p.samples}`);
    assert.equal(p.samples + p.dropped, 250_000);
    assert.equal(fam(p.families, 'g').samples.length, p.samples);
    assert.equal(fam(p.families, 'g').samples.at(-1)!.labels.i, String(p.samples - 1), 'the first ones, in page order');
    // 10,000 samples are a few MB; 250,000 were over 60 MB
    assert.ok(grew < 20 * 2 ** 20, `heap grew ${(grew / 2 ** 20).toFixed(1)} MB`);
    // unbounded, the same page keeps everything
    assert.equal(parsePage(page).samples, 250_000);
  },
);

test(
  'maxSamples: declarations count too (a page of TYPE lines alone is bounded); past the bound ' +
    'OpenMetrics still needs its # EOF, and a bad line there is not read',
  () => {
    const types = Array.from({ length: 1000 }, (_, i) => `# TYPE f${i} gauge\n`).join('');
    assert.ok(parsePage(types, { maxSamples: 100 }).families.length <= 100);
    const om = `# TYPE a gauge\na 1\na{x="1"} 2\na{x="2"} 3\nthis is not { a sample\n# EOF\n`;
    const p = parsePage(om, { format: 'openmetrics', maxSamples: 3 });
    assert.equal(p.samples, 2);
    assert.equal(p.dropped, 2);
    assert.throws(() => parsePage(om.replace('# EOF\n', ''), { format: 'openmetrics', maxSamples: 3 }), /no # EOF/);
    assert.equal(parsePage('a 1\n', { maxSamples: 0 }).samples, 0);
  },
);

test(
  'LabelSets: a series on the next page of its source gets the same frozen labels (looked up ' +
    'in page order or by its text), reads as without them, and what left the page is forgotten',
  () => {
    const page = (models: string[], v: number) =>
      `# TYPE run gauge\n${models.map((m) => `run{engine="0",model_name="${m}"} ${v}\n`).join('')}odd{a="}",b="x"} 1\nbare 2\n`;
    const sets = new LabelSets();
    const models = Array.from({ length: 50 }, (_, i) => `org/model-with-a-long-name-${i}`);
    const p1 = parsePage(page(models, 1), { labelSets: sets });
    assert.deepEqual(p1, parsePage(page(models, 1)), 'the same families and samples as a parse without them');
    const labels1 = fam(p1.families, 'run').samples.map((s) => s.labels);
    assert.ok(labels1.every((l) => Object.isFrozen(l)));
    // the next page: the same series, one gone, one new, two swapped (looked up by text), new values
    const next = [...models.slice(1, 30), 'new-model', models[31]!, models[30]!, ...models.slice(32)];
    const p2 = parsePage(page(next, 2), { labelSets: sets });
    assert.deepEqual(p2, parsePage(page(next, 2)));
    const byModel = new Map(labels1.map((l) => [l.model_name, l]));
    for (const s of fam(p2.families, 'run').samples) {
      assert.equal(s.value, 2);
      if (s.labels.model_name === 'new-model') assert.ok(!byModel.has('new-model'));
      else assert.equal(s.labels, byModel.get(s.labels.model_name!), `${s.labels.model_name}: the same object`);
    }
    // a "}" inside a value: read whole, page after page
    assert.deepEqual(fam(p2.families, 'odd').samples[0]!.labels, { a: '}', b: 'x' });
    // what the second page did not have is gone after the third: two pages' sets at most
    parsePage(page(next, 3), { labelSets: sets });
    assert.equal(sets.size, next.length);
    // OpenMetrics reads label text otherwise: nothing of the Prometheus pages is handed to it
    const om = parsePage(`${page(next, 4)}# EOF\n`, { labelSets: sets, format: 'openmetrics' });
    assert.ok(fam(om.families, 'run').samples.every((s) => s.labels !== byModel.get(s.labels.model_name!)));
  },
);
