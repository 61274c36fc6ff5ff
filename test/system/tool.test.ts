/**
 * runTool, the one way the daemon runs a program (amd-smi, hl-smi, scontrol,
 * sacct, id): real processes, each way a tool goes wrong named in the error.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runTool, ToolOutputTooLarge } from '../../src/core/tool.js';
import { tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';

const dir = tempDir('l9gpu-tool-');
function script(name: string, body: string): string {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
  return p;
}

test('the output without its final newline; the arguments as given, no shell; LC_ALL=C and the extra environment', async () => {
  const t = script('echo-args', 'printf "%s|" "$@"; echo; echo "$LC_ALL $EXTRA"');
  assert.equal(await runTool(t, ['a b', '$HOME', ';ls'], 5000, undefined, { EXTRA: 'x' }), 'a b|$HOME|;ls|\nC x');
});

test('a failing tool: its exit code and the first line it wrote to stderr', async () => {
  const t = script('fails', 'echo "" >&2; echo "ERROR: no GPU" >&2; echo more >&2; exit 3');
  await assert.rejects(runTool(t, ['list'], 5000), { message: `${t} list: exit code 3: ERROR: no GPU` });
  const k = script('killed', 'kill -9 $$');
  await assert.rejects(runTool(k, [], 5000), { message: `${k} : killed by SIGKILL` });
});

test('a missing or non-executable tool is named', async () => {
  await assert.rejects(runTool(join(dir, 'nope'), ['x'], 5000), /nope x: spawn \S+nope ENOENT/);
  const p = join(dir, 'not-exec');
  writeFileSync(p, 'echo');
  await assert.rejects(runTool(p, [], 5000), /not-exec : spawn \S+not-exec EACCES/);
});

test('a tool that does not answer: an error at the timeout, and the tool killed', async () => {
  const pidFile = join(dir, 'hang.pid');
  const t = script('hang', `echo $$ > '${pidFile}'; exec sleep 60`);
  const t0 = Date.now();
  await assert.rejects(runTool(t, ['metric'], 400), { message: `${t} metric: no answer within 0.4 s` });
  assert.ok(Date.now() - t0 < 5000);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  await waitFor('the tool killed', () => !existsSync(`/proc/${pid}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8')));
});

test('a collection given up (abort signal) kills the tool; output over 16 MiB is refused', async () => {
  const t = script('slow', 'exec sleep 60');
  const ac = new AbortController();
  const p = runTool(t, [], 60_000, ac.signal);
  ac.abort();
  await assert.rejects(p, { message: `${t} : cancelled` });
  const big = script('big', 'head -c 17000000 /dev/zero');
  await assert.rejects(
    runTool(big, [], 30_000),
    (e: Error) => e instanceof ToolOutputTooLarge && /big : output larger than 16777216 bytes/.test(e.message),
  );
});

test(
  'a wrapper whose child keeps the pipes open: the timeout kills the whole process group; a ' +
    'tool that exits leaving such a child answers with what it wrote',
  async () => {
    const pidFile = join(dir, 'grandchild.pid');
    // hl-smi/amd-smi are often wrappers: the real work runs in a child that inherits stdout
    const hung = script('wrapper-hung', `sleep 60 & echo $! > '${pidFile}'; wait`);
    const t0 = Date.now();
    await assert.rejects(runTool(hung, ['-Q'], 500), { message: `${hung} -Q: no answer within 0.5 s` });
    assert.ok(Date.now() - t0 < 5000, "not held by the child's open stdout");
    const gone = (pid: number) => !existsSync(`/proc/${pid}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const child = Number(readFileSync(pidFile, 'utf8'));
    await waitFor('the child killed with its parent', () => gone(child));

    const left = script('wrapper-left', `sleep 60 & echo $! > '${pidFile}'; echo '{"ok": true}'; exit 0`);
    const t1 = Date.now();
    assert.equal(await runTool(left, [], 30_000), '{"ok": true}');
    assert.ok(Date.now() - t1 < 5000, 'answered when the tool exited, not when its child let go of stdout');
    const orphan = Number(readFileSync(pidFile, 'utf8'));
    await waitFor('the child it left killed', () => gone(orphan));
  },
);
