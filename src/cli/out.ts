/**
 * A command's output on stdout without process.stdout: the first use of
 * process.stdout builds its stream, which loads node:stream (a pipe's socket
 * node:net too, a terminal's node:tty and node:net): ~2 ms of CPU of a light
 * command's start on Node 24, a tenth of the bare start (docs/performance.md).
 * write(2) on fd 1 is what that stream does on Linux for a file, a pipe and a
 * terminal alike (synchronous writes); a non-blocking pipe that is full
 * (EAGAIN) gets the rest through the stream, which waits for it.
 */
import { fstatSync, statSync, writeSync } from 'node:fs';
import { requireBuiltin } from '../core/builtin.js';

/** Set once the reader of stdout is gone (EPIPE): what is left to write has nobody to read it. */
let readerGone = false;

/**
 * `l9gpu jobs | head -1`: head exits, and the next write fails with EPIPE
 * (Node ignores SIGPIPE, which would end a C program there, quietly). The
 * output stops as a C program's would, without a word and without failing
 * the command; the command's exit status stays its own.
 */
export function writeOut(text: string): void {
  if (readerGone) return;
  const buf = Buffer.from(text);
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(1, buf, off);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EPIPE') {
      readerGone = true;
      return;
    }
    if (code !== 'EAGAIN') throw e;
    // the stream says EPIPE as an event, not a throw
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      readerGone = true;
    });
    process.stdout.write(buf.subarray(off));
  }
}

/**
 * Whether stdout is a terminal, as process.stdout.isTTY says: a file or a pipe
 * is not, nor /dev/null (output thrown away); only another character device is
 * asked with isatty(3), whose module node:tty loads node:net.
 */
export function stdoutIsTerminal(): boolean {
  let st;
  try {
    st = fstatSync(1);
  } catch {
    return false; // no stdout at all
  }
  if (!st.isCharacterDevice()) return false;
  try {
    if (st.rdev === statSync('/dev/null').rdev) return false;
  } catch {
    // no /dev/null (a bare chroot): ask
  }
  return (requireBuiltin('node:tty') as typeof import('node:tty')).isatty(1);
}

/** Colour on stdout: a terminal, and no NO_COLOR (https://no-color.org). */
export const colorOut = (): boolean => stdoutIsTerminal() && !process.env.NO_COLOR;
