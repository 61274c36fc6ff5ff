/**
 * The two clocks (src/core/clock.ts) and what is measured with them: a step
 * of the wall clock seen once, durations by the monotonic clock where both
 * ends have it and never negative, a rollup that goes on folding samples
 * whose wall time went back, and a health file's age. The daemon under
 * libfaketime is test/system/clock-steps.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bootId, ClockWatch, elapsedMs, formatStep, monoAt, monoNow } from '../../src/core/clock.js';
import { emptyRollup, figures, step } from '../../src/figures/rollup.js';
import { healthFileAge, type HealthFile } from '../../src/health/state-file.js';
import { jobElapsedS } from '../../src/jobs/elapsed.js';
import { duration } from '../../src/jobs/render.js';

test("a step of the wall clock is seen once, by the offset between the clocks; NTP's slew is not a step", () => {
  let wall = 1_000_000;
  let mono = 50_000;
  const w = new ClockWatch(1000, () => ({ wall, mono }));
  assert.equal(w.check(), undefined, 'the first reading sets the offset');
  wall += 1000;
  mono += 1000;
  assert.equal(w.check(), undefined);
  wall += 1000 + 0.5; // 500 ppm over a second: slewed, not stepped
  mono += 1000;
  assert.equal(w.check(), undefined);
  wall += 1000 - 3_600_000;
  mono += 1000;
  assert.deepEqual(w.check(), { stepMs: -3_600_000, wall });
  wall += 1000;
  mono += 1000;
  assert.equal(w.check(), undefined, 'said once: the next reading has the new offset');
  wall += 7_200_000;
  assert.equal(w.check()?.stepMs, 7_200_000);
  assert.equal(formatStep(-3_600_000), '-1h0m0s');
  assert.equal(formatStep(7_198_000), '+1h59m58s');
  assert.equal(formatStep(42_000), '+42s');
});

test("durations: monotonic where both ends have it on one boot, else the wall clock's, never negative", () => {
  const boot = 'b1';
  // the wall clock went back an hour between the two records; the monotonic clock went on 10 minutes
  assert.equal(
    elapsedMs({ wall: 10_000_000, mono: 5_000, boot }, { wall: 10_000_000 - 3_600_000 + 600_000, mono: 605_000, boot }),
    600_000,
  );
  assert.equal(
    elapsedMs({ wall: 10_000_000, mono: 5_000, boot }, { wall: 10_600_000, mono: 605_000, boot: 'b2' }),
    600_000,
    'another boot: the wall clock',
  );
  assert.equal(
    elapsedMs({ wall: 10_000_000, mono: null, boot }, { wall: 6_400_000, mono: 605_000, boot }),
    0,
    'no monotonic end: the wall, held at 0',
  );
  assert.equal(
    jobElapsedS({ start_time: 10_000_000, end_time: 6_400_000 }),
    0,
    'a row without monotonic times (an older store): never negative',
  );
  assert.equal(
    jobElapsedS({ start_time: 10_000_000, end_time: 6_400_000 + 600_000, start_mono: 5_000, end_mono: 605_000, boot_id: boot }),
    600,
  );
  assert.equal(jobElapsedS({ start_time: null, end_time: null }), null);
  const now = { wall: Date.now(), mono: monoNow(), boot: bootId() };
  assert.equal(
    jobElapsedS({ start_time: now.wall + 3_600_000, end_time: null, start_mono: now.mono - 90_000, boot_id: now.boot }, now),
    90,
    'a running job by the monotonic clock, its start wall time an hour "ahead"',
  );
  assert.equal(duration(-3425), '00:00:00', 'a figure from elsewhere is held to 0 too, never "-1--1:-58:-5"');
  const m = monoAt(Date.now() - 60_000);
  assert.ok(m !== null && Math.abs(monoNow() - 60_000 - m) < 50);
  assert.equal(monoAt(Date.now() - monoNow() - 1000), null, 'a moment before this boot');
});

test('a rollup folds samples by their monotonic gaps: a wall clock stepped back an hour loses no sample', () => {
  const r = emptyRollup();
  const wall0 = 1_800_000_000_000;
  const mono0 = 1_000_000;
  for (let i = 0; i < 10; i++) {
    // 5 samples, then the wall clock back an hour, 5 more: 10 s apart by the monotonic clock
    const wall = wall0 + i * 10_000 - (i >= 5 ? 3_600_000 : 0);
    step(r, { t: wall, m: mono0 + i * 10_000, util: 0.5, power: 100 }, 25_000);
  }
  const f = figures(r);
  assert.equal(f.samples, 10);
  assert.equal(f.seconds, 90);
  assert.equal(f.energyJ, 9000);
  // the same sample twice is folded once
  step(r, { t: wall0, m: mono0 + 9 * 10_000, util: 1 }, 25_000);
  assert.equal(figures(r).samples, 10);
  // samples without a monotonic time (an older daemon's rollup going on) by the wall clock, as before
  const old = emptyRollup();
  step(old, { t: wall0, util: 0.5 }, 25_000);
  step(old, { t: wall0 + 10_000, util: 0.5 }, 25_000);
  step(old, { t: wall0 - 3_600_000, util: 0.5 }, 25_000);
  assert.equal(figures(old).samples, 2);
});

test("a health file's age: monotonic on this boot; a file from the future without it is not fresh", () => {
  const file = (f: Partial<HealthFile>): HealthFile => ({ version: 1, written: 0, interval_ms: 10_000, gpus: [], ...f });
  const now = Date.now();
  assert.equal(
    healthFileAge(file({ written: now + 3_600_000, written_mono: 1000, boot: 'b1' }), now, 31_000, 'b1'),
    30_000,
    'written 30 s ago by the monotonic clock, an hour "ahead" by the wall',
  );
  assert.equal(healthFileAge(file({ written: now - 20_000 }), now, 31_000, 'b1'), 20_000, "an older daemon's file: by the wall clock");
  assert.equal(healthFileAge(file({ written: now + 3_600_000 }), now, 31_000, 'b1'), Infinity, 'from the future: its age is unknown');
  assert.equal(
    healthFileAge(file({ written: now - 20_000, written_mono: 90_000, boot: 'b0' }), now, 31_000, 'b1'),
    20_000,
    "another boot's file: by the wall clock",
  );
});
