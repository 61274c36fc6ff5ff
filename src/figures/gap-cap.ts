/**
 * How long a gap between two samples counts as covered: 2.5 collection
 * intervals, so one skipped tick still counts and a daemon that was down does
 * not. The store knows the interval it collected at; a report read back from
 * a backend sees only timestamps and finds the same interval in them
 * (collectionInterval), so that both cap every gap alike.
 */

/** A gap longer than this many collection intervals is capped there. */
export const GAP_CAP_INTERVALS = 2.5;

/** The cap on a gap, in ms, for a series collected every intervalMs (Infinity where that is unknown). */
export function gapCapMs(intervalMs: number): number {
  return intervalMs > 0 ? GAP_CAP_INTERVALS * intervalMs : Infinity;
}

/**
 * The interval a series was collected at, in ms, from its sample times in
 * ascending order: the most frequent gap. A collection that starts on time is
 * stamped with its scheduled slot (daemon/runner.ts), as a Prometheus scrape
 * is, so on-time neighbours are the interval apart to the millisecond while
 * late ones spread over many values: on a loaded node, where most ticks are
 * late and their median gap is a few ms over the interval, the most frequent
 * gap is still the interval exactly. Ties go to the shorter gap; where no gap
 * occurs twice (every sample late, or three samples), the median.
 */
export function collectionInterval(timesMs: readonly number[]): number {
  const gaps: number[] = [];
  for (let i = 1; i < timesMs.length; i++) gaps.push(timesMs[i]! - timesMs[i - 1]!);
  if (gaps.length === 0) return 0;
  const counts = new Map<number, number>();
  let best = 0;
  let most = 0;
  for (const g of gaps) {
    const n = (counts.get(g) ?? 0) + 1;
    counts.set(g, n);
    if (n > most || (n === most && g < best)) [best, most] = [g, n];
  }
  return most >= 2 ? best : median(gaps);
}

/** The middle value (the upper one of an even count), 0 of none. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : 0;
}
