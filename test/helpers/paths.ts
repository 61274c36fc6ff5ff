import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (tests run from dist/test/...). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = join(ROOT, 'bin', 'run.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');

export function tempDir(prefix = 'l9gpu-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
