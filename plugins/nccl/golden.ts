/**
 * Golden-file case of this plugin: testdata/<case>/ holds the files the
 * Inspector writes (built from the NCCL sources, see testdata/README.md);
 * one collection of the folder, as node01 (the fixtures' host), at a fixed
 * time, is compared with expected.jsonl by test/unit/golden.test.ts.
 */
import { createLogger } from '../../src/core/log.js';
import { PointBuffer, wholePoints, type Point } from '../../src/core/metrics/model.js';
import { NcclPlugin } from './index.js';

export const GOLDEN_TIME = Date.UTC(2026, 10, 23);

export async function goldenPoints(dir: string): Promise<Point[]> {
  const plugin = new NcclPlugin(
    { paths: [dir], discover: false, maxFileAgeMs: Infinity, maxSeries: 20_000, window: 256, hostNames: ['node01'] },
    createLogger('error', () => {}),
  );
  const out = new PointBuffer();
  out.time = GOLDEN_TIME;
  await plugin.collect(out);
  plugin.close();
  return wholePoints(out);
}
