import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (tests run from dist/test/...). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = join(ROOT, 'bin', 'run.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');

/**
 * The product the hooks and CLI children run: this checkout on the test's own
 * Node.js, or, in `npm test`'s bundled lane (test/lanes.ts sets
 * L9GPU_TEST_TREE), a release tree as the package installs it, on the Node.js
 * it bundles (node/bin/node, better-sqlite3 built for it). The test process
 * itself stays on the machine's Node.js either way.
 */
const tree = process.env.L9GPU_TEST_TREE;
export const PRODUCT = {
  root: tree ?? ROOT,
  node: tree ? join(tree, 'node', 'bin', 'node') : process.execPath,
  cli: join(tree ?? ROOT, 'bin', 'run.js'),
} as const;

export function tempDir(prefix = 'l9gpu-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
