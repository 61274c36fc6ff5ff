/**
 * Golden-file case of this plugin: testdata/<case>/ holds what `amd-smi list,
 * static, metric, process --json` printed (list.json ...), and the points they
 * give are compared with expected.jsonl by test/unit/golden.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PointBuffer, wholePoints, type Point } from '../../src/core/metrics/model.js';
import { emitMetrics, emitProcesses, parseIdentity } from './parse.js';

export function goldenPoints(dir: string): Point[] {
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  const out = new PointBuffer();
  const ids = new Map(
    parseIdentity(read('list.json'), read('static.json'), (f, why) => out.unreadable(f, why))
      .filter((g) => g.uuid)
      .map((g) => [g.index, g]),
  );
  emitMetrics(read('metric.json'), ids, out, 0);
  emitProcesses(read('process.json'), ids, out);
  return wholePoints(out);
}
