/**
 * What a cumulative series added for a job since it was last seen, for the
 * ledger's per-job figures of sources that count on their own (an inference
 * engine's counters, an NCCL rank's operations): the last value of each
 * series is kept in memory and in the store (engine_series), so a restart of
 * the daemon goes on from it; a series never seen for the job counts whole
 * (its process is the job's and counted nothing before it). A series is its
 * source's identity (metric and the source's own attributes), not what
 * attribution adds, which changes as the job's bindings load.
 */
import type { HistogramValue, Point } from '../core/metrics/model.js';
import { FORGET_SQL, forgetSeries, seriesValueStatement, storedSeriesValue } from '../store/counted.js';
import { latestRunKey } from '../store/jobs.js';
import type { Db } from '../store/open.js';

/** The counted series' forgetting statement (src/store/counted.ts, engine_series' owner), for the test that it uses an index. */
export { FORGET_SQL };

/** Attributes attribution may add (a process's GPUs), and the pid, which a restart of the process changes: not a series' identity. */
const NOT_IDENTITY = new Set(['gpu.uuid', 'gpu.uuids', 'process.pid']);

function seriesKey(p: Point): string {
  const a = p.attributes;
  // and the keys attribution added for the run (p.job.added: its provider's, whichever it is)
  const added = p.job?.added;
  const keys = Object.keys(a)
    .filter((k) => !NOT_IDENTITY.has(k) && !added?.includes(k))
    .sort();
  let k = p.metric.name;
  for (const key of keys) k += `\u0001${key}\u0002${String(a[key])}`;
  return k;
}

/** How long a series' last value is kept after its last scrape. */
const KEEP_MS = 86_400_000;

/** A series' value taken this tick, to be saved with the figures it went into: key, job, value, buckets. */
export type Seen = [string, string, number, HistogramValue | undefined];

export interface Previous {
  readonly v: number;
  readonly h?: HistogramValue;
}

/** a - b when a is b later on, else a: the source restarted and counts from nothing. */
export function increase(v: number, before: number | undefined): number {
  return before !== undefined && v >= before ? v - before : v;
}

export class SeriesDeltas {
  private readonly last = new Map<string, { jobId: string; v: number; h?: HistogramValue; seen: number }>();
  private readonly runs = new Map<string, { runKey: string | undefined; at: number }>();

  constructor(private readonly db: Db) {}

  /** The open run of a job (its latest), asked of the store once a minute per job. */
  runOf(jobId: string, now: number): string | undefined {
    const c = this.runs.get(jobId);
    if (c && now - c.at < 60_000) return c.runKey;
    const runKey = latestRunKey(this.db, jobId);
    this.runs.set(jobId, { runKey, at: now });
    return runKey;
  }

  /** The series' value before this one (this process's, else the store's), noting this one in `seen` for save(). */
  take(p: Point, jobId: string, time: number, seen: Seen[]): Previous | undefined {
    const key = seriesKey(p);
    const m = this.last.get(key);
    let prev: Previous | undefined;
    if (m) prev = m.jobId === jobId ? m : undefined;
    else {
      const r = storedSeriesValue(this.db, key, jobId);
      prev = r ? { v: r.value, ...(r.hist ? { h: JSON.parse(r.hist) as HistogramValue } : {}) } : undefined;
    }
    seen.push([key, jobId, p.value, p.hist]);
    return prev;
  }

  /**
   * Writes the values taken; inside the caller's transaction, with the figures
   * they went into. Memory takes them only once the transaction is done
   * (kept()): a write that failed leaves the last written values, so the next
   * tick counts from them and adds what the failed one would have.
   */
  save(seen: readonly Seen[], time: number): void {
    const put = seriesValueStatement(this.db);
    for (const [k, jobId, v, h] of seen) put.run(k, jobId, v, h ? JSON.stringify(h) : null, time);
  }

  /** The values save() wrote, now in the store: the ones the next tick counts from. */
  kept(seen: readonly Seen[], time: number): void {
    for (const [key, jobId, v, h] of seen) this.last.set(key, { jobId, v, ...(h ? { h } : {}), seen: time });
  }

  /** Forgets, in memory, the series not seen for a day. */
  forget(now: number): void {
    for (const [k, v] of this.last) if (now - v.seen > KEEP_MS) this.last.delete(k);
  }

  /** Forgets the stored series not seen for a day, and the runs asked about. */
  /** At most `limit` series unseen for a day forgotten (engine_series_seen, schema 7); returns how many (fewer than `limit`: none left). */
  prune(now: number, limit = 500): number {
    this.runs.clear();
    return forgetSeries(this.db, now - KEEP_MS, limit);
  }
}
