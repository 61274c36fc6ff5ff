/**
 * The ledger's per-job figures of sources that count on their own (an
 * inference engine's requests and latency buckets, an NCCL rank's operations),
 * for `l9gpu jobs show`: each point of a job's open run adds what its series
 * added since it was last seen (series-deltas.ts) to a row of the batch, and
 * the rows go to the store in one transaction with the series' values they
 * took: the stored figures and the values they count from agree, and a
 * restart of the daemon goes on from them.
 *
 * One loop for every such kind of figures; what differs between them (which
 * points, the rows and what a point adds to one, the table) is a DeltaFigures.
 */
import type { Logger } from '../core/log.js';
import type { Point } from '../core/metrics/model.js';
import type { Db } from '../store/open.js';
import { SeriesDeltas, type Previous, type Seen } from './series-deltas.js';

/** One kind of per-job figures from cumulative series; R: a row of them, for one job run and the kind's own key. */
export interface DeltaFigures<R> {
  /** A batch without a point of these metrics is passed over. */
  takes(p: Point): boolean;
  /** The job a point counts for; undefined: a point these figures do not count, or of no job. */
  jobOf(p: Point): string | undefined;
  /** The row a point adds to: its key within the job run, and the row, nothing added yet, for the first point of it. */
  rowOf(p: Point, jobId: string, runKey: string): { key: string; row: () => R };
  /** Adds what the point's series added since prev (undefined: never seen for the job, so it counts whole). */
  add(row: R, p: Point, prev: Previous | undefined): void;
  /** Adds the batch's rows to the stored ones (inside the transaction that saves the series' values). */
  write(db: Db, rows: readonly R[], time: number): void;
  /** What the log says when a batch's figures cannot be written. */
  readonly failure: string;
  /** The figures' name in the log line saying they are written again. */
  readonly kind: string;
}

export class DeltaRollups<R> {
  private readonly deltas: SeriesDeltas;
  /** The error of the last failed write, said once while it repeats. */
  private error = '';

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly figures: DeltaFigures<R>,
  ) {
    this.deltas = new SeriesDeltas(db);
  }

  /** Takes a batch's points; those of these figures with a job add to that job's rows in the store. */
  observe(points: readonly Point[], time: number): void {
    if (!points.some((p) => this.figures.takes(p))) return;
    try {
      this.count(points, time);
      if (this.error) this.log.info(`${this.figures.kind}: writing again`, { after: this.error });
      this.error = '';
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== this.error) this.log.error(this.figures.failure, { error: msg });
      this.error = msg;
    }
  }

  private count(points: readonly Point[], time: number): void {
    const rows = new Map<string, R>();
    const seen: Seen[] = [];
    for (let i = 0; i < points.length; i++) {
      const p = points[i]!;
      const jobId = this.figures.jobOf(p);
      if (jobId === undefined) continue;
      const runKey = this.deltas.runOf(jobId, time);
      if (runKey === undefined) continue;
      const prev = this.deltas.take(p, jobId, time, seen);
      const { key, row } = this.figures.rowOf(p, jobId, runKey);
      const k = `${jobId}\u0001${runKey}\u0001${key}`;
      let r = rows.get(k);
      if (!r) rows.set(k, (r = row()));
      this.figures.add(r, p, prev);
    }
    this.deltas.forget(time);
    if (!seen.length) return;
    this.db
      .transaction(() => {
        this.figures.write(this.db, [...rows.values()], time);
        this.deltas.save(seen, time);
      })
      .immediate();
    this.deltas.kept(seen, time);
  }

  /** One batch of forgetting old series' last values: how many went. */
  prune(now: number, limit?: number): number {
    return this.deltas.prune(now, limit);
  }
}
