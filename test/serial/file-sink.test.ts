/**
 * The file sink against a hostile local user (the daemon runs as root): links,
 * FIFOs, devices, swapped files and folders, and a full filesystem. Real
 * symlinks, FIFOs, users (runuser nobody) and a real tmpfs; runs as root.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { DaemonProcess, parseLines, runCli } from '../helpers/daemon.js';
import { configFrom } from '../helpers/config.js';
import { tempDir } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';
import { createLogger } from '../../src/core/log.js';
import type { Batch } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import type { Sink } from '../../src/core/sink.js';
import { fileSink } from '../../src/sinks/file.js';

const NOBODY = 65534;
const base = tempDir();
// nobody must reach the folders the tests give it
chmodSync(base, 0o755);
const MARKER_TEXT = 'root only: never appended to\n';
const marker = join(base, 'marker');
writeFileSync(marker, MARKER_TEXT, { mode: 0o600 });

function folder(name: string, mode = 0o755, uid = 0): string {
  const d = join(base, name);
  mkdirSync(d);
  chmodSync(d, mode); // mkdir's mode goes through the umask
  chownSync(d, uid, 0);
  return d;
}

function asNobody(...cmd: string[]): void {
  execFileSync('runuser', ['-u', 'nobody', '--', ...cmd], { stdio: 'pipe' });
}

function fileSinkAt(path: string, extra: Record<string, string> = {}): { sink: Sink; log: string[] } {
  const log: string[] = [];
  const sink = fileSink.create({
    config: configFrom({ file: { path, max_bytes: '1GiB', ...extra } }),
    log: createLogger('info', (l) => log.push(l)),
    resource: { 'service.name': 'l9gpu' },
    startTime: 1_794_999_000_000,
  });
  return { sink, log };
}

let tick = 0;
/** A batch of `n` gauge points, each line telling its batch and index apart. */
function batch(n = 20): Batch {
  const t = tick++;
  return {
    source: 'test',
    time: 1_795_000_000_000 + t * 1000,
    intervalMs: 1000,
    points: Array.from({ length: n }, (_, i) => ({
      metric: metric('gpu.utilization'),
      value: i / n,
      attributes: { 'gpu.uuid': `GPU-${t}-${i}`, 'gpu.index': i },
    })),
  };
}

const linesOf = (path: string): string[] => readFileSync(path, 'utf8').split('\n').filter(Boolean);

test(
  'file sink: a symlink a user plants at the path is refused, by the sink and the daemon; the ' + 'root-only file it names is unchanged',
  async () => {
    const pub = folder('pub-link', 0o1777);
    const path = join(pub, 'metrics.jsonl');
    asNobody('ln', '-s', marker, path);
    const ini = join(base, 'link.ini');
    writeFileSync(ini, `[daemon]\nplugins = sim\nsinks = file, stdout\n[sim]\ngpus = 1\n[file]\npath = ${path}\n`);
    const r = await runCli(['daemon', '--once', '--config', ini]);
    assert.equal(readFileSync(marker, 'utf8'), MARKER_TEXT);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /sink could not start: retrying sink=file error="refusing \S+metrics.jsonl: a symlink/);
    assert.ok(
      parseLines(r.stdout).some((p) => p.name === 'gpu.utilization'),
      'the other sink still gets the data',
    );

    const probe = await fileSink.probe(configFrom({ file: { path } }));
    assert.equal(probe.ok, false);
    assert.match(probe.detail, new RegExp(`${path} would be refused: a symlink`), 'doctor says it before the daemon runs');

    const { sink } = fileSinkAt(path);
    await assert.rejects(sink.start!(), new RegExp(`refusing ${path}: a symlink \\(never followed`));
    sink.write(batch(7));
    assert.equal(readFileSync(marker, 'utf8'), MARKER_TEXT);
    assert.deepEqual([sink.stats.exported, sink.stats.dropped], [0, 7], 'a batch for a refused path is dropped and counted');
  },
);

test(
  'file sink: refuses a file a user owns, a hard link, a folder others can write without the ' +
    'sticky bit, a folder a user owns; says which',
  async () => {
    const pub = folder('pub-owned', 0o1777);
    const owned = join(pub, 'owned.jsonl');
    asNobody('touch', owned);
    await assert.rejects(fileSinkAt(owned).sink.start!(), new RegExp(`refusing ${owned}: a file owned by uid ${NOBODY}, not root`));

    // fs.protected_hardlinks stops nobody linking root's file here, not on every system: root makes the link the user could
    const linked = join(pub, 'linked.jsonl');
    linkSync(marker, linked);
    const { sink: viaLink } = fileSinkAt(linked);
    await assert.rejects(viaLink.start!(), new RegExp(`refusing ${linked}: a file with 2 hard links`));
    viaLink.write(batch(3));
    assert.equal(readFileSync(marker, 'utf8'), MARKER_TEXT);

    const open = folder('world-writable', 0o777);
    await assert.rejects(
      fileSinkAt(join(open, 'm.jsonl')).sink.start!(),
      new RegExp(`its folder ${open} is writable by others without the sticky bit`),
    );
    const users = folder('users-folder', 0o755, NOBODY);
    await assert.rejects(
      fileSinkAt(join(users, 'm.jsonl')).sink.start!(),
      new RegExp(`its folder ${users} is owned by uid ${NOBODY}, not root`),
    );

    // below a folder others can write without the sticky bit, root's own folder can be swapped whole
    const under = folder('open-parent', 0o777);
    const inner = join(under, 'roots');
    mkdirSync(inner, { mode: 0o755 });
    await assert.rejects(
      fileSinkAt(join(inner, 'm.jsonl')).sink.start!(),
      new RegExp(`${under}, above its folder, is writable by others without the sticky bit`),
    );
    // a sticky folder others can write: root's file is safe there, the names it rotates to are not (nobody takes m.jsonl.1 first)
    await assert.rejects(
      fileSinkAt(join(pub, 'rotated.jsonl')).sink.start!(),
      new RegExp(
        `its folder ${pub} is writable by others: the file would be root's, but not the names it ` +
          `rotates to \\(any user may take ${pub}/rotated.jsonl.1 first\\)`,
      ),
    );

    // the control: root's own folder, and a sticky world-writable one where the file is root's and never rotated
    for (const [d, extra] of [
      [folder('roots', 0o755), {}],
      [pub, { max_files: '0' }],
    ] as const) {
      const { sink } = fileSinkAt(join(d, 'fine.jsonl'), extra);
      await sink.start!();
      sink.write(batch(4));
      await sink.close(Date.now());
      assert.equal(linesOf(join(d, 'fine.jsonl')).length, 4);
    }
  },
);

test('file sink: a FIFO with a reader, a socket, a device, a folder at the path are refused, named, without blocking', async () => {
  const d = folder('kinds');
  const fifo = join(d, 'fifo.jsonl');
  execFileSync('mkfifo', [fifo]);
  // a reader makes the open succeed: what is opened must still be refused, before anything is written into the pipe
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    await assert.rejects(fileSinkAt(fifo).sink.start!(), new RegExp(`refusing ${fifo}: a FIFO`));
  } finally {
    closeSync(reader);
  }
  const sock = join(d, 'sock.jsonl');
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(sock, r));
  try {
    await assert.rejects(fileSinkAt(sock).sink.start!(), new RegExp(`refusing ${sock}: a socket`));
  } finally {
    await new Promise((r) => srv.close(r));
  }
  await assert.rejects(fileSinkAt('/dev/null').sink.start!(), /refusing \/dev\/null: a device/);
  const sub = join(d, 'sub.jsonl');
  mkdirSync(sub);
  await assert.rejects(fileSinkAt(sub).sink.start!(), new RegExp(`refusing ${sub}: a folder`));
});

test('file sink: a file moved away is followed by a new one; a symlink swapped in is refused; it says when it writes again', async () => {
  const d = folder('rotate');
  const path = join(d, 'metrics.jsonl');
  const { sink, log } = fileSinkAt(path);
  await sink.start!();
  sink.write(batch(5));
  renameSync(path, `${path}.old`); // logrotate's create mode
  sink.write(batch(6));
  assert.equal(linesOf(`${path}.old`).length, 5, 'the moved file gets nothing more');
  assert.equal(linesOf(path).length, 6, 'a new file at the path');
  truncateSync(path, 0); // logrotate's copytruncate: the same file, emptied under the open descriptor
  sink.write(batch(2));
  assert.deepEqual(
    linesOf(path).map((l) => (JSON.parse(l) as { attributes: { 'gpu.index': number } }).attributes['gpu.index']),
    [0, 1],
    'written from the start, no hole before',
  );

  unlinkSync(path);
  symlinkSync(marker, path);
  sink.write(batch(8));
  sink.write(batch(9));
  assert.equal(readFileSync(marker, 'utf8'), MARKER_TEXT);
  assert.deepEqual([sink.stats.exported, sink.stats.dropped], [13, 17]);
  assert.equal(log.filter((l) => / error .*cannot write metrics file/.test(l)).length, 1, log.join(''));
  assert.match(log.join(''), new RegExp(`error="refusing ${path}: a symlink`));

  unlinkSync(path);
  sink.write(batch(10));
  await sink.close(Date.now());
  assert.equal(linesOf(path).length, 10);
  assert.equal(sink.stats.exported, 23);
  assert.match(log.at(-1)!, new RegExp(` info .*file sink writes again path=${path} dropped=17\n$`));
});

test('file sink: a FIFO at the path does not block the daemon; it retries, and writes once the FIFO is gone', async () => {
  const d = folder('fifo-daemon');
  const path = join(d, 'metrics.jsonl');
  execFileSync('mkfifo', [path]);
  const ini = join(base, 'fifo.ini');
  writeFileSync(ini, `[daemon]\nplugins = sim\nsinks = file, stdout\ninterval = 200ms\n[sim]\ngpus = 1\n[file]\npath = ${path}\n`);
  const daemon = new DaemonProcess(['--config', ini]);
  try {
    // an open that waits for a reader blocks the event loop: this line would never come
    await daemon.waitStderr(
      new RegExp(`sink could not start: retrying sink=file error="refusing ${path}: a FIFO[^"]*" retry_in_s=5`),
      10_000,
    );
    const mark = daemon.stdout.length;
    await waitFor('the plugins to keep running', () => daemon.pointsSince(mark).some((p) => p.name === 'gpu.utilization'));
    unlinkSync(path);
    await daemon.waitStderr(/sink started sink=file attempt=2/, 15_000);
    await waitFor('points in the file', () => {
      const text = readFileSync(path, 'utf8');
      return parseLines(text.slice(0, text.lastIndexOf('\n') + 1)).some((p) => p.name === 'gpu.utilization');
    });
  } finally {
    // SIGKILL after 3 s: a daemon blocked in open() cannot run its SIGTERM handler
    await daemon.stop('SIGTERM', 3000);
  }
});

test('file sink: a full disk leaves no torn line, counts exactly the points not written, and it says when it writes again', async () => {
  const mnt = folder('full');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0755', 'tmpfs', mnt]);
  try {
    const filler = join(mnt, 'filler');
    writeFileSync(filler, Buffer.alloc(40 * 1024));
    const path = join(mnt, 'metrics.jsonl');
    const { sink, log } = fileSinkAt(path);
    await sink.start!();
    let sent = 0;
    let partial = 0;
    for (let i = 0; i < 100 && sink.stats.dropped <= 200; i++) {
      const [exported, dropped] = [sink.stats.exported, sink.stats.dropped];
      sink.write(batch(20));
      sent += 20;
      if (sink.stats.exported > exported && sink.stats.dropped > dropped) partial++;
    }
    const check = (): string[] => {
      const text = readFileSync(path, 'utf8');
      assert.ok(text.endsWith('\n'), 'the file ends with a whole line');
      const lines = text.split('\n').filter(Boolean);
      for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), `a torn line: ${l}`);
      return lines;
    };
    const inFile = check().length;
    assert.equal(sink.stats.exported, inFile);
    assert.equal(sink.stats.dropped, sent - inFile, 'dropped: exactly the points not in the file');
    assert.equal(log.filter((l) => /cannot write metrics file.*ENOSPC/.test(l)).length, 1, 'said once, not once a batch');
    assert.ok(partial > 0, 'a batch was cut short by the full disk (the case under test)');

    rmSync(filler);
    sink.write(batch(20));
    sent += 20;
    await sink.close(Date.now());
    assert.equal(check().length, inFile + 20);
    assert.equal(sink.stats.dropped, sent - inFile - 20);
    assert.match(log.at(-1)!, new RegExp(` info .*file sink writes again path=${path} dropped=${sink.stats.dropped}\n$`));
  } finally {
    execFileSync('umount', [mnt]);
  }
});
