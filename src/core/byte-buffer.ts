/**
 * A growable byte buffer, written front to back and used again: the pull
 * page's and the OTLP request's writers, the scraper's page assembly. Used
 * again on purpose: a buffer made anew for every page, request or read is
 * memory outside V8's heap that is given back only when V8 next collects the
 * small object that holds it, and a daemon that allocates little collects
 * seldom: tens of MB of them were seen waiting (a page of 3,000 engine series
 * read, rendered and sent every second).
 */
export class ByteBuffer {
  buf: Buffer;
  pos = 0;

  /**
   * `size`: the first allocation; `keep`: the most kept between uses (a
   * buffer grown past it by one large page or request is let go at reset()).
   */
  constructor(
    private readonly size = 64 * 1024,
    private readonly keep = 1 << 20,
  ) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** Makes room for n more bytes. */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** One byte (an ASCII character's code). */
  byte(c: number): void {
    this.room(1);
    this.buf[this.pos++] = c;
  }

  /** A string, as UTF-8. */
  text(s: string): void {
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos);
  }

  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** What was written, as a buffer of its own (this one is written over after reset()). */
  bytes(from = 0): Buffer {
    return Buffer.from(this.buf.subarray(from, this.pos));
  }

  /** Empty again, for the next use. */
  reset(): void {
    this.pos = 0;
    if (this.buf.length > this.keep) this.buf = Buffer.allocUnsafe(this.size);
  }
}
