/**
 * Token buckets by key (a peer's address): `burst` tokens, one back every
 * `everyMs`. Bounded: a bucket back to full holds nothing worth keeping and
 * is forgotten, and past `maxKeys` keys the oldest are, so that a scan from
 * many addresses grows no table.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly burst: number,
    private readonly everyMs: number,
    private readonly maxKeys = 4096,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes a token of `key`'s bucket if it has one. */
  take(key: string): boolean {
    const t = this.now();
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = Math.min(this.burst, b.tokens + (t - b.at) / this.everyMs);
      b.at = t;
      // kept in the order of use: the first are the least recently used
      this.buckets.delete(key);
      this.buckets.set(key, b);
    } else {
      if (this.buckets.size >= this.maxKeys) this.sweep(t);
      b = { tokens: this.burst, at: t };
      this.buckets.set(key, b);
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  private sweep(t: number): void {
    for (const [k, b] of this.buckets) {
      if (this.buckets.size < this.maxKeys * 0.9) break;
      // a full bucket and the least recently used go first (the map's first entries)
      if (b.tokens + (t - b.at) / this.everyMs >= this.burst || this.buckets.size >= this.maxKeys) this.buckets.delete(k);
    }
  }
}
