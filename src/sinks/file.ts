/**
 * JSON lines appended to a file, rotated by size: path -> path.1 -> ... ->
 * path.<max_files>, the oldest deleted.
 *
 * The daemon runs as root and the path may sit in a folder local users can
 * write to, so the file is opened as nothing but a regular file of root's:
 * never through a link (root would append to any file on the system), never a
 * FIFO or a device (an open or a write could block the event loop for ever).
 * Every (re)open is checked; before each batch the path is looked up again, so
 * a file moved away (logrotate) or swapped for a link is noticed and the new
 * one checked.
 *
 * Writes are synchronous. The checks guarantee a regular file, whose writes
 * are bounded by the page cache (a tick is a few hundred lines, ~100 KB), and
 * a synchronous write keeps rotation and the cut-back after a short write from
 * interleaving with another batch. A file on a hard-mounted network filesystem
 * that stops answering would still stall the event loop: keep it on local disk.
 */
import { FILE_SECTION } from './sections.js';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../core/config/schema.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { Batch } from '../core/metrics/model.js';
import { pointJson } from './jsonl.js';
import { makeDirs } from '../core/make-dirs.js';
import { dirWritable } from '../core/probe.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';
import type { ProbeResult } from '../core/plugin.js';

// libuv adds O_CLOEXEC to every open on Linux already; named here so that the flags say all that is relied on
const O_CLOEXEC = process.platform === 'linux' ? 0o2000000 : 0;
/** O_NONBLOCK: an open of a FIFO without a reader fails (ENXIO) instead of waiting for one; O_NOCTTY: a terminal never becomes the
 * daemon's.
 * */
const OPEN_FLAGS =
  constants.O_WRONLY |
  constants.O_APPEND |
  constants.O_CREAT |
  constants.O_NOFOLLOW |
  constants.O_NONBLOCK |
  constants.O_NOCTTY |
  O_CLOEXEC;
const S_ISVTX = 0o1000;
const NEWLINE = 0x0a;

function whatItIs(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symlink (never followed: root would append to its target)';
  if (st.isFIFO()) return 'a FIFO (a write could block the daemon)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}

/**
 * Why root must not write to `path` (undefined: it may), from what is there
 * now; `st` is the file itself (fstat of the open fd, or lstat of the path).
 */
function unsafeFile(st: Stats, asRoot: boolean): string | undefined {
  if (!st.isFile()) return whatItIs(st);
  // a hard link is another name of a file that may be anywhere, such as /etc/shadow
  if (st.nlink > 1) return `a file with ${st.nlink} hard links (one may be any file on the system)`;
  if (asRoot && st.uid !== 0) return `a file owned by uid ${st.uid}, not root (its owner could swap it for a link)`;
  return undefined;
}

/**
 * Why the folder lets another user swap the file under root (undefined: it
 * does not). Its ancestors count too: one that others can write without the
 * sticky bit lets them swap the whole folder. A sticky folder others can write
 * keeps root's file root's, but not the names its rotations go to: a user may
 * take `path.1` first, and the daemon's unit (no CAP_FOWNER) cannot replace it.
 */
function unsafeFolder(path: string, asRoot: boolean, rotates: boolean): string | undefined {
  const dir = dirname(path);
  const st = statSync(dir);
  if (st.mode & 0o002) {
    if (!(st.mode & S_ISVTX)) return `its folder ${dir} is writable by others without the sticky bit (anyone could swap the file)`;
    if (rotates)
      return (
        `its folder ${dir} is writable by others: the file would be root's, but not the names it ` +
        `rotates to (any user may take ${path}.1 first); use a folder only root can write, or ` +
        `max_files = 0`
      );
  } else if (asRoot && st.uid !== 0) return `its folder ${dir} is owned by uid ${st.uid}, not root (its owner could swap the file)`;
  for (let up = dirname(dir), below = dir; up !== below; below = up, up = dirname(up)) {
    const a = statSync(up);
    if (a.mode & 0o002 && !(a.mode & S_ISVTX))
      return `${up}, above its folder, is writable by others without the sticky bit (anyone could swap the folder)`;
  }
  return undefined;
}

const refusal = (path: string, why: string): Error => new Error(`refusing ${path}: ${why}`);

class FileSink implements Sink {
  readonly name = 'file';
  readonly stats = new SinkStats();
  private fd = -1;
  /** The open file's identity: a different one at the path means it was moved or replaced. */
  private dev = -1;
  private ino = -1;
  /** Points dropped since the last whole batch was written, and the error last logged; undefined while writing. */
  private failing: { dropped: number; error: string } | undefined;
  private readonly path: string;
  private readonly maxBytes: number;
  private readonly maxFiles: number;
  private readonly withResource: boolean;
  private readonly asRoot = process.getuid?.() === 0;

  constructor(private readonly ctx: SinkContext) {
    const s = readSection(ctx.config, FILE_SECTION);
    if (!s.path) throw new ConfigError('[file] path: required when the file sink is enabled', { section: 'file', key: 'path' });
    this.path = s.path;
    this.maxBytes = s.max_bytes;
    this.maxFiles = s.max_files;
    this.withResource = s.resource;
  }

  /** A refusal throws: the agent retries the start with backoff. */
  async start(): Promise<void> {
    makeDirs(dirname(this.path));
    this.open();
  }

  private open(): void {
    // looked at before the open, so that opening a device (a tape rewinds) never happens; the fstat below decides
    const before = lstatSync(this.path, { throwIfNoEntry: false });
    const early = (before && unsafeFile(before, this.asRoot)) || unsafeFolder(this.path, this.asRoot, this.maxFiles > 0);
    if (early) throw refusal(this.path, early);
    let fd: number;
    try {
      fd = openSync(this.path, OPEN_FLAGS, 0o640);
    } catch (e) {
      // swapped since the lstat: ELOOP is O_NOFOLLOW meeting a link, ENXIO a FIFO without a reader or a socket
      const now = lstatSync(this.path, { throwIfNoEntry: false });
      const why = now && unsafeFile(now, this.asRoot);
      throw why ? refusal(this.path, why) : e;
    }
    const st = fstatSync(fd);
    const why = unsafeFile(st, this.asRoot);
    if (why) {
      closeSync(fd);
      throw refusal(this.path, why);
    }
    this.fd = fd;
    this.dev = st.dev;
    this.ino = st.ino;
  }

  private closeFd(): void {
    if (this.fd < 0) return;
    try {
      closeSync(this.fd);
    } catch {
      /* already broken: nothing left to release */
    }
    this.fd = -1;
  }

  /** Whether the path still names the open file (not moved away, not replaced). */
  private stillThere(): boolean {
    const st = lstatSync(this.path, { throwIfNoEntry: false });
    return st !== undefined && st.dev === this.dev && st.ino === this.ino;
  }

  private rotate(): void {
    this.closeFd();
    if (this.maxFiles === 0) rmSync(this.path, { force: true });
    else {
      rmSync(`${this.path}.${this.maxFiles}`, { force: true });
      for (let i = this.maxFiles - 1; i >= 1; i--) {
        try {
          renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        }
      }
      renameSync(this.path, `${this.path}.1`);
    }
    this.open();
  }

  /**
   * Appends whole lines only: after a short or failed write (ENOSPC) the file
   * is cut back to the last whole line, so a reader never sees half an object.
   * Throws, with `written` set to the lines that are in the file, when not all are.
   */
  private append(data: Buffer): void {
    // O_APPEND writes at the end as it is now, which a copytruncate may have moved since the last batch
    const base = fstatSync(this.fd).size;
    let off = 0;
    try {
      while (off < data.length) {
        const n = writeSync(this.fd, data, off);
        // 0 for a non-empty write would loop for ever on the event loop
        if (n === 0) throw new Error(`write to ${this.path} wrote nothing`);
        off += n;
      }
    } catch (e) {
      const keep = off > 0 ? data.lastIndexOf(NEWLINE, off - 1) + 1 : 0;
      if (keep < off) {
        try {
          ftruncateSync(this.fd, base + keep);
        } catch (t) {
          (e as Error).message += `; the torn line could not be cut off: ${(t as Error).message}`;
        }
      }
      throw Object.assign(e as Error, { written: countLines(data, keep) });
    }
  }

  write(batch: Batch): void {
    const lines = pointJson(batch, this.withResource ? this.ctx.resource : undefined);
    if (lines.length === 0) return;
    const data = Buffer.from(lines.join('\n') + '\n');
    try {
      if (this.fd >= 0 && !this.stillThere()) this.closeFd();
      if (this.fd < 0) this.open();
      const size = fstatSync(this.fd).size;
      if (size > 0 && size + data.length > this.maxBytes) this.rotate();
      this.append(data);
    } catch (e) {
      const written = (e as { written?: number }).written ?? 0;
      this.stats.exported += written;
      this.dropped(lines.length - written, e as Error);
      this.closeFd(); // reopened, and checked again, on the next batch
      return;
    }
    this.stats.exported += lines.length;
    if (this.failing) {
      this.ctx.log.info('file sink writes again', { path: this.path, dropped: this.failing.dropped });
      this.failing = undefined;
    }
  }

  /** Counts the points not written; logs once per cause until the sink writes again. */
  private dropped(points: number, e: Error): void {
    this.stats.errors++;
    this.stats.dropped += points;
    const error = e.message;
    if (this.failing?.error !== error)
      this.ctx.log.error('cannot write metrics file: dropping points until it can', { path: this.path, error });
    this.failing = { dropped: (this.failing?.dropped ?? 0) + points, error };
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.closeFd();
  }
}

function countLines(data: Buffer, end: number): number {
  let n = 0;
  for (let i = data.indexOf(NEWLINE); i >= 0 && i < end; i = data.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** Doctor: the folder, and what is at the path now if anything (the checks the sink makes at every open). */
function probe(c: Config): ProbeResult {
  const { path, max_files } = readSection(c, FILE_SECTION);
  if (!path) return { ok: false, detail: '[file] path is not set' };
  const dir = dirWritable(dirname(path));
  if (!dir.ok) return dir;
  const asRoot = process.getuid?.() === 0;
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    const why = (st && unsafeFile(st, asRoot)) || (existsSync(dirname(path)) && unsafeFolder(path, asRoot, max_files > 0));
    return why ? { ok: false, detail: `${path} would be refused: ${why}` } : dir;
  } catch (e) {
    return { ok: false, detail: `${path}: ${(e as Error).message}` };
  }
}

export const fileSink: SinkManifest = {
  name: 'file',
  description: 'JSON lines appended to a file with size rotation',
  section: FILE_SECTION,
  create: (ctx) => new FileSink(ctx),
  describe: (c: Config) => {
    const s = readSection(c, FILE_SECTION);
    return `${s.path ?? '(no [file] path set)'} rotated at ${s.max_bytes} bytes, ${s.max_files} kept`;
  },
  probe: async (c: Config) => probe(c),
};
