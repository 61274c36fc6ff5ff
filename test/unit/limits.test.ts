/**
 * LogRate: log lines about user-controlled sources, per source and minute.
 * A user who makes more sources than it remembers must not silence them, nor
 * make their held-back lines vanish uncounted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogRate } from '../../src/core/limits.js';

test('LogRate: per source and minute; what was held back is told with the next line', () => {
  let t = 0;
  const r = new LogRate(2, () => t);
  assert.deepEqual(
    [r.allow('a'), r.allow('a'), r.allow('a'), r.allow('a')].map((x) => x.ok),
    [true, true, false, false],
  );
  assert.equal(r.allow('b').ok, true, 'another source has its own allowance');
  t += 60_000;
  assert.deepEqual(r.allow('a'), { ok: true, held: 2 });
});

test('LogRate: past 4,096 sources in a minute the rest share one allowance, still limited, still counted', () => {
  let t = 0;
  const r = new LogRate(2, () => t);
  for (let i = 0; i < 4096; i++) assert.equal(r.allow(`folder${i}`).ok, true);
  assert.deepEqual(
    ['x1', 'x2', 'x3', 'x4', 'x5'].map((s) => r.allow(s).ok),
    [true, true, false, false, false],
  );
  t += 60_000;
  // the old minute's sources are forgotten: a new source has room again, and the shared allowance tells what it held
  assert.deepEqual(r.allow('x6'), { ok: true, held: 0 });
  // with the shared allowance and x6 remembered, 4,094 more fill it again
  for (let i = 0; i < 4094; i++) assert.equal(r.allow(`again${i}`).ok, true);
  assert.deepEqual(r.allow('x7'), { ok: true, held: 3 });
});
