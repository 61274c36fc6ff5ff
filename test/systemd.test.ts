import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/paths.js';

const UNIT = join(ROOT, 'systemd', 'l9gpu.service');

test('the systemd unit verifies and is hardened', () => {
  const v = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' });
  assert.equal(v.status, 0, v.stderr);
  assert.equal(v.stderr.split('\n').filter((l) => l.includes('l9gpu.service')).join('\n'), '', 'no warnings about the unit');
  const s = spawnSync('systemd-analyze', ['security', '--offline=yes', UNIT], { encoding: 'utf8' });
  const m = /Overall exposure level for l9gpu\.service: (\d+\.\d)/.exec(s.stdout);
  assert.ok(m, s.stdout + s.stderr);
  assert.ok(Number(m[1]) <= 5, `exposure ${m[1]}`);
});
