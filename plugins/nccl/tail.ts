/**
 * Follows one appended log file the way the NCCL Inspector writes it, and
 * gives each complete line once:
 *
 * - a partial last line (the writer is mid-write) waits for its newline;
 * - truncated (a new process opens it with fopen("w")) or rewritten from the
 *   start (the first bytes changed): read again from the beginning;
 * - rotated (the path names another file now): the old file is read to its
 *   end through the descriptor still open, then the new one from its start;
 * - deleted: the open descriptor is read to its end, then closed.
 *
 * Memory is bounded whatever the file: at most `maxRead` bytes are read per
 * poll, and a line longer than `maxLine` is skipped (counted), never kept.
 * Every tail reads into one buffer, grown as reads fill it (readBuffer).
 * A sparse file's holes read as runs of NUL: a run where a line would start
 * is skipped, so a hole between lines (or at the end, still growing) is no
 * line. (One in the middle of a line makes that line unreadable, counted.)
 *
 * The file is a user's: every open, the first and each after a rotation,
 * truncation or park, goes through `open` (user-file.ts: no link, no FIFO, no
 * descriptor kept on a refusal). A tail can be parked (its descriptor closed,
 * its place kept) and resumes on the next poll that finds new bytes, so a
 * caller following thousands of quiet files holds no descriptor for them.
 */
import { closeSync, fstatSync, lstatSync, readSync } from 'node:fs';
import { openUserFile, type Opened, type Refusal } from '../../src/core/user-file.js';

export interface TailOptions {
  /** Longest line kept; a longer one is skipped whole. Default 1 MiB. */
  readonly maxLine?: number;
  /** Most bytes read in one poll (the rest next poll). Default 8 MiB. */
  readonly maxRead?: number;
  /** How the file is opened (each time): a refusal is given in TailResult.refused. Default: a regular file, no link. */
  readonly open?: (path: string) => Opened;
}

export interface TailResult {
  readonly lines: string[];
  /** Lines skipped for being longer than maxLine. */
  readonly skipped: number;
  /** What happened to the file this poll, for the log: truncated, rewritten, rotated, deleted. */
  readonly events: string[];
  /** Bytes read this poll. */
  readonly read: number;
  /** The path names something not to be read (said once per file found there). */
  readonly refused?: { readonly why: Exclude<Refusal, 'gone'>; readonly detail: string };
}

/** How many leading bytes identify a file's contents: a different start is a different file. */
const HEAD = 64;

/** The most one read takes (a poll reads up to maxRead in reads of at most this). */
const MAX_READ_BUFFER = 1 << 20;

/**
 * The buffer every tail reads into: polls are synchronous and what is kept of
 * a read (a line, a partial line, a file's head) is copied out of it, so one
 * serves every followed file. It starts small and doubles while reads fill it,
 * up to MAX_READ_BUFFER: a buffer of 512 KiB made for each tail was 32 MiB for
 * the 64 files one user may have followed, most of them quiet.
 */
let readBuf = Buffer.allocUnsafe(16 << 10);

/** After a read that filled the read buffer: doubled for the next (more is likely waiting), up to what one poll of the tail may read. */
function growReadBuffer(maxRead: number): void {
  const cap = Math.min(maxRead, MAX_READ_BUFFER);
  if (readBuf.length < cap) readBuf = Buffer.allocUnsafe(Math.min(readBuf.length * 2, cap));
}

interface Open {
  /** -1: parked. */
  fd: number;
  ino: number;
  dev: number;
  uid: number;
  pos: number;
  head: Buffer;
  /** Size and time when parked: unchanged, there is nothing to open it for. */
  size: number;
  mtimeMs: number;
}

export class FileTail {
  private cur: Open | undefined;
  /** Bytes of a line not yet ended. */
  private partial: Buffer[] = [];
  private partialLen = 0;
  /** Inside a line too long to keep: its bytes are dropped until its newline. */
  private dropping = false;
  private readonly maxLine: number;
  private readonly maxRead: number;
  private readonly opener: (path: string) => Opened;
  /** The file last refused (by inode and time), not opened again until that changes. */
  private refusedAt: string | undefined;

  constructor(
    readonly path: string,
    o: TailOptions = {},
  ) {
    this.maxLine = o.maxLine ?? 1 << 20;
    this.maxRead = o.maxRead ?? 8 << 20;
    this.opener = o.open ?? ((p) => openUserFile(p));
  }

  /** The owner of the file followed (undefined: none open or parked yet). */
  get uid(): number | undefined {
    return this.cur?.uid;
  }

  /** Whether a descriptor is held. */
  get isOpen(): boolean {
    return this.cur !== undefined && this.cur.fd >= 0;
  }

  /** New complete lines since the last poll. */
  poll(): TailResult {
    const out: { -readonly [k in keyof TailResult]: TailResult[k] } = { lines: [], skipped: 0, events: [], read: 0 };
    let budget = this.maxRead;
    // lstat: what the name itself is now (a link put there is another file, and is then refused by the open)
    const st = lstatSync(this.path, { throwIfNoEntry: false });
    // not a regular file now: another file, even on the inode number the old one freed
    if (this.cur && (!st || st.ino !== this.cur.ino || st.dev !== this.cur.dev || !st.isFile())) {
      // rotated or deleted: what the old file still holds first, through its open descriptor (a parked one's is lost)
      if (this.cur.fd >= 0) {
        const n = this.drain(this.cur, out, budget);
        budget -= n;
        out.read += n;
        if (budget <= 0) return out;
      }
      this.flushPartial(out);
      out.events.push(st ? 'rotated' : 'deleted');
      this.close();
    }
    if (!st) return out;
    if (this.cur && this.cur.fd < 0) {
      // parked: opened again only for new bytes (or a truncation, a rewrite: the size or time moved)
      if (st.size === this.cur.size && st.mtimeMs === this.cur.mtimeMs && this.cur.pos >= this.cur.size) return out;
      const o = this.opener(this.path);
      if ('refused' in o) return this.refuse(o, st, out);
      if (o.st.ino !== this.cur.ino || o.st.dev !== this.cur.dev) {
        // replaced between the lstat and the open: next poll sees it as rotated
        closeSync(o.fd);
        return out;
      }
      this.cur.fd = o.fd;
    }
    if (!this.cur) {
      const key = `${st.dev}/${st.ino}/${st.mtimeMs}`;
      if (key === this.refusedAt) return out;
      const o = this.opener(this.path);
      if ('refused' in o) return this.refuse(o, st, out);
      this.refusedAt = undefined;
      this.cur = { fd: o.fd, ino: o.st.ino, dev: o.st.dev, uid: o.st.uid, pos: 0, head: Buffer.alloc(0), size: 0, mtimeMs: 0 };
    }
    const c = this.cur;
    const size = fstatSync(c.fd).size;
    if (size < c.pos) {
      out.events.push('truncated');
      this.restart(c);
    } else if (c.head.length && !this.sameHead(c)) {
      out.events.push('rewritten');
      this.restart(c);
    }
    out.read += this.drain(c, out, budget);
    return out;
  }

  private refuse(
    o: { refused: Refusal; detail: string },
    st: { dev: number; ino: number; mtimeMs: number },
    out: { refused?: TailResult['refused'] },
  ): TailResult {
    const key = `${st.dev}/${st.ino}/${st.mtimeMs}`;
    if (o.refused !== 'gone' && key !== this.refusedAt) out.refused = { why: o.refused, detail: o.detail };
    this.refusedAt = key;
    if (this.cur) this.close();
    return out as TailResult;
  }

  /** Closes the descriptor and keeps the place: the next poll opens the file again only if it has grown or changed. */
  park(): void {
    const c = this.cur;
    if (!c || c.fd < 0) return;
    try {
      const st = fstatSync(c.fd);
      c.size = st.size;
      c.mtimeMs = st.mtimeMs;
    } catch {
      c.size = -1;
    }
    closeSync(c.fd);
    c.fd = -1;
  }

  /** Leaves the file's unread bytes unread (a backlog too big to be an Inspector's): the next poll reads what comes after. */
  skipToEnd(): number {
    const c = this.cur;
    if (!c || c.fd < 0) return 0;
    const size = fstatSync(c.fd).size;
    const n = Math.max(0, size - c.pos);
    if (c.head.length < HEAD && c.pos < HEAD) {
      // the head is the file's identity: read it, so that the skip is not taken for a rewrite
      const b = Buffer.allocUnsafe(Math.min(HEAD, size));
      c.head = b.subarray(0, readSync(c.fd, b, 0, b.length, 0));
    }
    c.pos = size;
    this.partial = [];
    this.partialLen = 0;
    // the line the skip lands inside is no line (unless it lands just after a newline)
    const last = Buffer.alloc(1);
    this.dropping = size > 0 && !(readSync(c.fd, last, 0, 1, size - 1) === 1 && last[0] === 10);
    return n;
  }

  private restart(c: Open): void {
    c.pos = 0;
    c.head = Buffer.alloc(0);
    this.partial = [];
    this.partialLen = 0;
    this.dropping = false;
  }

  /** Whether the file still starts with the bytes it started with when they were read. */
  private sameHead(c: Open): boolean {
    const b = Buffer.allocUnsafe(c.head.length);
    const n = readSync(c.fd, b, 0, b.length, 0);
    return n === c.head.length && b.equals(c.head);
  }

  /** Reads from the descriptor up to the budget; returns the bytes read. */
  private drain(c: Open, out: { lines: string[]; skipped: number }, budget: number): number {
    let total = 0;
    while (total < budget) {
      const buf = readBuf;
      const n = readSync(c.fd, buf, 0, Math.min(buf.length, budget - total), c.pos);
      if (n <= 0) break;
      if (c.head.length < HEAD && c.pos < HEAD) {
        const take = Math.min(HEAD - c.pos, n);
        c.head = Buffer.concat([c.head, buf.subarray(0, take)]);
      }
      c.pos += n;
      total += n;
      this.split(buf.subarray(0, n), out);
      if (n === buf.length) growReadBuffer(this.maxRead);
    }
    return total;
  }

  private split(chunk: Buffer, out: { lines: string[]; skipped: number }): void {
    let start = 0;
    for (;;) {
      // a line that starts with NUL starts after a hole: one byte looked at per line, not a scan of every chunk
      if (chunk[start] === 0 && !this.partialLen && !this.dropping) start = zerosEnd(chunk, start);
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      if (this.dropping) {
        this.dropping = false;
      } else if (this.partialLen + (nl - start) > this.maxLine) {
        out.skipped++;
      } else if (this.partialLen) {
        this.partial.push(chunk.subarray(start, nl));
        out.lines.push(Buffer.concat(this.partial, this.partialLen + (nl - start)).toString('utf8'));
      } else {
        out.lines.push(chunk.toString('utf8', start, nl));
      }
      this.partial = [];
      this.partialLen = 0;
      start = nl + 1;
    }
    if (start < chunk.length && !this.dropping) {
      const rest = chunk.length - start;
      if (this.partialLen + rest > this.maxLine) {
        // too long to keep: dropped up to its newline, counted once there
        out.skipped++;
        this.dropping = true;
        this.partial = [];
        this.partialLen = 0;
      } else {
        // a copy: the read buffer is every tail's
        this.partial.push(Buffer.from(chunk.subarray(start)));
        this.partialLen += rest;
      }
    }
  }

  /** A line the writer never ended (its file rotated away): given as it stands. */
  private flushPartial(out: { lines: string[] }): void {
    if (this.partialLen && !this.dropping) out.lines.push(Buffer.concat(this.partial, this.partialLen).toString('utf8'));
    this.partial = [];
    this.partialLen = 0;
    this.dropping = false;
  }

  /** Bytes of the followed file not read yet (0 when caught up, or when no file is open). */
  get lag(): number {
    if (!this.cur || this.cur.fd < 0) return 0;
    try {
      return Math.max(0, fstatSync(this.cur.fd).size - this.cur.pos);
    } catch {
      return 0;
    }
  }

  close(): void {
    if (this.cur && this.cur.fd >= 0) closeSync(this.cur.fd);
    this.cur = undefined;
  }
}

const ZEROS = Buffer.alloc(1 << 16);

/** Where a run of NULs starting at `i` ends: compared a block at a time (a hole is megabytes of them). */
function zerosEnd(chunk: Buffer, i: number): number {
  let step = 64;
  while (i + step <= chunk.length && chunk.compare(ZEROS, 0, step, i, i + step) === 0) {
    i += step;
    if (step < ZEROS.length) step *= 2;
  }
  while (i < chunk.length && chunk[i] === 0) i++;
  return i;
}
