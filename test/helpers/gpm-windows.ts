/**
 * Ticks of the production nvml sampler and converter against the fake
 * libnvidia-ml.so.1, each just after a wall-clock second begins: the first
 * takes the start samples, each next one a GPM window holding exactly one of
 * the fake's refreshes (FAKE_NVML_GPM_REFRESH_US=1000000, set before the
 * process's first GPM sample), so that its means are the description's values
 * exactly (test/system/nvml-gpm.test.ts).
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { loadNvml } from '../../plugins/nvml/binding.js';
import { NvmlConverter } from '../../plugins/nvml/convert.js';
import { Sampler } from '../../plugins/nvml/sampler.js';
import { PointBuffer, type Point } from '../../src/core/metrics/model.js';
import { fakeNvmlLibraries, type FakeNvml, type FakeNvmlDescription } from './fake-nvml.js';
import { waitFor } from './wait.js';

const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
const HOUR = 3_600_000;

export interface GpmWindow {
  /** The second the window ended on (ms): the tick's time, to the second. */
  second: number;
  points: Point[];
}

/** n windows of one second each, described by desc (its driver_version is the driver the converter is told). */
export async function gpmWindows(fake: FakeNvml, desc: FakeNvmlDescription, n: number): Promise<GpmWindow[]> {
  const driver = String(desc.driver_version);
  fake.write(desc);
  const lib = fakeNvmlLibraries().r550;
  // the fake says misuse (an id this driver's nvml.h lacks, a sample freed twice ...) on stderr and counts it
  const misuses = koffi.load(lib).func('unsigned long long fakeNvmlMisuses()') as () => number | bigint;
  const misused = Number(misuses());
  const nvml = loadNvml(lib);
  assert.equal(await nvml.init(), 0);
  const s = new Sampler(nvml, false, 0, HOUR);
  const c = new NvmlConverter();
  const out: GpmWindow[] = [];
  try {
    await s.enumerate();
    for (let i = 0; i <= n; i++) {
      const second = Math.floor(Date.now() / 1000) * 1000 + 1000;
      await waitFor('the next second', () => Date.now() >= second + 50, 5_000, 5);
      const { gpus } = await s.sample();
      const b = new PointBuffer();
      c.convert({ driverVersion: driver, time: Date.now(), gpus, notes: [] }, b);
      assert.equal(b.rejected.size, 0, `no value out of range: ${[...b.rejected.keys()].join(', ')}`);
      if (i > 0) out.push({ second, points: b.points });
    }
  } finally {
    await s.release();
    await nvml.shutdown();
  }
  assert.equal(Number(misuses()) - misused, 0, 'no misuse of the fake (stderr says which)');
  return out;
}
