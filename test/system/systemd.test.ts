import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, tempDir } from '../helpers/paths.js';

const UNIT = join(ROOT, 'systemd', 'l9gpu.service');

test('the systemd unit verifies and is hardened', () => {
  // verified in a root laid out as the package installs it (ExecStart= names the package's own Node.js),
  // with this machine's systemd units and the programs the unit names
  const root = tempDir('l9gpu-unit-');
  cpSync('/lib/systemd/system', join(root, 'lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
  for (const x of ['opt/l9gpu/node/bin/node', 'bin/kill']) {
    mkdirSync(join(root, x, '..'), { recursive: true });
    writeFileSync(join(root, x), '#!/bin/sh\n', { mode: 0o755 });
  }
  mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
  copyFileSync(UNIT, join(root, 'etc/systemd/system/l9gpu.service'));
  const v = spawnSync('systemd-analyze', ['verify', `--root=${root}`, 'l9gpu.service'], { encoding: 'utf8' });
  assert.equal(v.status, 0, v.stderr);
  assert.equal(
    v.stderr
      .split('\n')
      .filter((l) => l.includes('l9gpu.service'))
      .join('\n'),
    '',
    'no warnings about the unit',
  );
  const s = spawnSync('systemd-analyze', ['security', '--offline=yes', UNIT], { encoding: 'utf8' });
  const m = /Overall exposure level for l9gpu\.service: (\d+\.\d)/.exec(s.stdout);
  assert.ok(m, s.stdout + s.stderr);
  assert.ok(Number(m[1]) <= 5, `exposure ${m[1]}`);
});
