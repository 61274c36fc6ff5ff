/**
 * Golden-file case of this plugin: testdata/<case>/ is a copy of /proc's
 * stat, meminfo and loadavg; one collection over it (a single snapshot: no
 * CPU rate) is compared with expected.jsonl by test/unit/golden.test.ts.
 */
import { PointBuffer, type Point } from '../../src/core/metrics/model.js';
import { HostPlugin } from './index.js';

export async function goldenPoints(dir: string): Promise<Point[]> {
  const out = new PointBuffer();
  await new HostPlugin(dir).collect(out);
  return out.points;
}
