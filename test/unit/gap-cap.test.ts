/** The gap cap both sources of a job's figures apply (src/figures/gap-cap.ts): the interval found in timestamps alone. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectionInterval, gapCapMs } from '../../src/figures/gap-cap.js';

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
