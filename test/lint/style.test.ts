/**
 * The house style, checked by `npm test` (its own lane, beside the unit and
 * Slurm lanes): every TypeScript file as prettier lays it out, no line over
 * prettier's width (it does not break strings, comments or regular
 * expressions), and the linter's few rules (eslint.config.js) clean.
 * `npm run format` rewrites the files; `npm run lint` prints the findings.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from '../helpers/paths.js';

const run = promisify(execFile);
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
const WIDTH = (JSON.parse(readFileSync(join(ROOT, '.prettierrc.json'), 'utf8')) as { printWidth: number }).printWidth;

/** The project's TypeScript files, as git knows them (tracked and new, not ignored). */
async function sources(): Promise<string[]> {
  const { stdout } = await run('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', '*.ts'], { cwd: ROOT });
  return stdout.split('\n').filter((f) => f && !f.startsWith('runtime/'));
}

/** A child's failure as its output (a non-zero exit is a finding here, not an error of the test). */
async function output(cmd: string, args: string[]): Promise<{ code: number; text: string }> {
  try {
    const r = await run(cmd, args, { cwd: ROOT, maxBuffer: 64 << 20 });
    return { code: 0, text: r.stdout + r.stderr };
  } catch (e) {
    const f = e as { code?: number; stdout?: string; stderr?: string };
    if (typeof f.code !== 'number') throw e;
    return { code: f.code, text: `${f.stdout ?? ''}${f.stderr ?? ''}` };
  }
}

test('every TypeScript file is as prettier lays it out (npm run format rewrites them)', async () => {
  const files = await sources();
  assert.ok(files.length > 100, `the sources found: ${files.length}`);
  const r = await output(bin('prettier'), ['--check', '--log-level=warn', ...files]);
  assert.equal(r.code, 0, `not formatted (npm run format):\n${r.text}`);
});

test(`no line of a TypeScript file is over prettier's width (${WIDTH}): split the string, comment or expression`, async () => {
  const over: string[] = [];
  for (const f of await sources()) {
    readFileSync(join(ROOT, f), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.length > WIDTH) over.push(`${f}:${i + 1}: ${line.length} characters`);
      });
  }
  assert.deepEqual(over, []);
});

test('the linter finds nothing: floating promises, awaits of non-promises, unused values (npm run lint)', async () => {
  const r = await output(bin('eslint'), ['--max-warnings=0', '.']);
  assert.equal(r.code, 0, r.text);
});
