/**
 * What an engine's series cost scrape after scrape (issue 29: a user's engine
 * at its series budget, ~3,000 series, cost the daemon 20 kB each): the
 * parser hands the label sets of the last page again (LabelSets), the
 * converter keeps what it made of each series and hands the same stable
 * attributes again, attribution looks an engine's job up once a batch, and
 * none of it changes a point: the same values, starts and attributes as a
 * conversion made from nothing every time.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { isStable, PointBuffer, stableAttributes, type Attributes, type Point } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import { BoundAttribution } from '../../src/pipeline/bound-attribution.js';
import { ConvertState, convertPage } from '../../src/scrape/convert.js';
import { LabelSets, parsePage } from '../../src/scrape/exposition.js';
import { recordStart } from '../../src/store/jobs.js';
import { openStore } from '../../src/store/open.js';
import { jobAttributes } from '../../slurm/job-attributes.js';
import { VLLM_TABLE } from '../../plugins/vllm/index.js';
import { ROOT, tempDir } from '../helpers/paths.js';

const PAGE = readFileSync(join(ROOT, 'plugins', 'vllm', 'testdata', 'built-vllm-0.10-large', 'page.prom'), 'utf8');

/** The page `k` scrapes later: every count and gauge times k+1 (histograms stay whole), _created kept. */
const later = (k: number): string =>
  PAGE.replace(/^([^#\n][^\n]*?) (\d+(?:\.\d+)?)$/gm, (line, head: string, v: string) =>
    head.includes('_created') ? line : `${head} ${Number(v) * (k + 1)}`,
  );

/** One endpoint's conversion, scrape after scrape, with or without the parser's label sets. */
function endpoint(keep: boolean) {
  const state = new ConvertState();
  const sets = keep ? new LabelSets() : undefined;
  let cuts = 0;
  return {
    scrape(text: string, base: Attributes, now: number): Point[] {
      const out = new PointBuffer();
      const page = parsePage(text, { maxSamples: 3000, ...(sets ? { labelSets: sets } : {}) });
      state.begin();
      convertPage(VLLM_TABLE, page.families, {
        out,
        state,
        base,
        now,
        also: true,
        alsoAttributes: { 'gen_ai.provider.name': 'vllm' },
        labelLength: 20,
        onCut: () => cuts++,
      });
      state.end();
      return out.points;
    },
    cuts: () => cuts,
  };
}

/** Points as plain data: what a sink sees of them. */
const plain = (ps: Point[]) =>
  ps.map((p) => ({ metric: p.metric.name, value: p.value, start: p.start, hist: p.hist, attributes: { ...p.attributes } }));

test(
  "an engine's series scrape after scrape: the same points as converted from nothing, its " +
    'attributes made once and handed again (stable), the label budget told on every page',
  () => {
    const kept = endpoint(true);
    const fresh = endpoint(false);
    const base = { 'server.address': '127.0.0.1', 'server.port': 8000, 'process.pid': 4242 };
    const t0 = Date.UTC(2026, 10, 27);
    let before: Point[] = [];
    for (let k = 0; k < 3; k++) {
      const text = later(k);
      const got = kept.scrape(text, base, t0 + k * 10_000);
      assert.deepEqual(plain(got), plain(fresh.scrape(text, base, t0 + k * 10_000)), `scrape ${k}: the same points`);
      assert.equal(kept.cuts(), fresh.cuts(), `scrape ${k}: the same label_length hits`);
      assert.ok(got.length > 100 && got.every((p) => isStable(p.attributes)), "every point's attributes are stable");
      if (k > 0) {
        // the same series' attributes: the very object of the scrape before (quantile points come from the second scrape on)
        const was = new Map(before.map((p) => [`${p.metric.name} ${JSON.stringify(p.attributes)}`, p.attributes]));
        const again = got.filter((p) => was.has(`${p.metric.name} ${JSON.stringify(p.attributes)}`));
        assert.ok(again.length > 100);
        for (const p of again) assert.equal(p.attributes, was.get(`${p.metric.name} ${JSON.stringify(p.attributes)}`), p.metric.name);
      }
      before = got;
    }
    assert.ok(kept.cuts() > 0, "the model names are over the 20 characters of the test's bound");
    assert.ok(
      before.some((p) => p.metric.name === 'vllm.time_to_first_token.quantile'),
      'windowed quantiles',
    );
    // another process behind the endpoint (the engine restarted): its series are made again
    const other = kept.scrape(later(3), { ...base, 'process.pid': 4343 }, t0 + 30_000);
    assert.deepEqual(plain(other), plain(fresh.scrape(later(3), { ...base, 'process.pid': 4343 }, t0 + 30_000)));
    assert.ok(other.every((p) => p.attributes['process.pid'] === 4343));
  },
);

test(
  "attribution: an engine page's points of one process have their job looked up once a batch, " +
    'not once a point; a stable series in a job gets the same attributes batch after batch',
  () => {
    const db = openStore(tempDir('l9gpu-engine-series-'));
    try {
      recordStart(
        db,
        { jobId: '77', runKey: 'r0', user: 'bob', uid: 1001, partition: 'inference', name: 'serve' },
        [{ uuid: 'GPU-a', shared: false }],
        'prolog',
      );
      let asked = 0;
      const share = metric('gpu.job.share');
      const a = new BoundAttribution(db, createLogger('error'), {
        name: 'slurm',
        attributesOf: jobAttributes,
        bareAttributes: (job) => ({ 'slurm.job.id': job }),
        pids: { job: (pid) => (asked++, pid === 10 ? '77' : null) },
        metrics: { share, outside: share, bindings: share, syncAge: share },
      });
      const series = Array.from({ length: 3000 }, (_, i) =>
        stableAttributes({
          'server.address': '127.0.0.1',
          'server.port': 8000,
          'process.pid': i < 2000 ? 10 : 11,
          'gen_ai.request.model': `m${i}`,
        }),
      );
      const batch = (time: number) => ({
        source: 'vllm',
        time,
        intervalMs: 1000,
        points: series.map((attributes) => ({ metric: metric('vllm.requests.running'), value: 1, attributes })),
      });
      const one = a.attribute(batch(1000)).points;
      assert.equal(asked, 2, 'one look-up per process in the batch');
      assert.deepEqual(
        { ...one[0]!.attributes },
        {
          ...series[0],
          'slurm.job.id': '77',
          'slurm.user': 'bob',
          'slurm.partition': 'inference',
          'slurm.job.name': 'serve',
          'gpu.uuids': 'GPU-a',
        },
      );
      assert.equal(one[2500]!.attributes, series[2500], 'a process in no job: its points as they came');
      const two = a.attribute(batch(2000)).points;
      assert.equal(asked, 4);
      assert.ok(isStable(two[0]!.attributes));
      for (let i = 0; i < 2000; i += 97) assert.equal(two[i]!.attributes, one[i]!.attributes, `series ${i}: the same object`);
      // the bindings change (the job ended): the series' attributes are made again
      db.prepare("UPDATE bindings SET end_time = 3000 WHERE job_id = '77'").run();
      a.invalidate();
      const three = a.attribute(batch(3000)).points;
      assert.notEqual(three[0]!.attributes, one[0]!.attributes);
      assert.deepEqual({ ...three[0]!.attributes }, { ...series[0], 'slurm.job.id': '77' });
    } finally {
      db.close();
    }
  },
);
