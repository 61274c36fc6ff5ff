/**
 * The node's /metrics page against hostile engine pages. Under [daemon]
 * engines = auto the root daemon scrapes any process whose command line reads
 * `vllm serve` (src/scrape/discover.ts), here an unprivileged user's (nobody,
 * through runuser, as test/alone/engines-hostile.test.ts serves them), and
 * republishes the page's series on its own pull page: label names and values
 * are the user's. One series a scraper cannot take loses the whole page, every
 * GPU of the node (up = 0). Real Prometheus 2.42 and 3.5 scrape the daemon
 * for the whole run, beside the sim plugin's GPUs; every page the daemon
 * serves is fetched here too and held to promtool check metrics and to no raw
 * control or invisible format character.
 *
 * The pages bring what Prometheus refuses a page for, as far as a user's page
 * can carry it onto ours (tried against both: a label named twice in one
 * series, a label named __name__ or led by a digit, invalid UTF-8 in a value;
 * a BOM or a CR line end too, but the page's lines are ours): names that
 * collide once sanitised (x and _x, x.y and x_y, UTF-8 names, __name__, le),
 * values with every control class, an OpenMetrics page of quoted UTF-8 names,
 * invalid UTF-8, and series repeated. Prometheus takes raw control
 * characters, and keeps the first of a repeated series without a word: the
 * page is held to have neither all the same (REPEATED's aside, see there).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { boundLabel } from '../../src/core/bound-label.js';
import { parseExposition } from '../../src/scrape/exposition.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { Prometheus, promtoolCheckMetrics } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/wait.js';

/** [limits] label_length's default: a longer value goes out cut. */
const LABEL_LENGTH = 256;
/** Scrapes of each Prometheus the run lasts at least. */
const SCRAPES = 12;

type Row = {
  readonly family: 'gauge' | 'counter' | 'histogram';
  readonly labels: readonly (readonly [string, string])[];
  readonly value: number;
};

interface Page {
  readonly name: string;
  readonly rows: readonly Row[];
  /** OpenMetrics (its content type, quoted names, # EOF) instead of Prometheus text. */
  readonly openmetrics?: boolean;
  /** Bytes written raw into the page (invalid UTF-8): the daemon reads no such page, as Prometheus reads none. */
  readonly raw?: Buffer;
}

const g = (labels: [string, string][], value = 1): Row => ({ family: 'gauge', labels, value });

/**
 * Label names that collide once sanitised, and names Prometheus refuses
 * (__name__, digit-led, quoted UTF-8 in Prometheus 2.42): each would be a
 * label twice or an invalid one on our page if written as it came.
 */
const COLLIDE: Page = {
  name: 'collide',
  rows: [
    g([
      ['row', 'c1'],
      ['x', 'plain'],
      ['_x', 'underscore'],
      ['model_name', 'm'],
    ]),
    g([
      ['row', 'c2'],
      ['x.y', 'dot'],
      ['x_y', 'under'],
      ['x__y', 'double'],
      ['x_y_1', 'one'],
      ['x-y', 'dash'],
      ['model_name', 'm'],
    ]),
    g([
      ['row', 'c3'],
      ['é', 'e'],
      ['ü', 'u'],
      ['日本', 'cjk'],
      ['😀', 'emoji'],
      ['\u212a', 'kelvin'],
      ['k', 'k'],
      ['model_name', 'm'],
    ]),
    g([
      ['row', 'c4'],
      ['le', 'le'],
      ['le_1', 'le1'],
      ['_le', 'ule'],
      ['model_name', 'm'],
    ]),
    g([
      ['row', 'c5'],
      ['__name__', 'other_metric'],
      ['__x', 'dunder'],
      ['0', 'digit'],
      ['1x', 'digitx'],
      ['.', 'dot'],
      ['_', 'underscore'],
      ['model_name', 'm'],
    ]),
    g([
      ['row', 'c6'],
      ['job', 'j'],
      ['instance', 'i'],
      ['exported_job', 'e'],
      ['host_name', 'h'],
      ['host.name', 'h2'],
      ['cluster_name', 'c'],
      ['model_name', 'm'],
    ]),
    {
      family: 'histogram',
      labels: [
        ['row', 'c7'],
        ['x', 'a'],
        ['_x', 'b'],
        ['le.x', 'c'],
        ['model_name', 'm'],
      ],
      value: 3,
    },
  ],
};

/** Label values with every control class: C0 (ESC sequences, BEL, CR, NUL, VT, FF), DEL, C1, bidi and zero-width format characters, U+2028.
 * */
const CONTROL: Page = {
  name: 'control',
  rows: [
    g([
      ['row', 'v1'],
      ['model_name', 'esc\u001b[2J\u001b]0;pwned\u0007'],
      ['v', 'cr\rbel\u0007nul\u0000del\u007f'],
    ]),
    g([
      ['row', 'v2'],
      ['model_name', 'c1 \u0085 \u009b31m'],
      ['v', 'bidi \u202e \u2066 \u2028 \u2029 \ufeff \u200b'],
    ]),
    g([
      ['row', 'v3'],
      ['model_name', 'quote " backslash \\ newline \n end\\'],
      ['v', 'tab\tvt\u000bff\u000c'],
    ]),
    g([
      ['row', 'v4'],
      ['model_name', `${'😀'.repeat(200)}\u001b`],
      ['v', 'long'],
    ]),
    // one series once replaced: the first stays
    g(
      [
        ['row', 'v5'],
        ['model_name', 'dup'],
        ['v', '\u001b'],
      ],
      4,
    ),
    g(
      [
        ['row', 'v5'],
        ['model_name', 'dup'],
        ['v', '\u0007'],
      ],
      5,
    ),
  ],
};

/** OpenMetrics with Prometheus 3's quoted UTF-8 names, the metric name among the labels too. */
const OPENMETRICS: Page = {
  name: 'openmetrics',
  openmetrics: true,
  rows: [
    g([
      ['row', 'o1'],
      ['x', 'a'],
      ['_x', 'b'],
      ['x.y', 'c'],
      ['x_y', 'd'],
      ['😀', 'emoji'],
      ['model_name', 'om'],
    ]),
    g(
      [
        ['row', 'o2'],
        ['k.1', 'v'],
        ['k_1', 'w'],
        ['le', 'l'],
        ['model_name', 'om'],
      ],
      2,
    ),
    {
      family: 'counter',
      labels: [
        ['row', 'o3'],
        ['a.b', '1'],
        ['a_b', '2'],
        ['model_name', 'om'],
      ],
      value: 5,
    },
  ],
};

/**
 * One series twice in ways the page's text tells apart and Prometheus does
 * not: labels in another order, an empty value beside no label. The daemon
 * writes both (batchLines compares label text), and Prometheus keeps the
 * first and drops the other without failing the scrape.
 */
const REPEATED: Page = {
  name: 'repeated',
  rows: [
    g(
      [
        ['a', '1'],
        ['b', '2'],
        ['model_name', 'rep'],
      ],
      1,
    ),
    g(
      [
        ['b', '2'],
        ['a', '1'],
        ['model_name', 'rep'],
      ],
      2,
    ),
    g(
      [
        ['c', ''],
        ['model_name', 'rep'],
      ],
      3,
    ),
    g([['model_name', 'rep']], 4),
  ],
};

/** A value of bytes that are no UTF-8: Prometheus refuses such a page whole (invalid UTF-8 label value). */
const INVALID_UTF8: Page = {
  name: 'invalid-utf8',
  rows: [],
  raw: Buffer.concat([
    Buffer.from('# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="bad '),
    Buffer.from([0xff, 0xfe, 0xc0, 0x80]),
    Buffer.from('",row="u1"} 7\n'),
  ]),
};

const PAGES = [COLLIDE, CONTROL, OPENMETRICS, REPEATED, INVALID_UTF8];
const TAKEN = PAGES.filter((p) => !p.raw);

const LEGACY = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const quoted = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

/** A page's text: a legacy name bare, any other quoted; values escaped as the format says, control characters raw. */
function pageText(p: Page): Buffer {
  if (p.raw) return p.raw;
  const families: Record<Row['family'], { name: string; type: string; rows: Row[] }> = {
    gauge: { name: 'vllm:num_requests_running', type: 'gauge', rows: [] },
    counter: { name: 'vllm:prompt_tokens', type: 'counter', rows: [] },
    histogram: { name: 'vllm:time_to_first_token_seconds', type: 'histogram', rows: [] },
  };
  for (const r of p.rows) families[r.family].rows.push(r);
  const lines: string[] = [];
  for (const f of Object.values(families)) {
    if (!f.rows.length) continue;
    lines.push(`# HELP ${f.name} hostile`, `# TYPE ${f.name} ${f.type}`);
    for (const r of f.rows) {
      const ls = r.labels.map(([k, v]) => `${LEGACY.test(k) ? k : quoted(k)}=${quoted(v)}`);
      const sample = (suffix: string, extra: string[], v: number) => {
        const name = `${f.name}${suffix}`;
        // the quoted metric name among the labels (OpenMetrics, the second row), else before them
        return p.openmetrics && r === p.rows[1]
          ? `{${[quoted(name), ...ls, ...extra].join(',')}} ${v}`
          : `${name}{${[...ls, ...extra].join(',')}} ${v}`;
      };
      if (f.type === 'histogram') {
        lines.push(
          sample('_bucket', ['le="0.1"'], 1),
          sample('_bucket', ['le="1.0"'], 2),
          sample('_bucket', ['le="+Inf"'], r.value),
          sample('_sum', [], 1.5),
          sample('_count', [], r.value),
        );
      } else lines.push(sample(f.type === 'counter' ? '_total' : '', [], r.value));
    }
  }
  if (p.openmetrics) lines.push('# EOF');
  return Buffer.from(`${lines.join('\n')}\n`);
}

/** What no label value on our page may hold raw: C0 but tab and newline, DEL, C1, Unicode Cf (bidi, zero width, BOM), U+2028/U+2029. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/gu;
const RAW_CONTROL_BYTE = (b: number): boolean => b <= 0x08 || (b >= 0x0b && b <= 0x1f) || b === 0x7f;
/** A page value as it reaches Prometheus: cut to label_length, control characters U+FFFD. */
const expected = (v: string): string => boundLabel(v, LABEL_LENGTH).replace(RAW_CONTROL, '\ufffd');

/** The labels of ours every engine series carries, and the scraper's own. */
const BASE = new Set([
  '__name__',
  'job',
  'instance',
  'server_address',
  'server_port',
  'gen_ai_provider_name',
  'process_pid',
  'process_owner',
  'host_name',
]);
const PROM_NAME: Record<Row['family'], string> = {
  gauge: 'vllm_requests_running',
  counter: 'vllm_tokens_prompt_total',
  histogram: 'vllm_time_to_first_token_seconds_count',
};

/** The server process runuser started (killed by its pid: runuser forwards the signal, but not if it is gone first). */
function childOf(pid: number): number | undefined {
  try {
    const c = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0];
    return c ? Number(c) : undefined;
  } catch {
    return undefined;
  }
}

/** A series' identity as Prometheus' storage has it: labels sorted by name, the empty-valued ones dropped. */
function identity(name: string, labels: Record<string, string>): string {
  return `${name}${JSON.stringify(
    Object.entries(labels)
      .filter(([, v]) => v !== '')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  )}`;
}

interface PageCheck {
  readonly text: string;
  /** Series that Prometheus would store as one: their identity and the ports they came from. */
  readonly repeated: { id: string; port: string | undefined }[];
}

/** One page of the daemon's, checked: valid UTF-8, no raw control byte or character, promtool, our parser. */
function checkPage(bytes: Buffer): PageCheck {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  const raw = bytes.findIndex(RAW_CONTROL_BYTE);
  assert.equal(
    raw,
    -1,
    `raw control byte 0x${bytes[raw]?.toString(16)} on the page: ${JSON.stringify(text.slice(Math.max(0, raw - 200), raw + 20))}`,
  );
  const cp = text.replace(/[\t\n]/g, ' ').search(RAW_CONTROL);
  assert.equal(
    cp,
    -1,
    `raw control or format character U+${text.codePointAt(cp)?.toString(16)} on the page: ` +
      `${JSON.stringify(text.slice(Math.max(0, cp - 200), cp + 20))}`,
  );
  const lint = promtoolCheckMetrics(text);
  assert.equal(lint.status, 0, `promtool check metrics: ${lint.output}`);
  // our own parser refuses a label named twice in a series and a name that is not the grammar
  const seen = new Map<string, string | undefined>();
  const repeated: PageCheck['repeated'] = [];
  for (const f of parseExposition(text)) {
    for (const s of f.samples) {
      for (const k of Object.keys(s.labels))
        assert.ok(LEGACY.test(k) && !k.startsWith('__'), `label name ${JSON.stringify(k)} of ${s.name}`);
      const id = identity(s.name, s.labels);
      if (seen.has(id)) repeated.push({ id, port: s.labels.server_port });
      else seen.set(id, s.labels.server_port);
    }
  }
  return { text, repeated };
}

test(
  'engines = auto: hostile engine pages of an unprivileged user (names colliding once ' +
    'sanitised, every control class in values, OpenMetrics UTF-8 names, invalid UTF-8, repeated ' +
    "series) never make Prometheus 2.42 or 3.5 refuse the node's page: up = 1 throughout, the " +
    "sim GPUs beside the engines' series, every page promtool-clean and free of raw control " +
    'characters',
  async (t) => {
    const dir = tempDir('l9gpu-exposition-hostile-');
    chmodSync(dir, 0o755);
    const om = join(dir, 'om-server.mjs');
    // the fixture server answers without a content type (Prometheus text); the OpenMetrics page needs its own
    writeFileSync(
      om,
      "import { readFileSync } from 'node:fs';\nimport http from 'node:http';\nconst [port, page] " +
        '= process.argv.slice(2);\nconst text = readFileSync(page);\nhttp.createServer((_req, res) ' +
        "=> res.writeHead(200, { 'content-type': 'application/openmetrics-text; version=1.0.0; " +
        "charset=utf-8' }).end(text)).listen(Number(port), '127.0.0.1');\n",
      { mode: 0o644 },
    );
    const ports = new Map<Page, number>();
    const engines: ChildProcess[] = [];
    for (const p of PAGES) {
      const file = join(dir, `${p.name}.prom`);
      writeFileSync(file, pageText(p), { mode: 0o644 });
      // the page must be one the daemon reads (what it cannot read brings nothing onto ours)
      if (!p.raw) parseExposition(readFileSync(file, 'utf8'), { format: p.openmetrics ? 'openmetrics' : 'prometheus' });
      const port = await freePort();
      ports.set(p, port);
      const server = p.openmetrics ? om : join(ROOT, 'test', 'fixtures', 'engine-server.mjs');
      engines.push(
        spawn('runuser', ['-u', 'nobody', '--', process.execPath, server, String(port), file, 'vllm', 'serve', 'org/model'], {
          stdio: 'ignore',
        }),
      );
    }
    const portOf = (p: Page): string => String(ports.get(p));
    const ours = new Set([...ports.values()].map(String));
    const promPort = await freePort();
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(
      cfg,
      `[daemon]\nhost_name = exposition-hostile\nplugins = sim\nengines = auto\nattribution = ` +
        `none\nsinks = prometheus\ninterval = 1s\nstate_dir = ${join(dir, 'state')}\n[prometheus]\nhost ` +
        `= 127.0.0.1\nport = ${promPort}\n[sim]\ngpus = 2\n`,
    );
    const proms: { version: 2 | 3; p: Prometheus }[] = [];
    let d: DaemonProcess | undefined;
    try {
      // listening before the daemon starts: its first look for engines is at start, the next 30 s later
      await waitFor(
        'the engines listening',
        async () =>
          (
            await Promise.all(
              [...ports.values()].map((p) =>
                fetch(`http://127.0.0.1:${p}/metrics`).then(
                  (r) => r.arrayBuffer().then(() => r.ok),
                  () => false,
                ),
              ),
            )
          ).every(Boolean),
        20_000,
      );
      const servers = new Map(TAKEN.map((p) => [p, childOf(engines[PAGES.indexOf(p)]!.pid!)]));
      d = new DaemonProcess(['--config', cfg]);
      for (const p of TAKEN) await d.waitStderr(new RegExp(`engine found url=http://127\\.0\\.0\\.1:${ports.get(p)}/metrics`), 20_000);
      const url = `http://127.0.0.1:${promPort}/metrics`;
      const ofEngine = (p: Page) =>
        new RegExp(
          `^vllm_\\w+\\{server_address="127\\.0\\.0\\.1",server_port="${ports.get(p)}",gen_ai_provider_name="vllm",` +
            `process_pid="${servers.get(p)}",process_owner="nobody"`,
          'm',
        );
      const sim = /^gpu_utilization_ratio\{[^}]*gpu_vendor="sim"/m;
      // the engines' first scrape on the page before the scrapers start: from here on every page has them
      await waitFor(
        "the engines' and the GPUs' series on the daemon's page",
        async () => {
          const text = await (await fetch(url)).text();
          return sim.test(text) && TAKEN.every((p) => ofEngine(p).test(text));
        },
        20_000,
      );
      for (const version of [2, 3] as const)
        proms.push({ version, p: await new Prometheus().start(`127.0.0.1:${promPort}`, '1s', { version }) });

      // the run: every page the daemon serves meanwhile fetched and checked, until each Prometheus has scraped SCRAPES times
      const checks: PageCheck[] = [];
      let failed: Error | undefined;
      const scrapes = async (p: Prometheus) => Number((await p.query('count_over_time(up{job="l9gpu"}[10m])'))[0]?.value?.[1] ?? 0);
      await waitFor(
        `${SCRAPES} scrapes of each Prometheus`,
        async () => {
          const r = await fetch(url);
          try {
            assert.equal(r.status, 200);
            checks.push(checkPage(Buffer.from(await r.arrayBuffer())));
          } catch (e) {
            // a page that fails its checks ends the run (waitFor would only retry it)
            failed = e as Error;
            return true;
          }
          return (await Promise.all(proms.map(({ p }) => scrapes(p)))).every((n) => n >= SCRAPES);
        },
        60_000,
        250,
      );
      if (failed) throw failed;
      t.diagnostic(`${checks.length} pages of the daemon checked`);

      // every page: the sim GPUs and every readable engine's series, of the user's process; nothing of the unreadable page
      for (const c of checks) {
        assert.match(c.text, sim, "the sim plugin's GPUs on the page");
        for (const p of TAKEN) assert.match(c.text, ofEngine(p), `${p.name}'s series on the page`);
        assert.doesNotMatch(c.text, new RegExp(`server_port="${ports.get(INVALID_UTF8)}"`), 'nothing of a page that is no UTF-8');
        // series Prometheus stores as one: only the page that repeats them so (labels in another order, an empty value);
        // an engine of another test on this machine (a port not ours) is not this test's
        for (const r of c.repeated)
          if (r.port === undefined || ours.has(r.port)) assert.equal(r.port, portOf(REPEATED), `a series twice on the page: ${r.id}`);
      }
      t.diagnostic(
        `series on the last page that Prometheus stores as one and the page writes twice (REPEATED's): ${checks.at(-1)!.repeated.length}`,
      );

      for (const { version, p } of proms) {
        const v = `Prometheus ${version}`;
        const targets = (await (await fetch(`${p.url}/api/v1/targets`)).json()) as {
          data: { activeTargets: { health: string; lastError: string }[] };
        };
        assert.deepEqual(
          targets.data.activeTargets.map((x) => [x.health, x.lastError]),
          [['up', '']],
          `${v}: the target`,
        );
        // up = 1 at every scrape of the run, not only the last
        assert.deepEqual(
          (await p.query('min_over_time(up{job="l9gpu"}[10m])')).map((s) => s.value?.[1]),
          ['1'],
          `${v}: up was 1 at every scrape; ${p.log.slice(-2000)}`,
        );
        assert.ok((await scrapes(p)) >= SCRAPES);
        assert.equal((await p.query('gpu_utilization_ratio{gpu_vendor="sim"}')).length, 2, `${v}: the sim plugin's two GPUs`);
        // each row of the readable pages, under the row's own label: one label per page label, each value as the page had it
        for (const page of [COLLIDE, CONTROL, OPENMETRICS]) {
          const series = await p.query(`{__name__=~"vllm_.*",server_port="${ports.get(page)}",vllm_row!=""}`);
          const rows = new Set<string>();
          for (const row of page.rows) {
            const rowId = row.labels.find(([k]) => k === 'row')![1];
            // a row repeated (once replaced) is checked at its first
            if (rows.has(rowId)) continue;
            rows.add(rowId);
            const s = series.filter((x) => x.metric.vllm_row === rowId && x.metric.__name__ === PROM_NAME[row.family]);
            assert.equal(s.length, 1, `${v}: ${page.name} row ${rowId}: ${JSON.stringify(series.map((x) => x.metric))}`);
            const m = s[0]!.metric;
            assert.equal(m.process_owner, 'nobody');
            assert.equal(m.process_pid, String(servers.get(page)));
            const own = Object.entries(m).filter(([k]) => !BASE.has(k));
            assert.equal(
              own.length,
              row.labels.length,
              `${v}: ${page.name} row ${rowId}: a label for each of the page's: ${JSON.stringify(own)}`,
            );
            assert.deepEqual(
              own.map(([, x]) => x).sort(),
              row.labels.map(([, x]) => expected(x)).sort(),
              `${v}: ${page.name} row ${rowId}: the page's values`,
            );
            assert.equal(m.gen_ai_request_model, expected(row.labels.find(([k]) => k === 'model_name')![1]));
            assert.equal(s[0]!.value?.[1], String(row.value), `${v}: ${page.name} row ${rowId}: the first of a repeated series`);
          }
        }
        const rep = await p.query(`vllm_requests_running{server_port="${ports.get(REPEATED)}"}`);
        assert.deepEqual(
          rep.map((s) => s.value?.[1]).sort(),
          ['1', '3'],
          `${v}: the repeated series stored once each, the first kept: ${JSON.stringify(rep)}`,
        );
        const histogram = await p.query(`vllm_time_to_first_token_seconds_bucket{server_port="${ports.get(COLLIDE)}"}`);
        assert.equal(histogram.length, 3, `${v}: the histogram's buckets`);
        assert.ok(
          histogram.every(
            (s) => s.metric.vllm_x === 'a' && s.metric.vllm_x_1 === 'b' && s.metric.vllm_le_x === 'c' && s.metric.le !== undefined,
          ),
        );
      }
      // every readable page was read at every scrape
      const failedOurs = d.stderr
        .split('\n')
        .filter((l) => /endpoint failed/.test(l) && TAKEN.some((p) => l.includes(`:${ports.get(p)}/`)));
      assert.deepEqual(failedOurs, [], d.stderr.slice(-3000));
    } finally {
      for (const { p } of proms) await p.stop();
      if (d) assert.equal(await d.stop(), 0, d.stderr.slice(-3000));
      for (const e of engines) {
        const s = childOf(e.pid!);
        if (s) process.kill(s);
        e.kill();
      }
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
