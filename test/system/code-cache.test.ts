/**
 * bin/code-cache.cjs: the bundles run with V8's code cache of an earlier run,
 * read and written only where root alone may write, and never the code of
 * another bundle. The cache is what root's hooks execute: V8 itself checks a
 * cache against its source's length only (a cache of `console.log("AAAA")`
 * runs for `console.log("BBBB")`), so the file's identity is in its name.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, tempDir } from '../helpers/paths.js';

const LOADER = join(ROOT, 'bin', 'code-cache.cjs');

/** A bundle as the hooks' is run: `node code-cache.cjs <cache> <bundle> <args>` (slurm/hook-run), its output. */
function run(cache: string, bundle: string, ...args: string[]): string {
  const r = spawnSync(process.execPath, [LOADER, cache, bundle, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** A bundle that says which it is (same length for every word of 4 letters) and how it was started. */
function bundle(dir: string, word: string): string {
  const f = join(dir, 'hook.cjs');
  writeFileSync(
    join(dir, 'next.cjs'),
    `function say() { return ${JSON.stringify(word)}; }\nconsole.log(say(), ` +
      `JSON.stringify(process.argv.slice(1)), __filename === ${JSON.stringify(f)}, typeof ` +
      `require('node:path').join);\n`,
  );
  renameSync(join(dir, 'next.cjs'), f); // a new file, as a package upgrade writes it
  return f;
}

const cacheFiles = (cache: string) => readdirSync(cache).filter((n) => n.endsWith('.v8'));

test(
  "the first run writes the code cache (root's, 0644, named after the bundle, the runtime and " +
    'the command); the next reads it; the bundle runs as the main script',
  () => {
    const d = tempDir('l9gpu-codecache-');
    const cache = join(d, 'cache');
    mkdirSync(cache, { mode: 0o755 });
    const f = bundle(d, 'AAAA');
    assert.equal(run(cache, f, 'prolog'), `AAAA ${JSON.stringify([f, 'prolog'])} true function\n`);
    const [written, ...more] = cacheFiles(cache);
    assert.deepEqual(more, []);
    assert.match(
      written!,
      new RegExp(`^hook\\.cjs\\.${process.version.replace(/\./g, '\\.')}-${process.arch}\\.\\d+-\\d+-\\d+\\.prolog\\.v8$`),
    );
    const st = statSync(join(cache, written!));
    assert.deepEqual([st.uid, st.mode & 0o777], [0, 0o644]);
    // read, not written again; another command of the same bundle starts from it and writes its own
    const before = st.mtimeMs;
    assert.equal(run(cache, f, 'prolog'), `AAAA ${JSON.stringify([f, 'prolog'])} true function\n`);
    assert.equal(statSync(join(cache, written!)).mtimeMs, before);
    run(cache, f, 'epilog');
    assert.deepEqual(
      cacheFiles(cache)
        .map((n) => n.split('.').at(-2))
        .sort(),
      ['epilog', 'prolog'],
    );
  },
);

test('a replaced bundle of the same length never runs the code cached for the old one', () => {
  const d = tempDir('l9gpu-codecache-');
  const cache = join(d, 'cache');
  mkdirSync(cache, { mode: 0o755 });
  assert.match(run(cache, bundle(d, 'AAAA'), 'prolog'), /^AAAA /);
  assert.match(run(cache, bundle(d, 'BBBB'), 'prolog'), /^BBBB /);
  assert.equal(cacheFiles(cache).length, 2, 'one cache per bundle file');
});

test('a cache folder others may write, or root does not own, is neither read nor written', () => {
  const d = tempDir('l9gpu-codecache-');
  const trusted = join(d, 'trusted');
  mkdirSync(trusted, { mode: 0o755 });
  const f = bundle(d, 'AAAA');
  run(trusted, f, 'prolog');
  const [made] = cacheFiles(trusted);
  // B's source has A's length: were A's cache planted under B's name and read, "AAAA" would be printed
  const b = bundle(d, 'BBBB');
  run(trusted, b, 'prolog');
  const bName = cacheFiles(trusted).find((n) => n !== made)!;
  for (const [what, prepare] of [
    ['group and others may write it', (c: string) => chmodSync(c, 0o777)],
    ['a user owns it', (c: string) => chownSync(c, 65534, 65534)],
  ] as const) {
    const c = join(d, what.replace(/\W+/g, '-'));
    mkdirSync(c, { mode: 0o755 });
    copyFileSync(join(trusted, made!), join(c, bName));
    prepare(c);
    assert.match(run(c, b, 'prolog'), /^BBBB /, `${what}: not read`);
    assert.deepEqual(cacheFiles(c), [bName], `${what}: nothing written`);
  }
  // a cache file a user could write, in root's folder, is not read either
  const c = join(d, 'writable-file');
  mkdirSync(c, { mode: 0o755 });
  copyFileSync(join(trusted, made!), join(c, bName));
  chmodSync(join(c, bName), 0o666);
  assert.match(run(c, b, 'prolog'), /^BBBB /);
});

test('without a cache folder (a checkout: "") the bundle runs as it is', () => {
  const d = tempDir('l9gpu-codecache-');
  const f = bundle(d, 'AAAA');
  assert.equal(run('', f, 'epilog', '--x'), `AAAA ${JSON.stringify([f, 'epilog', '--x'])} true function\n`);
  assert.deepEqual(readdirSync(d).sort(), ['hook.cjs']);
});
