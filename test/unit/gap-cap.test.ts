/** The gap cap both sources of a job's figures apply (src/figures/gap-cap.ts): the interval found in timestamps alone. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectionInterval, gapCapMs } from '../../src/figures/gap-cap.js';
import { SlotStamps } from '../../daemon/runner.js';

/** Sample times from gaps, starting at a wall time of the run's day. */
const times = (gaps: number[]): number[] => gaps.reduce((t, g) => [...t, t.at(-1)! + g], [1_764_763_200_000]);

test("the collection interval from timestamps alone: the most frequent gap, where the median of a loaded node's is not", () => {
  assert.equal(collectionInterval(times([300, 300, 300, 300])), 300);
  // the failure seen in a loaded run: most ticks late by a few ms (stamped when they ran), their median 302 ms; the
  // on-time pairs stamped whole intervals apart are the most frequent gap, and the store's cap is 2.5 x 300 ms
  const loaded = [300, 303, 299, 304, 300, 302, 306, 298, 300, 305, 301, 303, 307];
  const sorted = [...loaded].sort((a, b) => a - b);
  assert.equal(sorted[Math.floor(sorted.length / 2)], 302, 'the median the report used before');
  assert.equal(collectionInterval(times(loaded)), 300);
  assert.equal(gapCapMs(collectionInterval(times(loaded))), gapCapMs(300));
  // a skipped tick is a gap of two intervals, not the interval
  assert.equal(collectionInterval(times([300, 600, 300, 600, 300])), 300);
  // a tie goes to the shorter gap; no gap twice: the median; nothing to go by: unknown, so no cap
  assert.equal(collectionInterval(times([300, 600, 600, 300])), 300);
  assert.equal(collectionInterval(times([301, 305, 302])), 302);
  assert.equal(collectionInterval(times([])), 0);
  assert.equal(gapCapMs(0), Infinity);
});

test('on-time stamps are whole intervals apart to the millisecond; a late one keeps when it ran; a moved clock re-anchors', () => {
  const stamps = new SlotStamps(300);
  // the wall clock's offset from the monotonic one has a fraction of a ms: Date.now() truncates it
  const offset = 1_764_763_200_000.73;
  const at = (started: number) => Math.floor(offset + started);
  const s0 = 1000.4567;
  const got: { time: number; late: boolean }[] = [];
  const old: number[] = [];
  for (let k = 0; k < 40; k++) {
    const slot = s0 + k * 300;
    // on time, late by up to 9.9 ms (within the 30 ms tolerance), except every tenth tick, 80 ms late
    const late = k % 10 === 9;
    const started = slot + (late ? 80 : (k * 3.7) % 9.9);
    got.push({ time: stamps.stamp(slot, started, at(started)).time, late });
    old.push(Math.round(at(started) - (started - slot)));
  }
  const onTimeGaps = got.slice(1).flatMap((g, i) => (g.late || got[i]!.late ? [] : [g.time - got[i]!.time]));
  assert.deepEqual([...new Set(onTimeGaps)], [300]);
  // Date.now() less the delay, as before: 1 ms off the interval on some on-time neighbours
  const oldGaps = old.slice(1).flatMap((t, i) => (got[i + 1]!.late || got[i]!.late ? [] : [t - old[i]!]));
  assert.ok(new Set(oldGaps).size > 1, JSON.stringify([...new Set(oldGaps)]));
  // a late start keeps the time it ran
  const late = s0 + 40 * 300;
  assert.deepEqual(stamps.stamp(late, late + 80, at(late + 80)), { time: at(late + 80), mono: late + 80 });
  // the wall clock stepped 5 s forward: the next on-time stamp follows it, and the ones after are whole intervals again
  const stepped = (started: number) => Math.floor(offset + 5000 + started);
  const after = [41, 42, 43].map((k) => s0 + k * 300).map((slot) => stamps.stamp(slot, slot + 1, stepped(slot + 1)).time);
  assert.ok(Math.abs(after[0]! - (offset + 5000 + s0 + 41 * 300)) <= 1.5, `${after[0]}`);
  assert.deepEqual([after[1]! - after[0]!, after[2]! - after[1]!], [300, 300]);
});
