/**
 * Property-based fuzzing of every parser of text from outside: the recorded
 * real outputs (plugins' and slurm's testdata, the example config, this
 * machine's /proc files) mutated (truncated, a span replaced by hostile text,
 * lines dropped or repeated, a value swapped for NaN, 1e308, a negative, a
 * string, deep nesting, invalid UTF-8), plus text from nothing.
 *
 * The property, for each parser: a result whose every number is finite, or
 * an Error whose message names the source (never a TypeError or a stack
 * overflow: those are crashes), within a time bound. Seeded, so `npm test`
 * runs the same inputs every time; `npm run fuzz` runs many more
 * (L9GPU_FUZZ_RUNS, L9GPU_FUZZ_SEED) and prints the inputs tried per parser.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { loadAgentConfig } from '../../daemon/catalog.js';
import { emitMetrics, gpuEntries, parseIdentity } from '../../plugins/amdsmi/parse.js';
import { parseLoadavg, parseMeminfo, parseProcStat } from '../../plugins/host/index.js';
import { emitRows, parseCsv } from '../../plugins/hlsmi/parse.js';
import { parseGresLayout } from '../../slurm/gres.js';
import { expandHostlist, expandIndexList } from '../../slurm/hostlist.js';
import { parseGresDetail, parseSacct, parseScontrolJobs, parseSqueueJson } from '../../slurm/jobs-query.js';
import { parseListJobs, parseListPids } from '../../slurm/local-jobs.js';
import { parseSacctJob } from '../../slurm/sacct-job.js';
import { ConfigError } from '../../src/core/config/schema.js';
import { PointBuffer } from '../../src/core/metrics/model.js';
import { decodeExportResponse } from '../../src/sinks/otlp-proto.js';
import { ConvertState, convertPage, type EngineTable } from '../../src/scrape/convert.js';
import { LabelSets, parseExposition, parsePage, type ParsedPage } from '../../src/scrape/exposition.js';
import { VLLM_TABLE } from '../../plugins/vllm/index.js';
import { SGLANG_TABLE } from '../../plugins/sglang/index.js';
import { TGI_TABLE } from '../../plugins/tgi/index.js';
import { TRITON_TABLE } from '../../plugins/triton/index.js';
import { NIM_TABLE } from '../../plugins/nim/index.js';
import { dcgmTable } from '../../plugins/dcgm/index.js';
import { parseInspectorLine } from '../../plugins/nccl/parse.js';
import { readPromText } from '../../plugins/nccl/prom.js';
import { bandwidth } from '../../src/nccl/bandwidth.js';
import { ROOT, tempDir } from '../helpers/paths.js';

const RUNS = Number(process.env.L9GPU_FUZZ_RUNS ?? 120);
const SEED = Number(process.env.L9GPU_FUZZ_SEED ?? 20261123);
/** A parser given one input of at most a few hundred KB has no business taking longer. */
const MAX_MS_PER_INPUT = 2000;
const tried = new Map<string, number>();
after(() => {
  if (process.env.L9GPU_FUZZ_REPORT)
    for (const [name, n] of tried) process.stdout.write(`fuzz: ${name}: ${n} inputs, every one a value or a named error\n`);
});

const HOSTILE = [
  'NaN',
  '-1',
  '-0',
  '1e308',
  '-1e308',
  '1e999',
  'Infinity',
  '0x10',
  '',
  ' ',
  '"',
  '""',
  'null',
  'true',
  '[]',
  '{}',
  '[N/A]',
  'N/A',
  '\u0000',
  '\x1b]0;t\x07',
  '\r\n',
  '\n\n',
  '\ufffd',
  '\ud800',
  '%',
  '%%',
  '=',
  ',',
  ';',
  '#',
  '[',
  ']',
  '(',
  ')',
  '\\',
  "'",
  '9'.repeat(400),
  'a'.repeat(5000),
  '[[[[[[[[[[',
  '{"a":'.repeat(50),
  '-9007199254740993',
  '18446744073709551615',
];

/** Text from a recorded base, mutated the ways real output goes wrong. */
function mutated(base: string): fc.Arbitrary<string> {
  const at = fc.nat({ max: Math.max(0, base.length) });
  const junk = fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ maxLength: 40 }), fc.fullUnicodeString({ maxLength: 20 }));
  return fc.oneof(
    at.map((n) => base.slice(0, n)),
    fc.tuple(at, at, junk).map(([a, b, j]) => base.slice(0, Math.min(a, b)) + j + base.slice(Math.max(a, b))),
    fc.tuple(at, junk).map(([a, j]) => base.slice(0, a) + j + base.slice(a)),
    // a value-looking token swapped for a hostile one
    fc.tuple(fc.nat(), junk).map(([k, j]) => {
      const tokens = [...base.matchAll(/-?\d+(?:\.\d+)?|"[^"\n]{0,40}"|\b[A-Za-z_]{2,20}\b/g)];
      if (!tokens.length) return base + j;
      const m = tokens[k % tokens.length]!;
      return base.slice(0, m.index) + j + base.slice(m.index! + m[0].length);
    }),
    fc.array(fc.nat(), { maxLength: 6 }).map((picks) => {
      const lines = base.split('\n');
      for (const p of picks) {
        const i = p % Math.max(1, lines.length);
        if (p % 3 === 0) lines.splice(i, 1);
        else lines.splice(i, 0, lines[(p >> 2) % Math.max(1, lines.length)] ?? '');
      }
      return lines.join('\n');
    }),
    fc.string({ maxLength: 200 }),
  );
}

/** JSON of a recorded base with one leaf or object replaced by any JSON value (wrong types, deep nesting). */
function mutatedJson(base: string): fc.Arbitrary<string> {
  const doc = JSON.parse(base) as unknown;
  const paths: (string | number)[][] = [];
  const walk = (v: unknown, path: (string | number)[]): void => {
    paths.push(path);
    if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, Array.isArray(v) ? Number(k) : k]);
  };
  walk(doc, []);
  const deep = fc.nat({ max: 5000 }).map((n) => JSON.parse('['.repeat((n % 3000) + 1) + ']'.repeat((n % 3000) + 1)) as unknown);
  const value = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom<unknown>(
      1e308,
      -1e308,
      -1,
      'NaN',
      'Infinity',
      '1e999',
      null,
      {},
      [],
      { value: 'x', unit: 'W' },
      { value: 5, unit: 'furlongs' },
    ),
    deep,
  );
  return fc.oneof(
    fc.tuple(fc.nat(), value).map(([i, v]) => {
      const copy = JSON.parse(base) as unknown;
      const path = paths[i % paths.length]!;
      if (path.length === 0) return JSON.stringify(v);
      let o = copy as Record<string | number, unknown>;
      for (const k of path.slice(0, -1)) o = o[k] as Record<string | number, unknown>;
      o[path[path.length - 1]!] = v;
      return JSON.stringify(copy);
    }),
    mutated(base),
  );
}

/** Every number in a value (deep): all must be finite. */
function assertFinite(v: unknown, where = 'result'): void {
  if (typeof v === 'number') assert.ok(Number.isFinite(v), `${where} is ${v}`);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v as Record<string, unknown>)) assertFinite(x, `${where}.${k}`);
}

function fuzz(name: string, inputs: fc.Arbitrary<string>, parse: (s: string) => unknown, errorNames: RegExp): void {
  test(`fuzz ${name}: a value with finite numbers, or an error naming the source`, () => {
    let n = 0;
    fc.assert(
      fc.property(inputs, (s) => {
        n++;
        const t = performance.now();
        let out: unknown;
        try {
          out = parse(s);
        } catch (e) {
          assert.ok(e instanceof Error, `threw a non-Error: ${String(e)}`);
          assert.ok(!(e instanceof TypeError) && !(e instanceof RangeError), `crashed: ${e.stack}`);
          assert.match(e.message, errorNames, `the error names the source: ${e.message.slice(0, 200)}`);
          return;
        } finally {
          assert.ok(performance.now() - t < MAX_MS_PER_INPUT, `took ${Math.round(performance.now() - t)} ms`);
        }
        assertFinite(out);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    tried.set(name, n);
  });
}

const read = (...p: string[]) => readFileSync(join(ROOT, ...p), 'utf8');
const points = (b: PointBuffer) => b.points.map((p) => ({ v: p.value, a: p.attributes }));

for (const c of readdirSync(join(ROOT, 'plugins', 'hlsmi', 'testdata')).filter((f) => !f.includes('.'))) {
  fuzz(
    `hl-smi csv (${c})`,
    mutated(read('plugins', 'hlsmi', 'testdata', c, 'hl-smi.csv')),
    (s) => {
      const b = new PointBuffer();
      emitRows(parseCsv(s, 'hl-smi -f csv'), b, 0);
      return points(b);
    },
    /^hl-smi/,
  );
}

for (const c of readdirSync(join(ROOT, 'plugins', 'amdsmi', 'testdata')).filter((f) => !f.includes('.'))) {
  const td = (f: string) => read('plugins', 'amdsmi', 'testdata', c, f);
  const ids = new Map(parseIdentity(td('list.json'), td('static.json'), () => {}).map((g) => [g.index, g]));
  fuzz(
    `amd-smi metric --json (${c})`,
    mutatedJson(td('metric.json')),
    (s) => {
      const b = new PointBuffer();
      emitMetrics(s, ids, b, 0);
      return points(b);
    },
    /^amd-smi/,
  );
  fuzz(`amd-smi list/static --json (${c})`, mutatedJson(td('static.json')), (s) => parseIdentity(td('list.json'), s, () => {}), /^amd-smi/);
}

const SLURM_TD = ['slurm', 'testdata'];
for (const f of readdirSync(join(ROOT, ...SLURM_TD), { withFileTypes: true })
  .filter((d) => d.isFile())
  .map((d) => d.name)) {
  const base = read(...SLURM_TD, f);
  if (f.startsWith('squeue-')) fuzz(`squeue --json (${f})`, mutatedJson(base), parseSqueueJson, /^squeue --json/);
  if (f.startsWith('scontrol-json-')) fuzz(`scontrol --json show job (${f})`, mutatedJson(base), parseSqueueJson, /^squeue --json/);
  if (f.startsWith('scontrol-show-job')) fuzz(`scontrol show job -d (${f})`, mutated(base), parseScontrolJobs, /^scontrol show job/);
  if (f.startsWith('sacct-')) fuzz(`sacct -P (${f})`, mutated(base), parseSacct, /^sacct/);
  if (f.startsWith('scontrol-listjobs'))
    fuzz(`scontrol listjobs (${f})`, mutated(base), (s) => [...parseListJobs(s)], /^scontrol listjobs/);
  if (f.startsWith('scontrol-listpids'))
    fuzz(`scontrol listpids (${f})`, mutated(base), (s) => [...parseListPids(s)], /^scontrol listpids/);
}

for (const f of readdirSync(join(ROOT, ...SLURM_TD, 'sacct')).filter((n) => /\.(psv|usv)$/.test(n))) {
  const base = read(...SLURM_TD, 'sacct', f);
  // the fixture's own job: its fields are parsed, not only its lines split
  const id = base
    .split('\n')
    .find((l) => !l.startsWith('JobID'))!
    .split(/[|\x1f]/)[1]!;
  fuzz(`sacct -j (${f})`, mutated(base), (s) => parseSacctJob(s, id), /^sacct -j \d+: /);
}

fuzz('hostlist', mutated('gpu[001-004,010],login[1-2],n-[9-11]x'), (s) => expandHostlist(s), /^hostlist/);
fuzz('GRES index list', mutated('0-3,5,7-8'), (s) => expandIndexList(s), /^(hostlist|GRES|index)/);
fuzz('gres_detail', mutated('gpu:h100:2(IDX:0-1),shard:h100:4(0/8,0/8)'), (s) => parseGresDetail(s), /^(hostlist|GRES|gres)/);
fuzz(
  'gres.conf',
  mutated(
    '# recorded layout\nAutoDetect=off\nNodeName=gpu[01-04] Name=gpu Type=h100 ' +
      'File=/dev/nvidia[0-3]\nNodeName=gpu05 Name=gpu File=/dev/nvidia0,/dev/nvidia1 ' +
      'Cores=0-15\nName=shard Count=8\n',
  ),
  (s) => parseGresLayout(s, 'gpu02'),
  /^(hostlist|gres\.conf)/,
);

// NCCL Inspector JSON lines: the README's example line, mutated
fuzz(
  'NCCL Inspector line',
  mutatedJson(
    '{"header":{"id":"0x7f8c496ae9f661","comm_name":"unknown","rank":2,"n_ranks":8,"nnodes":1},' +
      '"metadata":{"inspector_output_format_version":"v4.0","git_rev":"",' +
      '"rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1748030377748202,' +
      '"hostname":"node01","pid":1639453},"coll_perf":{"coll":"AllReduce","coll_sn":1407,' +
      '"coll_msg_size_bytes":17179869184,"coll_exec_time_us":61974,' +
      '"coll_timing_source":"kernel_gpu","coll_algobw_gbs":277.210914,' +
      '"coll_busbw_gbs":485.119099}}',
  ),
  (s) => {
    const r = parseInspectorLine(s, 'node01-pid1.log:1');
    return { ...r, bw: bandwidth(r.op, r.bytes, r.execS, r.nRanks) };
  },
  /^node01-pid1\.log:1: /,
);

// the Inspector's Prometheus files, 2.29 (per collective) and 2.30 (per interval), mutated: records and points, or an error naming the file
for (const c of ['v2.29.7-prom-per-collective', 'v2.30.3-prom-interval']) {
  const d = join(ROOT, 'plugins', 'nccl', 'testdata', c);
  const f = readdirSync(d).find((n) => n.endsWith('.prom'))!;
  fuzz(
    `NCCL Inspector .prom (${c})`,
    mutated(readFileSync(join(d, f), 'utf8')),
    (s) => readPromText(s, 'x.prom', new Set(['node01']), 'GPU-x', '7'),
    /^x\.prom/,
  );
}

// /metrics pages: every recorded engine and dcgm-exporter page, mutated, through the parser and its plugin's table
const TABLES: Record<string, EngineTable> = {
  vllm: VLLM_TABLE,
  sglang: SGLANG_TABLE,
  tgi: TGI_TABLE,
  triton: TRITON_TABLE,
  nim: NIM_TABLE,
  dcgm: dcgmTable(true),
};
for (const [plugin, table] of Object.entries(TABLES)) {
  for (const c of readdirSync(join(ROOT, 'plugins', plugin, 'testdata'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)) {
    fuzz(
      `/metrics page (${plugin} ${c})`,
      mutated(read('plugins', plugin, 'testdata', c, 'page.prom')),
      (s) => {
        const b = new PointBuffer();
        const state = new ConvertState();
        state.begin();
        convertPage(table, parseExposition(s, { source: 'page', maxLineLength: 4096 }), { out: b, state, base: {}, now: 0 });
        return points(b);
      },
      /^page: line \d+: /,
    );
  }
}

// the label sets a source's last pages left (LabelSets, handed to its next page): a page reads the same with them as
// without them, or fails the same, whatever the page and whatever the pages before it (the sets carry over failed
// pages, and pages of the other format)
const sets = new LabelSets();
const vllmLarge = read('plugins', 'vllm', 'testdata', 'built-vllm-0.10-large', 'page.prom');
parsePage(vllmLarge, { labelSets: sets });
fuzz(
  '/metrics page read with the label sets of the pages before it (vllm built-vllm-0.10-large)',
  mutated(vllmLarge),
  (s) => {
    const o = { source: 'page', maxLineLength: 4096, format: s.length % 3 === 0 ? ('openmetrics' as const) : ('prometheus' as const) };
    const read = (labelSets?: LabelSets): ParsedPage | Error => {
      try {
        return parsePage(s, { ...o, ...(labelSets ? { labelSets } : {}) });
      } catch (e) {
        return e as Error;
      }
    };
    const plain = read();
    const kept = read(sets);
    if (plain instanceof Error) {
      assert.equal(kept instanceof Error ? kept.message : 'no error', plain.message);
      throw plain;
    }
    assert.deepEqual(kept, plain);
    return plain.samples;
  },
  /^page: line \d+: /,
);

for (const [file, parse] of [
  ['/proc/stat', parseProcStat],
  ['/proc/meminfo', parseMeminfo],
  ['/proc/loadavg', parseLoadavg],
] as const) {
  fuzz(`${file} (this machine's)`, mutated(readFileSync(file, 'utf8')), (s) => parse(s, file), new RegExp(`^${file}`));
}

fuzz(
  'OTLP export response (protobuf)',
  fc
    .oneof(fc.uint8Array({ maxLength: 64 }), fc.constant(Uint8Array.from([0x0a, 0x05, 0x08, 0x03, 0x12, 0x01, 0x78])))
    .map((b) => Buffer.from(b).toString('latin1')),
  (s) => decodeExportResponse(Buffer.from(s, 'latin1')),
  /^OTLP response/,
);

const iniDir = tempDir('l9gpu-fuzz-ini-');
let iniN = 0;
fuzz(
  'INI config (docs/l9gpu.example.ini)',
  mutated(read('docs', 'l9gpu.example.ini')),
  (s) => {
    const f = join(iniDir, `c${iniN++ % 4}.ini`);
    writeFileSync(f, s);
    try {
      return loadAgentConfig({ configPath: f, env: {} }).section('daemon');
    } catch (e) {
      assert.ok(e instanceof ConfigError, `not a ConfigError: ${(e as Error).stack}`);
      throw e;
    }
  },
  /^(config file )?\/\S+\.ini/,
);

test("gpuEntries (amd-smi's shapes): 10,000-deep nesting is read as no GPU, not a stack overflow", () => {
  const deep = '['.repeat(10_000) + ']'.repeat(10_000);
  assert.deepEqual(gpuEntries(deep, 'amd-smi metric --json'), []);
});

test("oversized input at the tool runner's bound (16 MB of output; a 10 MB line): a value or a named error, in bounded time", () => {
  const line = 'x'.repeat(10 << 20);
  const hl = read('plugins', 'hlsmi', 'testdata', 'units', 'hl-smi.csv');
  const amd = read('plugins', 'amdsmi', 'testdata', 'mi300x', 'metric.json');
  /** The error each may give, or undefined where a value must come back. */
  const cases: [string, () => unknown, RegExp | undefined][] = [
    ['hl-smi: a 10 MB line', () => parseCsv(`${hl}${line}\n`, 'hl-smi -f csv'), /^hl-smi -f csv: line \d+ has 1 fields/],
    [
      'hl-smi: 16 MB of rows',
      () =>
        parseCsv(
          hl +
            hl
              .split('\n')[1]!
              .concat('\n')
              .repeat(Math.floor((16 << 20) / hl.length)),
          'hl-smi -f csv',
        ).length,
      undefined,
    ],
    [
      'amd-smi: a 10 MB string value',
      () => gpuEntries(amd.replace('"N/A"', JSON.stringify(line)), 'amd-smi metric --json').length,
      undefined,
    ],
    [
      'squeue: a 10 MB node list',
      () => parseSqueueJson(JSON.stringify({ jobs: [{ job_id: 1, nodes: `n[${line}]` }] })),
      /^squeue --json: jobs\[0\] nodes: hostlist "n\[x{78}\.\.\. \(10485763 characters\)": bad range/,
    ],
    ['sacct: a 10 MB line', () => parseSacct(`1|1|RUNNING|0:0|Unknown|${line}\n`), undefined],
    ['hostlist: a 10 MB expression', () => expandHostlist(line), undefined],
  ];
  for (const [what, run, error] of cases) {
    const t = performance.now();
    try {
      const out = run();
      assertFinite(out, what);
    } catch (e) {
      assert.ok(error, `${what}: a value, not ${(e as Error).message.slice(0, 200)}`);
      assert.match((e as Error).message.slice(0, 300), error, what);
      assert.ok((e as Error).message.length < 1000, `${what}: the error quotes the input's start, not all of it`);
    }
    assert.ok(performance.now() - t < 5000, `${what}: ${Math.round(performance.now() - t)} ms`);
  }
});

test('what the fuzz suite found, kept as cases: each input a value or a named error now', () => {
  const hl = read('plugins', 'hlsmi', 'testdata', 'units', 'hl-smi.csv').split('\n');
  const sacctHead = 'JobIDRaw|JobID|State|ExitCode|DerivedExitCode|Start|End|Elapsed|User|Account|Partition|JobName|AllocTRES|NodeList';
  // a garbled time: unknown (null), never NaN
  assert.deepEqual(
    parseSacct(
      `${sacctHead}\n1|1|COMPLETED|0:0|0:0|2026-11-21T08:33:57|2026-11\ud81e\udd9eT08:34:27|00:00:30|root|root|gpu|myjob|billing=1|vm\n`,
    ).map((r) => [r.start, r.end]),
    [[Date.parse('2026-11-21T08:33:57'), null]],
  );
  assert.equal(
    parseScontrolJobs(
      'JobId=4249 JobName=x\n   UserId=a(1) JobState=RUNNING Partition=gpu NodeList=n1\n   ' +
        'StartTime=2026-11-2x1T08:33:20 EndTime=Unknown\n',
    )[0]!.startTime,
    null,
  );
  // a time of 1e308 s: no time
  assert.equal(
    parseSqueueJson(JSON.stringify({ jobs: [{ job_id: 1, end_time: { set: true, infinite: false, number: 1e308 } }] }))[0]!.endTime,
    null,
  );
  // null, and a null job: named errors, not TypeErrors
  assert.throws(() => parseSqueueJson('null'), { message: 'squeue --json: not an object: null' });
  assert.throws(() => parseSqueueJson('{"jobs":[null]}'), { message: 'squeue --json: jobs[0] is not an object' });
  // an object whose "toString" is a string: String() of it threw a TypeError (found by npm run fuzz, seed 1795441808)
  const odd = parseSqueueJson('{"jobs":[{"job_id":7,"job_state":{"toString":"x"},"nodes":"n1","gres_detail":[{"toString":"y"}]}]}');
  assert.deepEqual([odd[0]!.jobId, odd[0]!.state, odd[0]!.gpuIdx], ['7', '', { n1: [] }]);
  // a range of 400 digits looped for ever; two groups of 100,000 killed the process (V8: invalid size)
  assert.throws(() => expandHostlist(`n[1-${'9'.repeat(400)}]`), { message: /^hostlist "n\[1-9{70}.*": number too large in "1-9{70}/ });
  assert.throws(() => expandHostlist('a[0-60000]b[0-60000]'), {
    message: 'hostlist "a[0-60000]b[0-60000]" expands to more than 100000 names',
  });
  assert.throws(() => expandHostlist('a[0-60000,0-60000]'), { message: 'hostlist "a[0-60000,0-60000]" expands to more than 100000 names' });
  // a /proc/meminfo value past 2^53: the line skipped, not Infinity
  assert.equal(parseMeminfo(`MemTotal: 100 kB\nSecPageTables: ${'9'.repeat(400)} kB\n`, '/proc/meminfo').SecPageTables, undefined);
  // a varint of 150 bytes: NaN rejected points before
  assert.throws(() => decodeExportResponse(Uint8Array.from([0x0a, 0x20, 0x08, ...Array<number>(150).fill(0x80), 0x01])), {
    message: /^OTLP response: a varint longer than 10 bytes at byte \d+ of 154$/,
  });
  // amd-smi: a name that is an object is no name, an index of 1e308 or -1 no GPU
  const [amdId] = parseIdentity(
    '[{"gpu":0,"uuid":{"toString":"x"},"bdf":"0000:0c:00.0"},{"gpu":1e308},{"gpu":-1}]',
    '[{"gpu":0,"asic":{"market_name":{"a":1}}}]',
    () => {},
  );
  assert.deepEqual([amdId!.uuid, amdId!.model, amdId!.bdf], ['', 'AMD GPU', '0000:0c:00.0']);
  assert.equal(parseIdentity('[{"gpu":1e308},{"gpu":-1},{"gpu":1.5}]', '[]', () => {}).length, 0);
  // a power cap of 1e308 kW overflowed to Infinity in the unit conversion (npm run fuzz, seed 1795442100): unreadable, said
  const said: string[] = [];
  const [capped] = parseIdentity('[{"gpu":0,"uuid":"u"}]', '[{"gpu":0,"limit":{"socket_power":{"value":1e308,"unit":"kW"}}}]', (f, why) =>
    said.push(`${f}: ${why}`),
  );
  assert.equal(capped!.powerLimitW, undefined);
  assert.deepEqual(said, ['amd-smi static --json gpu 0 limit: 1e+308 kW is beyond what a number holds']);
  // and a bare 1e999, which JSON.parse makes Infinity, or 400 digits in a string (the same seed, after the fix above)
  for (const cap of ['1e999', `"${'9'.repeat(400)}"`]) {
    assert.equal(
      parseIdentity('[{"gpu":0,"uuid":"u"}]', `[{"gpu":0,"limit":{"socket_power":${cap}}}]`, () => {})[0]!.powerLimitW,
      undefined,
      cap,
    );
  }
  // an hl-smi index of 400 digits: no index, not Infinity
  const b = new PointBuffer();
  emitRows(parseCsv([hl[0], hl[1]!.replace(/^0,/, `${'9'.repeat(400)},`)].join('\n'), 'hl-smi -f csv'), b, 0);
  assert.ok(b.points.length > 0 && b.points.every((p) => p.attributes['gpu.index'] === -1));
});
