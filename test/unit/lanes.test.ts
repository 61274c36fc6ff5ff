/**
 * `npm test`'s lanes (test/lanes.ts): the unit lane holds only files its rule
 * admits, every file is in exactly one lane, and the combined summary is the
 * sum of the lanes' (what CI reads).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BUNDLED_FILES, FOLDERS, laneKey, lanesFor, relabel } from '../lanes.js';
import { ROOT } from '../helpers/paths.js';

// what a unit file may import: Node's in-process modules and the helpers that start nothing and listen on nothing
// (fake-nvml runs gcc into its own temporary folder, which the rule allows)
const NODE_OK = new Set(['assert/strict', 'test', 'fs', 'path', 'zlib', 'module', 'os', 'url', 'crypto', 'util', 'buffer', 'events']);
const HELPERS_OK = new Set([
  'paths',
  'config',
  'layers',
  'string-coupling',
  'fake-nvml',
  'histograms',
  'otlp-decode',
  'promql-names',
  'wait',
]);

test(
  'a unit-lane file runs in the test process only: no child processes, sockets, daemons or ' + 'real components (its imports and calls)',
  () => {
    const unit = readdirSync(join(ROOT, 'test', 'unit')).filter((f) => f.endsWith('.test.ts'));
    assert.ok(unit.length > 10, 'the unit folder holds the unit files');
    for (const f of unit) {
      const src = readFileSync(join(ROOT, 'test', 'unit', f), 'utf8');
      for (const [, mod] of src.matchAll(/from 'node:([\w/]+)'/g))
        assert.ok(NODE_OK.has(mod!), `${f} imports node:${mod}: not a unit file (test/README.md)`);
      for (const [, h] of src.matchAll(/from '\.\.\/helpers\/([\w-]+)\.js'/g))
        assert.ok(HELPERS_OK.has(h!), `${f} imports helpers/${h}: not a unit file (test/README.md)`);
      assert.doesNotMatch(src, /\.listen\(|\brunuser\b|process\.setuid/, `${f} listens or changes user: not a unit file`);
    }
  },
);

test(
  "a file's lane is its folder (unit, slurm, packages, system, serial, alone, wire, lint), each file in one; a file " +
    'elsewhere runs in the serial lane; the bundled lane runs its files again',
  () => {
    const files = FOLDERS.flatMap((d) =>
      readdirSync(join(ROOT, 'test', d))
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `${d}/${f.replace(/\.ts$/, '.js')}`),
    );
    for (const u of BUNDLED_FILES) assert.ok(files.includes(u), `the bundled lane names ${u}, which does not exist`);
    const lanes = lanesFor([...files, 'new.test.js']);
    assert.deepEqual(
      lanes
        .filter((l) => l.name !== 'bundled')
        .flatMap((l) => l.files)
        .sort(),
      [...files, 'new.test.js'].sort(),
    );
    assert.deepEqual(lanes.find((l) => l.name === 'bundled')!.files.sort(), [...BUNDLED_FILES].sort());
    const of = (f: string) => lanes.find((l) => l.files.includes(f))!;
    assert.equal(of('new.test.js').name, 'serial');
    assert.equal(of('new.test.js').concurrency, 1);
    assert.deepEqual(lanes.find((l) => l.name === 'slurm')!.files.sort(), [
      'slurm/slurm-22.05.test.js',
      'slurm/slurm-24.11.test.js',
      'slurm/slurm-26.05.test.js',
    ]);
    assert.equal(of('unit/slurm-parse.test.js').name, 'unit');
    assert.equal(of('packages/rollout.test.js').name, 'packages');
    assert.equal(of('wire/listener-hostile.test.js').name, 'wire');
    assert.equal(of('alone/hostile.test.js').name, 'alone');
    assert.equal(laneKey('/x/dist/test/system/hooks.test.js'), 'system/hooks.test.js');
  },
);

// the end of `node --test --test-reporter=tap` (Node 20) for a file with two tests, one failing
const LANE_TAP = `TAP version 13
# Subtest: a
ok 1 - a
  ---
  duration_ms: 1.5
  ...
# Subtest: b
not ok 2 - b
  ---
  duration_ms: 2
  ...
1..2
# tests 2
# suites 0
# pass 1
# fail 1
# cancelled 0
# skipped 0
# todo 0
# duration_ms 99.1
`;

test("a lane's TAP: numbered on from the lanes before it, header, plan and summary left to the runner, its counts returned", () => {
  const r = relabel(LANE_TAP, 5);
  assert.equal(r.top, 2);
  assert.deepEqual(r.counts, { tests: 2, suites: 0, pass: 1, fail: 1, cancelled: 0, skipped: 0, todo: 0 });
  assert.equal(
    r.text,
    '# Subtest: a\nok 6 - a\n  ---\n  duration_ms: 1.5\n  ...\n# Subtest: b\nnot ok 7 - b\n  ---\n  duration_ms: 2\n  ...',
  );
  // nested subtests keep their own numbers
  assert.match(
    relabel('# Subtest: s\n    ok 1 - inner\n    1..1\nok 1 - s\n# tests 1\n# pass 1\n', 0).text,
    /^ {4}ok 1 - inner\n {4}1\.\.1\nok 1 - s$/m,
  );
});

test('a lane that printed no summary (its runner crashed) counts as a failure', () => {
  assert.equal(relabel('TAP version 13\n# Subtest: a\n', 0).counts.fail, 1);
});
