/**
 * A light command's output without process.stdout (src/cli/out.ts): the bytes
 * arrive whole whatever stdout is, colour only on a terminal (a pty from
 * util-linux's script(1)), and a non-blocking pipe that fills up gets the rest
 * through the stream instead of an EAGAIN.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { ROOT, tempDir } from '../helpers/paths.js';

const OUT = pathToFileURL(join(ROOT, 'dist/src/cli/out.js')).href;
/** A child that says on stderr what colorOut() answered and writes `bytes` bytes with writeOut (after building process.stdout if `stream`).
 * */
const child = (bytes: number, stream = false): string[] => [
  '--input-type=module',
  '-e',
  `import { colorOut, writeOut } from '${OUT}'; ${stream ? 'process.stdout;' : ''} ` +
    `process.stderr.write(String(colorOut())); writeOut('x'.repeat(${bytes - 1}) + '\\n');`,
];

test('writeOut: a file and /dev/null get the bytes and no colour; a terminal gets colour', () => {
  const dir = tempDir('l9gpu-out-');
  const file = join(dir, 'out.txt');
  for (const target of [file, '/dev/null']) {
    const fd = openSync(target, 'w');
    try {
      const r = spawnSync(process.execPath, child(100_000), {
        stdio: ['ignore', fd, 'pipe'],
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '' },
      });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, 'false', target);
    } finally {
      closeSync(fd);
    }
  }
  assert.equal(readFileSync(file, 'utf8').length, 100_000);
  const cmd = [process.execPath, ...child(10)].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const tty = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '' } });
  assert.equal(tty.status, 0, tty.stderr);
  assert.match(tty.stdout, /^true/);
  const off = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  assert.match(off.stdout, /^false/);
});

test('writeOut: a pipe gets every byte, also once process.stdout made it non-blocking and it fills up (EAGAIN)', async () => {
  for (const stream of [false, true]) {
    const bytes = 4 << 20; // far above a pipe's 64 KiB
    const c = spawn(process.execPath, child(bytes, stream), { stdio: ['ignore', 'pipe', 'pipe'] });
    let got = 0;
    let err = '';
    c.stdout.on('data', (b: Buffer) => (got += b.length));
    c.stderr.on('data', (b: Buffer) => (err += b));
    const code = await new Promise((res) => c.on('close', res));
    assert.equal(code, 0, err);
    assert.equal(got, bytes, `stream built first: ${stream}`);
  }
});

test(
  'writeOut: a reader gone (`l9gpu jobs | head -1`) ends the output quietly, not as an ' +
    "internal error; the command's exit status stays its own",
  async () => {
    for (const stream of [false, true]) {
      // the child writes only once the parent has closed the pipe's read end: EPIPE for certain, no race
      const c = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { writeOut } from '${OUT}'; ${stream ? 'process.stdout;' : ''} ` +
            `process.stdin.once('data', () => { writeOut('x'.repeat(1 << 20)); writeOut('more\\n'); ` +
            `process.stderr.write('done'); process.exitCode = 3; process.stdin.destroy(); });`,
        ],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let err = '';
      c.stderr.on('data', (b: Buffer) => (err += b));
      c.stdout.destroy();
      c.stdin.write('go\n');
      const code = await new Promise((res) => c.on('close', res));
      assert.equal(err, 'done', `stream built first: ${stream}`);
      // the command's own status (3 here), not one the broken pipe forced
      assert.equal(code, 3, err);
    }
  },
);
