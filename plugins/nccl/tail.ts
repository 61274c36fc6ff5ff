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
 */
import { closeSync, fstatSync, openSync, readSync, statSync, constants } from 'node:fs';

export interface TailOptions {
  /** Longest line kept; a longer one is skipped whole. Default 1 MiB. */
  readonly maxLine?: number;
  /** Most bytes read in one poll (the rest next poll). Default 8 MiB. */
  readonly maxRead?: number;
}

export interface TailResult {
  readonly lines: string[];
  /** Lines skipped for being longer than maxLine. */
  readonly skipped: number;
  /** What happened to the file this poll, for the log: truncated, rewritten, rotated, deleted. */
  readonly events: string[];
  /** Bytes read this poll. */
  readonly read: number;
}

/** How many leading bytes identify a file's contents: a different start is a different file. */
const HEAD = 64;

interface Open {
  fd: number;
  ino: number;
  dev: number;
  pos: number;
  head: Buffer;
}

export class FileTail {
  private cur: Open | undefined;
  /** Bytes of a line not yet ended. */
  private partial: Buffer[] = [];
  private partialLen = 0;
  /** Inside a line too long to keep: its bytes are dropped until its newline. */
  private dropping = false;
  private readonly buf: Buffer;
  private readonly maxLine: number;
  private readonly maxRead: number;

  constructor(
    readonly path: string,
    o: TailOptions = {},
  ) {
    this.maxLine = o.maxLine ?? 1 << 20;
    this.maxRead = o.maxRead ?? 8 << 20;
    this.buf = Buffer.allocUnsafe(Math.min(this.maxRead, 1 << 20));
  }

  /** New complete lines since the last poll. */
  poll(): TailResult {
    const out = { lines: [] as string[], skipped: 0, events: [] as string[], read: 0 };
    let budget = this.maxRead;
    let st: { ino: number; dev: number; size: number } | undefined;
    try {
      st = statSync(this.path);
    } catch {
      st = undefined;
    }
    if (this.cur && (!st || st.ino !== this.cur.ino || st.dev !== this.cur.dev)) {
      // rotated or deleted: what the old file still holds first, through its open descriptor
      const n = this.drain(this.cur, out, budget);
      budget -= n;
      out.read += n;
      if (budget <= 0) return out;
      this.flushPartial(out);
      out.events.push(st ? 'rotated' : 'deleted');
      this.close();
    }
    if (!st) return out;
    if (!this.cur) {
      let fd: number;
      try {
        fd = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch {
        return out;
      }
      const f = fstatSync(fd);
      this.cur = { fd, ino: f.ino, dev: f.dev, pos: 0, head: Buffer.alloc(0) };
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
      const n = readSync(c.fd, this.buf, 0, Math.min(this.buf.length, budget - total), c.pos);
      if (n <= 0) break;
      if (c.head.length < HEAD && c.pos < HEAD) {
        const take = Math.min(HEAD - c.pos, n);
        c.head = Buffer.concat([c.head, this.buf.subarray(0, take)]);
      }
      c.pos += n;
      total += n;
      this.split(this.buf.subarray(0, n), out);
    }
    return total;
  }

  private split(chunk: Buffer, out: { lines: string[]; skipped: number }): void {
    let start = 0;
    for (;;) {
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
        // a copy: the read buffer is reused
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
    if (!this.cur) return 0;
    try {
      return Math.max(0, fstatSync(this.cur.fd).size - this.cur.pos);
    } catch {
      return 0;
    }
  }

  close(): void {
    if (this.cur) closeSync(this.cur.fd);
    this.cur = undefined;
  }
}
