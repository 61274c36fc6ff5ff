/**
 * Golden-file case of this plugin: testdata/<case>/page.prom is a recorded
 * (or, where the README says so, built) /metrics page; one conversion of it
 * is compared with expected.jsonl by test/unit/golden.test.ts.
 */
import type { Point } from '../../src/core/metrics/model.js';
import { goldenPagePoints } from '../../src/scrape/golden.js';
import { dcgmTable } from './index.js';

export function goldenPoints(dir: string): Point[] {
  return goldenPagePoints(dcgmTable(true), dir);
}
