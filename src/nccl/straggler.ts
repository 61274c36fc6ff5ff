/**
 * Which rank of a communicator is persistently slower than its peers. Ranks
 * are compared on the same operation only (the same collective, sequence
 * number and size: never durations of other sizes), each operation's times
 * as a ratio to that operation's median; a rank's factor is the median of its
 * ratios over the window. A rank is a straggler when its factor stands out of
 * the ranks' factors by robust statistics (median + k x MAD) and by a margin
 * that matters, over enough operations for a median to mean something.
 */

export interface RankTime {
  readonly rank: number;
  readonly seconds: number;
}

export interface Straggler {
  readonly rank: number;
  /** How much slower than the communicator's typical rank (its factor over the ranks' median factor). */
  readonly factor: number;
  /** Operations the factor is the median of. */
  readonly operations: number;
}

export interface StragglerOptions {
  /** Operations a rank needs in the window. Default 10. */
  readonly minOperations?: number;
  /** MADs above the ranks' median factor. Default 5. */
  readonly k?: number;
  /** The least factor worth saying. Default 1.2 (20% slower). */
  readonly minFactor?: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export interface RankFactor extends Straggler {
  readonly straggler: boolean;
}

/**
 * Every rank's factor (its median ratio over the window, over the ranks'
 * median), and whether it stands out as a straggler. Empty when fewer than
 * three ranks have enough operations: two ranks cannot say which is slow.
 * ops: one entry per operation (collective, sn, size), the time each rank took for it.
 */
export function rankFactors(ops: Iterable<readonly RankTime[]>, o: StragglerOptions = {}): RankFactor[] {
  const minOps = o.minOperations ?? 10;
  const k = o.k ?? 5;
  const minFactor = o.minFactor ?? 1.2;
  const ratios = new Map<number, number[]>();
  for (const op of ops) {
    // an operation some ranks did not report, or one the clock did not time, says nothing of the others
    if (op.length < 3) continue;
    const m = median(op.map((r) => r.seconds));
    if (!(m > 0)) continue;
    for (const r of op) {
      let l = ratios.get(r.rank);
      if (!l) ratios.set(r.rank, (l = []));
      l.push(r.seconds / m);
    }
  }
  const factors = [...ratios].filter(([, l]) => l.length >= minOps).map(([rank, l]) => ({ rank, f: median(l), n: l.length }));
  if (factors.length < 3) return [];
  const M = median(factors.map((x) => x.f));
  if (!(M > 0)) return [];
  const mad = median(factors.map((x) => Math.abs(x.f - M)));
  // a floor under the MAD: ranks that agree to the microsecond would make any jitter a straggler
  const bar = M + k * Math.max(mad, 0.02 * M);
  return factors
    .map((x) => ({
      rank: x.rank,
      factor: Math.round((x.f / M) * 1000) / 1000,
      operations: x.n,
      straggler: x.f > bar && x.f >= minFactor * M,
    }))
    .sort((a, b) => b.factor - a.factor || a.rank - b.rank);
}

/** The ranks of rankFactors that straggle, slowest first. */
export function stragglers(ops: Iterable<readonly RankTime[]>, o: StragglerOptions = {}): Straggler[] {
  return rankFactors(ops, o)
    .filter((x) => x.straggler)
    .map(({ rank, factor, operations }) => ({ rank, factor, operations }));
}
