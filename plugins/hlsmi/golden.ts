/**
 * Golden-file case of this plugin: testdata/<case>/hl-smi.csv is what
 * `hl-smi -Q ... -f csv` printed; test/unit/golden.test.ts compares its points
 * with expected.jsonl.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PointBuffer, wholePoints, type Point } from '../../src/core/metrics/model.js';
import { emitRows, parseCsv } from './parse.js';

export function goldenPoints(dir: string): Point[] {
  const out = new PointBuffer();
  emitRows(parseCsv(readFileSync(join(dir, 'hl-smi.csv'), 'utf8'), 'hl-smi -f csv'), out, 0);
  return wholePoints(out);
}
