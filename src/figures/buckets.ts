/**
 * Histogram buckets (non-cumulative counts, one more than the bounds: the
 * last is +Inf) as a job's figures keep them: the ledger adds each scrape's
 * increase to the job's engine rows, the report adds the rows of the job's
 * engines before it takes quantiles (src/scrape/histogram-window.ts).
 */
export interface Buckets {
  bounds: number[];
  counts: number[];
}

/**
 * Buckets added to buckets. Other bounds (two engines, or one upgraded
 * mid-job): the union of the bounds, each bucket's count under its own upper
 * bound, so no observation is lost (the interpolation inside a merged bucket
 * is coarser).
 */
export function addBuckets(into: Buckets | undefined, d: Buckets): Buckets {
  if (!into) return { bounds: [...d.bounds], counts: [...d.counts] };
  if (into.bounds.length === d.bounds.length && into.bounds.every((x, i) => x === d.bounds[i]))
    return { bounds: into.bounds, counts: into.counts.map((c, i) => c + d.counts[i]!) };
  const bounds = [...new Set([...into.bounds, ...d.bounds])].sort((a, b) => a - b);
  const counts = new Array<number>(bounds.length + 1).fill(0);
  for (const b of [into, d]) {
    b.counts.forEach((c, i) => {
      const at = i < b.bounds.length ? bounds.indexOf(b.bounds[i]!) : bounds.length;
      counts[at] = counts[at]! + c;
    });
  }
  return { bounds, counts };
}
