/**
 * Straggler detection (plugins/nccl/straggler.ts) on operations built to
 * have one slow rank, jitter, and operations of other sizes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { median, stragglers, type RankTime } from '../../src/nccl/straggler.js';

/** A deterministic jitter in [-j, j]. */
const jitter = (i: number, j: number) => (((i * 2654435761) % 1000) / 1000 - 0.5) * 2 * j;

function ops(n: number, ranks: number, slow: Record<number, number>, j = 0.05): RankTime[][] {
  const out: RankTime[][] = [];
  for (let i = 0; i < n; i++) {
    // sizes alternate: a rank is compared with its peers on the same operation, never across sizes
    const base = i % 2 ? 0.062 : 0.0021;
    out.push(Array.from({ length: ranks }, (_, r) => ({ rank: r, seconds: base * (slow[r] ?? 1) * (1 + jitter(i * ranks + r, j)) })));
  }
  return out;
}

test('one rank 1.8x slower on every operation of 8 ranks, with 5% jitter: flagged alone, with its factor', () => {
  const s = stragglers(ops(40, 8, { 2: 1.8 }));
  assert.equal(s.length, 1);
  assert.equal(s[0]!.rank, 2);
  assert.ok(Math.abs(s[0]!.factor - 1.8) < 0.1, `factor ${s[0]!.factor}`);
  assert.equal(s[0]!.operations, 40);
});

test('no straggler: jitter alone, a rank slow on a few operations only, too few operations, or 10% slower (under the margin)', () => {
  assert.deepEqual(stragglers(ops(40, 8, {}, 0.1)), []);
  const some = ops(40, 8, {});
  for (const i of [3, 17, 29]) some[i]![5] = { rank: 5, seconds: some[i]![5]!.seconds * 4 };
  assert.deepEqual(stragglers(some), [], 'three slow operations of forty: the median ratio is 1');
  assert.deepEqual(stragglers(ops(5, 8, { 2: 3 })), [], 'five operations: too few');
  assert.deepEqual(stragglers(ops(40, 8, { 2: 1.1 }, 0)), [], '10% slower: under the 1.2 margin');
});

test('two slow ranks of eight are both flagged, the slowest first; the median is the middle, or the mean of the two middles', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  const s = stragglers(ops(40, 8, { 1: 2, 6: 1.5 }));
  assert.deepEqual(
    s.map((x) => x.rank),
    [1, 6],
  );
});
