/**
 * The NCCL Inspector log tailer (plugins/nccl/tail.ts) on real files, written
 * the ways the Inspector and its environment write them: appended in pieces
 * that end mid-line, truncated by a new process (fopen "w"), rewritten from
 * the start, rotated, deleted; and one line longer than the bound.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  openSync,
  readdirSync,
  readlinkSync,
  renameSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { FileTail } from '../../plugins/nccl/tail.js';
import { tempDir } from '../helpers/paths.js';

const line = (i: number, tag = 'a') =>
  `{"header":{"id":"0x${tag}","rank":${i % 8}},"coll_perf":{"coll":"AllReduce","coll_sn":${i},"coll_msg_size_bytes":${1024 * i}}}`;

test('appended in pieces that end mid-line: every line once, a partial one when its newline comes', () => {
  const f = join(tempDir('l9gpu-tail-'), 'node01-pid100.log');
  writeFileSync(f, `${line(1)}\n${line(2)}\n${line(3).slice(0, 20)}`);
  const t = new FileTail(f);
  assert.deepEqual(t.poll().lines, [line(1), line(2)]);
  assert.deepEqual(t.poll().lines, [], 'nothing new');
  appendFileSync(f, `${line(3).slice(20)}\n${line(4)}\n`);
  assert.deepEqual(t.poll().lines, [line(3), line(4)]);
  t.close();
});

test('truncated by a new process, or rewritten from the start past the position read: read again from the beginning', () => {
  const f = join(tempDir('l9gpu-tail-'), 'node01-pid100.log');
  writeFileSync(f, `${line(1)}\n${line(2)}\n`);
  const t = new FileTail(f);
  t.poll();
  writeFileSync(f, `${line(9, 'b')}\n`); // fopen("w") by the next process: shorter
  const a = t.poll();
  assert.deepEqual([a.lines, a.events], [[line(9, 'b')], ['truncated']]);
  // truncated and written again beyond where the tailer was, between two polls: its first bytes differ
  writeFileSync(f, `${line(20, 'c')}\n${line(21, 'c')}\n${line(22, 'c')}\n`);
  const b = t.poll();
  assert.deepEqual([b.lines, b.events], [[line(20, 'c'), line(21, 'c'), line(22, 'c')], ['rewritten']]);
  t.close();
});

test(
  'rotated: the old file read to its end through the open descriptor (a writer still ' +
    'appending to it), then the new one; deleted: its last lines, then closed',
  () => {
    const dir = tempDir('l9gpu-tail-');
    const f = join(dir, 'node01-pid100.log');
    writeFileSync(f, `${line(1)}\n`);
    const t = new FileTail(f);
    assert.deepEqual(t.poll().lines, [line(1)]);
    const w = openSync(f, 'a');
    renameSync(f, `${f}.1`);
    writeSync(w, `${line(2)}\n${line(3)}`); // the old writer goes on, its last line unended
    closeSync(w);
    writeFileSync(f, `${line(4, 'b')}\n`);
    const r = t.poll();
    assert.deepEqual([r.lines, r.events], [[line(2), line(3), line(4, 'b')], ['rotated']]);
    appendFileSync(f, `${line(5, 'b')}\n`);
    unlinkSync(f);
    const d = t.poll();
    assert.deepEqual([d.lines, d.events], [[line(5, 'b')], ['deleted']]);
    assert.deepEqual(t.poll().lines, []);
    t.close();
  },
);

test('a line longer than the bound is skipped and counted, in pieces or whole; the lines around it are read; memory stays bounded', () => {
  const f = join(tempDir('l9gpu-tail-'), 'node01-pid100.log');
  writeFileSync(f, `${line(1)}\n${'x'.repeat(3000)}`);
  const t = new FileTail(f, { maxLine: 1000, maxRead: 1024 });
  const polls = [t.poll(), t.poll(), t.poll(), t.poll()];
  appendFileSync(f, `${'y'.repeat(500)}\n${line(2)}\n${'z'.repeat(5000)}\n${line(3)}\n`);
  for (let i = 0; i < 12; i++) polls.push(t.poll());
  assert.deepEqual(
    polls.flatMap((p) => p.lines),
    [line(1), line(2), line(3)],
  );
  assert.equal(
    polls.reduce((a, p) => a + p.skipped, 0),
    2,
  );
  t.close();
});

/** Lines written and polled in any interleaving, with truncations; `park`: the descriptor closed after each poll. */
function interleavings(park: boolean): void {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 400 }), fc.boolean(), fc.integer({ min: 0, max: 30 })), { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 64, max: 4096 }),
      (steps, maxRead) => {
        const f = join(tempDir('l9gpu-tail-prop-'), 'node01-pid7.log');
        writeFileSync(f, '');
        const t = new FileTail(f, { maxRead });
        let gen = 0;
        let n = 0;
        const want: string[] = [];
        const got: string[] = [];
        const drain = () => {
          for (let i = 0; i < 10_000; i++) {
            const r = t.poll();
            got.push(...r.lines);
            if (r.lines.length === 0 && r.events.length === 0 && t.lag === 0) break;
          }
        };
        for (const [bytes, poll, truncate] of steps) {
          if (truncate === 0) {
            // a new process: everything of the old one read first (the Inspector's files are per pid, so a
            // truncation follows the end of the old writer), then fopen("w")
            drain();
            gen++;
            truncateSync(f, 0);
          }
          let add = '';
          while (add.length < bytes) {
            const l = line(n++, `g${gen}`);
            add += `${l}\n`;
            want.push(l);
          }
          // written in two pieces, the first ending mid-line
          const cut = Math.floor(add.length / 2);
          appendFileSync(f, add.slice(0, cut));
          if (poll) got.push(...t.poll().lines);
          if (park) t.park();
          appendFileSync(f, add.slice(cut));
          if (poll) got.push(...t.poll().lines);
          if (park) t.park();
        }
        drain();
        t.close();
        assert.deepEqual(got, want);
      },
    ),
    { seed: 20261123, numRuns: 60 },
  );
}

test('written and polled in any interleaving, with truncations: every line of each file generation exactly once, in order', () =>
  interleavings(false));

test('the same, parked (descriptor closed) after every poll: opened again where it was, nothing lost or read twice', () =>
  interleavings(true));

/** Whether this process holds a descriptor on `path`. */
const holds = (path: string) =>
  readdirSync('/proc/self/fd').some((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  });

test(
  'parked: no descriptor held, none opened while nothing is new; a link or FIFO put in its ' + 'place is refused (said once), never opened',
  () => {
    const dir = tempDir('l9gpu-tail-');
    const f = join(dir, 'node01-pid100.log');
    const secret = join(dir, 'secret');
    writeFileSync(secret, 'SECRET-BYTES\n', { mode: 0o600 });
    writeFileSync(f, `${line(1)}\n`);
    const t = new FileTail(f);
    assert.deepEqual(t.poll().lines, [line(1)]);
    t.park();
    assert.ok(!holds(f) && !t.isOpen);
    assert.deepEqual(t.poll().lines, []);
    assert.ok(!t.isOpen, 'nothing new: not opened');
    appendFileSync(f, `${line(2)}\n`);
    assert.deepEqual(t.poll().lines, [line(2)]);
    t.park();
    unlinkSync(f);
    symlinkSync(secret, f);
    const r = t.poll();
    assert.deepEqual([r.lines, r.events, r.refused?.why], [[], ['rotated'], 'not_regular_file']);
    assert.equal(t.poll().refused, undefined, 'said once');
    unlinkSync(f);
    execFileSync('mkfifo', [f]);
    assert.equal(t.poll().refused?.why, 'not_regular_file');
    assert.ok(!holds(f));
    t.close();
  },
);

test(
  "NUL runs (a sparse file's holes) between lines, across reads and at the end are no lines; " +
    'skipToEnd leaves a backlog unread and follows what comes after',
  () => {
    const f = join(tempDir('l9gpu-tail-'), 'node01-pid100.log');
    writeFileSync(
      f,
      Buffer.concat([
        Buffer.from(`${line(1)}\n`),
        Buffer.alloc(3 << 20),
        Buffer.from(`${line(2)}\n`),
        Buffer.alloc(100),
        Buffer.from(`${line(3)}\n`),
        Buffer.alloc(2 << 20),
      ]),
    );
    const t = new FileTail(f, { maxLine: 1024 });
    const got: string[] = [];
    for (let i = 0; i < 10 && (i === 0 || t.lag > 0); i++) got.push(...t.poll().lines);
    assert.deepEqual(got, [line(1), line(2), line(3)]);
    appendFileSync(f, `${line(4)}\n${line(5)}\n${line(6).slice(0, 7)}`);
    const s = new FileTail(f, { maxRead: 100 });
    s.poll();
    assert.ok(s.skipToEnd() > 0);
    appendFileSync(f, `${line(6).slice(7)}\n${line(7)}\n`);
    // the line the skip landed in is no line; the next is
    const after: string[] = [];
    for (let i = 0; i < 10 && (i === 0 || s.lag > 0); i++) after.push(...s.poll().lines);
    assert.deepEqual(after, [line(7)]);
    s.close();
    t.close();
  },
);

test(
  'tails read into one buffer grown on demand: 64 followed files hold no read buffer each; a ' +
    'backlog read through a growing buffer is every line once',
  () => {
    const dir = tempDir('l9gpu-tail-');
    const before = process.memoryUsage().arrayBuffers;
    const tails: FileTail[] = [];
    for (let k = 0; k < 64; k++) {
      const f = join(dir, `node01-pid${k}.log`);
      writeFileSync(f, `${line(k)}\n`);
      // as the nccl plugin follows them (maxRead 512 KiB: a buffer of that each, before)
      const t = new FileTail(f, { maxLine: 256 << 10, maxRead: 512 << 10 });
      assert.deepEqual(t.poll().lines, [line(k)]);
      tails.push(t);
    }
    const held = process.memoryUsage().arrayBuffers - before;
    assert.ok(held < 4 << 20, `64 tails hold ${(held / 2 ** 20).toFixed(1)} MiB of buffers`);
    // a backlog of ~3 MiB: read in growing pieces, every line once, and the small tails after it unaffected
    const big = join(dir, 'node01-pid999.log');
    const n = 20_000;
    writeFileSync(big, Array.from({ length: n }, (_, i) => `${line(i, 'c')}\n`).join(''));
    const t = new FileTail(big);
    const got = t.poll().lines;
    assert.equal(got.length, n);
    assert.ok(got.every((l, i) => l === line(i, 'c')));
    for (let k = 0; k < 64; k++) {
      appendFileSync(join(dir, `node01-pid${k}.log`), `${line(k + 1000)}\n`);
      assert.deepEqual(tails[k]!.poll().lines, [line(k + 1000)]);
    }
    for (const x of [...tails, t]) x.close();
  },
);
