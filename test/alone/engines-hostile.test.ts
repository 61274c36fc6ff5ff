/**
 * Engine pages as a hostile user serves them. Under [daemon] engines = auto
 * any process whose command line reads `vllm serve` is scraped by the root
 * daemon, so an unprivileged user (here: nobody, through runuser) can serve
 * it a page of 250,000 series and model names of any length. The daemon
 * keeps the series of one endpoint and of one user within [limits], counts
 * the rest against that user, and its memory stays near what a small page
 * costs.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPageFetcher } from '../../src/scrape/fetch-page.js';
import { OwnerSeries } from '../../src/scrape/owner-series.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';

const SERIES = 250_000;
const LONG_MODEL = `org/${'m'.repeat(20_000)}`;

/** 250,000 gauges of one vLLM family, the first few with a model name of 20 kB. */
function hugePage(): string {
  const lines = [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
  ];
  // first: a quoted label name (Prometheus 3) longer than label_length, with a newline in it: dropped, and the log line
  // that says so forges no other
  lines.push(`vllm:num_requests_running{"k\\n2026-01-01T00:00:00.000Z error [l9gpu] forged ${'k'.repeat(70)}"="v"} 1`);
  for (let i = 0; i < SERIES; i++) lines.push(`vllm:num_requests_running{e="${i}",model_name="${i < 5 ? LONG_MODEL : 'opt'}"} 1`);
  return lines.join('\n') + '\n';
}

/** The stand-in engine as nobody: runuser stays as its parent, the server (holding the port) is its child. */
function engineAsNobody(port: number, page: string): ChildProcess {
  const server = join(ROOT, 'test', 'fixtures', 'engine-server.mjs');
  return spawn('runuser', ['-u', 'nobody', '--', process.execPath, server, String(port), page, 'vllm', 'serve', 'org/model'], {
    stdio: 'ignore',
  });
}

/** The server process runuser started (killed by its pid: runuser forwards the signal, but not if it is gone first). */
function childOf(pid: number): number | undefined {
  try {
    const c = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0];
    return c ? Number(c) : undefined;
  } catch {
    return undefined;
  }
}

test(
  'engines = auto: two engines of an unprivileged user serving 250,000 series each are cut to ' +
    'series_per_endpoint and series_per_user, counted against that user, their points carry ' +
    'process.owner, long model names are cut, and memory stays bounded',
  async (t) => {
    const dir = tempDir('l9gpu-engines-hostile-');
    chmodSync(dir, 0o755);
    const page = join(dir, 'page.prom');
    writeFileSync(page, hugePage(), { mode: 0o644 });
    const ports = [await freePort(), await freePort()];
    const engines = ports.map((p) => engineAsNobody(p, page));
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(
      cfg,
      `[daemon]\nplugins = host\nengines = auto\nsinks = stdout\ninterval = ` +
        `1s\n[limits]\nseries_per_endpoint = 2000\nseries_per_user = 3000\nlabel_length = 64\n`,
    );
    try {
      await waitFor(
        'the engines listening',
        async () =>
          (
            await Promise.all(
              ports.map((p) =>
                fetch(`http://127.0.0.1:${p}/metrics`).then(
                  (r) => r.text().then(() => r.ok),
                  () => false,
                ),
              ),
            )
          ).every(Boolean),
        20_000,
      );
      const servers = engines.map((e) => childOf(e.pid!));
      assert.ok(
        servers.every((s) => s !== undefined),
        'runuser started the servers',
      );
      const d = new DaemonProcess(['--config', cfg]);
      let ticks: Map<string, ReturnType<DaemonProcess['points']>>;
      let peak: number;
      try {
        // three collections that scraped both engines
        ticks = await waitFor(
          'three collections of both engines',
          () => {
            // 250,000 points a scrape would be hundreds of MB of JSON lines: an unbounded export fails here, not by timing out
            if (d.stdout.length > 64 << 20)
              throw new Error(`the daemon wrote ${(d.stdout.length / 2 ** 20).toFixed(0)} MB of points: the series are not bounded`);
            const byTime = new Map<string, ReturnType<DaemonProcess['points']>>();
            for (const p of d.points())
              if (p.name === 'vllm.requests.running' && ports.includes(Number(p.attributes['server.port'])))
                byTime.set(p.time, [...(byTime.get(p.time) ?? []), p]);
            const both = [...byTime.values()].filter((ps) => new Set(ps.map((p) => p.attributes['server.port'])).size === 2);
            return both.length >= 3 ? byTime : undefined;
          },
          60_000,
          500,
        );
        peak = d.peakRssMb();
      } finally {
        assert.equal(await d.stop(), 0, d.stderr.slice(-3000));
      }
      const pts = [...ticks.values()].flat();
      assert.ok(
        pts.every((p) => p.attributes['process.owner'] === 'nobody'),
        `the owner on every point: ${JSON.stringify(pts[0]?.attributes)}`,
      );
      assert.ok(pts.every((p) => servers.includes(p.attributes['process.pid'] as number)));
      // one collection of each engine: never more than 2,000 of one endpoint, never more than 3,000 of the user's two
      const perScrape = new Map<string, number>();
      for (const p of pts) {
        const k = `${p.time} ${p.attributes['server.port']}`;
        perScrape.set(k, (perScrape.get(k) ?? 0) + 1);
      }
      assert.ok(Math.max(...perScrape.values()) <= 2000, `at most series_per_endpoint from one scrape: ${Math.max(...perScrape.values())}`);
      // each endpoint's latest count against the other's: after the first scrapes the two share the user's 3,000
      const last = new Map<number, number>();
      for (const [k, n] of [...perScrape].sort()) last.set(Number(k.split(' ')[1]), n);
      const total = [...last.values()].reduce((a, b) => a + b, 0);
      assert.ok(total <= 3000 && total >= 2500, `the user's endpoints together within series_per_user: ${[...last.values()].join(' + ')}`);
      // a 20 kB model name goes out cut to label_length
      const models = new Set(pts.map((p) => String(p.attributes['gen_ai.request.model'])));
      assert.ok(models.has(`${LONG_MODEL.slice(0, 61)}...`), [...models].map((m) => m.slice(0, 80)).join(', '));
      assert.ok([...models].every((m) => m.length <= 64));
      // the hits, against the user, in the ledger's metric and one log line each
      const hits = (budget: string) =>
        Math.max(
          0,
          ...d
            .points()
            .filter(
              (p) =>
                p.name === 'l9gpu.budget.exceeded' && p.attributes['l9gpu.budget'] === budget && p.attributes['user.name'] === 'nobody',
            )
            .map((p) => p.value),
        );
      // the page is read to 4 x 2,000 + 16 lines, then the connection closed: what was read past the bound, and one for the unread rest,
      // each
      // scrape
      // (counted as series_per_user where the user's bound was the nearer one)
      const dropped = hits('series_per_endpoint') + hits('series_per_user');
      assert.ok(dropped >= 3 * (4 * 2000 + 16 - 2000), `series hits: ${dropped}`);
      assert.ok(hits('series_per_endpoint') > 0, 'series_per_endpoint hit');
      assert.ok(hits('series_per_user') > 0, 'series_per_user hit');
      assert.ok(hits('label_length') > 0, 'label_length hit');
      assert.ok(!pts.some((p) => Object.keys(p.attributes).some((k) => k.length > 64)), 'a label name past label_length is dropped');
      assert.doesNotMatch(d.stderr, /^\S+ error \[l9gpu\] forged/m, 'a page cannot write a log line');
      assert.equal(
        d.stderr.split('\n').filter((l) => /limit reached/.test(l) && /budget=series_per_endpoint/.test(l)).length,
        1,
        d.stderr.slice(-3000),
      );
      // what the bound can use of the page is read, not its 16 MB (the old code peaked at 1.4 GB, reading it whole at 300 MB)
      t.diagnostic(`daemon peak RSS ${peak.toFixed(0)} MB`);
      assert.ok(peak < 128, `peak RSS ${peak.toFixed(0)} MB`);
    } finally {
      for (const e of engines) {
        const s = childOf(e.pid!);
        if (s) process.kill(s);
        e.kill();
      }
    }
  },
);

test(
  "[limits] page_bytes_per_user: a user's pages read at once share one bound (N engines do " +
    'not hold N pages); what a page took is given back when it is read; another user is not ' +
    'affected',
  async () => {
    const MB = 1 << 20;
    let resume!: () => void;
    const resumed = new Promise<void>((r) => (resume = r));
    // A sends 600 kB and waits; B sends 1 MB at once
    const a = http.createServer((_req, res) => {
      res.write('a'.repeat(600 * 1024));
      void resumed.then(() => res.end('a'.repeat(400 * 1024)));
    });
    const b = http.createServer((_req, res) => res.end('b'.repeat(MB)));
    const url = async (s: http.Server) => {
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
      return `http://127.0.0.1:${(s.address() as AddressInfo).port}/metrics`;
    };
    const [ua, ub] = [await url(a), await url(b)];
    const fa = createPageFetcher(ua, 10_000, 16 * MB);
    const fb = createPageFetcher(ub, 10_000, 16 * MB);
    const owners = new OwnerSeries();
    try {
      const holdA = owners.hold(() => 'nobody', 1.5 * MB);
      let tookA = 0;
      const pa = fa.get(undefined, { what: holdA.what, take: (n) => ((tookA += n), holdA.take(n)) });
      await waitFor("A's first 600 kB held", () => tookA >= 600 * 1024);
      // B's 1 MB does not fit beside A's 600 kB under 1.5 MB
      const holdB = owners.hold(() => 'nobody', 1.5 * MB);
      await assert.rejects(
        fb.get(undefined, holdB),
        /the page is over nobody's 1572864 bytes of pages read at once \(\[limits\] page_bytes_per_user\)/,
      );
      assert.ok(holdB.refused);
      holdB.release();
      // another user's page is theirs to hold
      const alice = owners.hold(() => 'alice', 1.5 * MB);
      assert.equal((await fb.get(undefined, alice)).bytes, MB);
      alice.release();
      resume();
      assert.equal((await pa).bytes, 1000 * 1024, 'A whole: 1000 kB under 1.5 MB');
      assert.ok(!holdA.refused);
      holdA.release();
      // given back: B fits now
      const again = owners.hold(() => 'nobody', 1.5 * MB);
      assert.equal((await fb.get(undefined, again)).bytes, MB);
      again.release();
    } finally {
      fa.close();
      fb.close();
      a.closeAllConnections();
      a.close();
      b.close();
    }
  },
);

test(
  'a page fetched for a series bound is read to its line bound and no further: the connection ' +
    'is closed, the text ends at a whole line',
  async () => {
    const line = 'vllm:num_requests_running{engine="0",model_name="m"} 1.0\n';
    let sent = 0;
    let closed!: () => void;
    const gone = new Promise<void>((r) => (closed = r));
    // streams 250,000 lines in 64 kB writes, as long as the client reads
    const s = http.createServer((_req, res) => {
      const chunk = line.repeat(1000);
      const more = (): void => {
        while (sent < 250) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('close', closed);
      more();
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const f = createPageFetcher(`http://127.0.0.1:${(s.address() as AddressInfo).port}/metrics`, 10_000, 64 << 20);
    try {
      const page = await f.get(undefined, undefined, 2500);
      assert.equal(page.cut, true);
      assert.equal(page.text.split('\n').length - 1, 2500);
      assert.ok(page.text.endsWith('\n'));
      assert.equal(page.bytes, 2500 * line.length);
      await gone;
      assert.ok(sent < 250, `the server was stopped before the end of its page (${sent} of 250 writes)`);
      // a page within the bound is read whole, not cut
      const whole = await createPageFetcher(`http://127.0.0.1:${(s.address() as AddressInfo).port}/metrics`, 10_000, 64 << 20).get(
        undefined,
        undefined,
        300_000,
      );
      assert.equal(whole.cut, undefined);
    } finally {
      f.close();
      s.close();
    }
  },
);

test(
  '[limits] engine_ports_per_user: a process of nobody named vllm serve listening on 60 ports ' +
    "gets 4 of them asked, the rest counted against nobody; root's engines are not held to it",
  async () => {
    const dir = tempDir('l9gpu-engines-ports-');
    chmodSync(dir, 0o755);
    const cfg = join(dir, 'l9gpu.ini');
    writeFileSync(cfg, `[daemon]\nplugins = host\nengines = auto\nsinks = stdout\ninterval = 1s\n[limits]\nengine_ports_per_user = 4\n`);
    const user = spawn(
      'runuser',
      ['-u', 'nobody', '--', process.execPath, join(ROOT, 'test', 'fixtures', 'hostile-user.mjs'), 'ports', '60', 'vllm', 'serve'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    user.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    try {
      const pid = await waitFor('60 ports listening', () => (/^(\d+)\n/.exec(out) ? Number(/^(\d+)\n/.exec(out)![1]) : undefined), 20_000);
      const d = new DaemonProcess(['--config', cfg]);
      let found: number;
      try {
        await waitFor(
          'the ports budget counted',
          () =>
            d
              .points()
              .some(
                (p) =>
                  p.name === 'l9gpu.budget.exceeded' &&
                  p.attributes['l9gpu.budget'] === 'engine_ports_per_user' &&
                  p.attributes['user.name'] === 'nobody' &&
                  p.value >= 56,
              ),
          30_000,
          250,
        );
        const foundNow = (): number => d.stderr.split('\n').filter((l) => /engine found/.test(l) && l.includes(`pid=${pid}`)).length;
        // stdout and stderr are two pipes: the lines of the endpoints found may come after the tick's points
        await waitFor('the four endpoints asked found', () => foundNow() >= 4 || undefined, 30_000, 100);
        // two more collections: no fifth endpoint is asked later either
        const mark = d.stdout.length;
        await waitFor(
          'two more collections',
          () => d.pointsSince(mark).filter((p) => p.name === 'l9gpu.budget.exceeded').length >= 2 || undefined,
          30_000,
          250,
        );
        found = foundNow();
      } finally {
        assert.equal(await d.stop(), 0, d.stderr.slice(-2000));
      }
      assert.equal(found, 4, d.stderr.slice(-2000));
      assert.equal(d.stderr.split('\n').filter((l) => /limit reached/.test(l) && /engine_ports_per_user/.test(l)).length, 1, 'said once');
    } finally {
      spawnSync('pkill', ['-u', 'nobody', '-f', 'hostile-user.mjs ports']);
      user.kill();
    }
  },
);
