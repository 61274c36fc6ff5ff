/**
 * Golden-file tests of every plugin, like Telegraf's testdata: each folder
 * plugins/<name>/testdata/<case>/ holds recorded tool or /proc output and
 * expected.jsonl, the points it must give (one JSON object per line: name,
 * unit, kind, value, attributes). A new fixture is a new case, no code: run
 * with L9GPU_UPDATE_GOLDEN=1 to write expected.jsonl, then check it by hand.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PLUGINS } from '../../daemon/catalog.js';
import type { Point } from '../../src/core/metrics/model.js';
import { ROOT } from '../helpers/paths.js';

const line = (p: Point): string =>
  JSON.stringify({
    name: p.metric.name,
    unit: p.metric.unit,
    kind: p.metric.kind,
    value: p.value,
    attributes: p.attributes,
    ...(p.hist ? { hist: p.hist } : {}),
  });

function cases(plugin: string): string[] {
  const td = join(ROOT, 'plugins', plugin, 'testdata');
  if (!existsSync(td)) return [];
  return readdirSync(td)
    .filter((n) => statSync(join(td, n)).isDirectory())
    .map((n) => join(td, n));
}

const withCases = PLUGINS.filter((p) => cases(p.name).length > 0);

test('the plugins with recorded output all have golden cases', () => {
  assert.deepEqual(
    withCases.map((p) => p.name),
    ['host', 'amdsmi', 'hlsmi', 'vllm', 'sglang', 'tgi', 'triton', 'nim', 'dcgm', 'nccl'],
  );
});

for (const p of withCases) {
  for (const dir of cases(p.name)) {
    test(`golden: plugins/${p.name}/testdata/${dir.split('/').at(-1)}`, async () => {
      const golden = (await import(`../../plugins/${p.name}/golden.js`)) as { goldenPoints(dir: string): Point[] | Promise<Point[]> };
      const points = await golden.goldenPoints(dir);
      const got = points.map(line);
      for (const pt of points)
        assert.ok(p.metrics.includes(pt.metric.name), `${p.name} emitted ${pt.metric.name}, which its manifest does not list`);
      const file = join(dir, 'expected.jsonl');
      if (process.env.L9GPU_UPDATE_GOLDEN) writeFileSync(file, got.length ? got.join('\n') + '\n' : '');
      assert.ok(existsSync(file), `${file} is missing (L9GPU_UPDATE_GOLDEN=1 writes it)`);
      assert.deepEqual(got, readFileSync(file, 'utf8').split('\n').filter(Boolean));
    });
  }
}
