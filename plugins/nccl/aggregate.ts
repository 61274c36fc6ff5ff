/**
 * Inspector records -> the nccl.* series of one node. A series is one rank's
 * view of one kind of operation: (process, communicator, rank, collective,
 * message-size bucket). Counts, bytes and the exec-time histogram are
 * cumulative from when the series was first seen; the bandwidth gauges cover
 * the operations recorded since the last collection, recomputed from size,
 * time and ranks (never the file's rounded figure, which is only checked).
 *
 * Stragglers: the collectives of one communicator are lined up across the
 * ranks on this node by (collective, sequence number, size), a window of the
 * latest ones per communicator, and each rank's factor worked out by
 * straggler.ts. Point-to-point sequence numbers are per process (the
 * Inspector's own counter), so Send/Recv never enter the window.
 *
 * Memory is bounded: series, series of one communicator ([limits]
 * series_per_communicator: a user's flood of ranks and sizes in one
 * communicator stops there), communicators and each window have a cap, and
 * a series not fed for `idleMs` is forgotten (its counters start again if it
 * comes back, with a new start time, as a counter reset).
 */
import { binarySize } from '../../src/core/binary-size.js';
import type { Attributes, Emitter, HistogramValue } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import { bandwidth } from '../../src/nccl/bandwidth.js';
import { userName } from '../../src/core/proc-owner.js';
import { rankFactors, type RankTime } from '../../src/nccl/straggler.js';
import type { InspectorRecord } from './parse.js';

const OPS = metric('nccl.operations');
const BYTES = metric('nccl.bytes');
const EXEC = metric('nccl.exec.time');
const ALGBW = metric('nccl.bandwidth.algorithm');
const BUSBW = metric('nccl.bandwidth.bus');
const SLOWDOWN = metric('nccl.rank.slowdown');
const STRAGGLER = metric('nccl.rank.straggler');

/** Exec-time bucket bounds (s): 10 µs (a small message's launch) to 10 s (a collective stuck waiting for a peer). */
export const EXEC_BOUNDS: readonly number[] = Object.freeze([
  1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]);

/**
 * A message size's bucket: its power of two, rounded down, named in binary
 * units ("64MiB" holds [64 MiB, 128 MiB)). Powers of two, because message
 * sizes are (a size between two is a bucketing of the same transfer), and
 * few buckets keep the series few.
 */
export function sizeBucket(bytes: number): string {
  if (!(bytes >= 1)) return '0B';
  let p = 2 ** Math.floor(Math.log2(bytes));
  // log2 of a number just under a power of two can round up
  if (p > bytes) p /= 2;
  return binarySize(p);
}

/** Where a record came from, beyond the record: its file's job id (the dump folder's name) and GPU (a .prom file's name). */
export interface RecordSource {
  readonly jobId?: string;
  readonly gpuUuid?: string;
  /** The process the series is credited to, where its file's owner rule says which (else the record's own). */
  readonly pid?: number;
  /** No pid known (a .prom file, a log not its process's user's): the series is not a process's. */
  readonly noPid?: boolean;
  /** Who the file is (its owner), for the budget ledger. */
  readonly user?: string;
  /** The pid's process when it was believed (its start time): a pid another process takes later is not the same one. */
  readonly pidStart?: string;
}

interface Series {
  readonly attrs: Attributes;
  /** The start time of the process its pid was credited to, where known. */
  readonly pidStart: string | undefined;
  /** Whose file, as counted against perUser (undefined: root's, or not known). */
  readonly user: string | undefined;
  readonly op: string;
  readonly nRanks: number;
  readonly start: number;
  ops: number;
  bytes: number;
  counts: number[];
  sum: number;
  /** Since the last collection. */
  dBytes: number;
  dSeconds: number;
  dOps: number;
  seen: number;
}

interface Window {
  /** "op/sn/bytes" -> rank -> seconds, oldest first. */
  readonly ops: Map<string, Map<number, number>>;
  readonly attrs: Attributes;
  /** Each rank's process and GPU, for its points' attribution. */
  readonly who: Map<number, Attributes>;
  seen: number;
}

export interface AggregateOptions {
  /** Series kept at most; a new one past it is dropped and counted. Default 20,000. */
  readonly maxSeries?: number;
  /** Operations in a communicator's straggler window. Default 256. */
  readonly window?: number;
  /** A series or window not fed for this long is forgotten. Default 10 minutes. */
  readonly idleMs?: number;
  /** Series of one communicator kept at most; a new one past it is dropped and `onLimit` told. Default: maxSeries. */
  readonly perCommunicator?: number;
  onLimit?(user: string, commId: string): void;
  /** Series of one user's files (RecordSource.user, root's not counted) kept at most; a new one past it is dropped and `onUserLimit` told.
   * Default: maxSeries. */
  readonly perUser?: number;
  onUserLimit?(user: string): void;
  /** A new series dropped for maxSeries, with whose file it was. */
  onFull?(user: string): void;
}

export class Aggregator {
  private readonly series = new Map<string, Series>();
  private readonly windows = new Map<string, Window>();
  /** Message size -> its bucket's name (sizes repeat: a few per collective). */
  private readonly buckets = new Map<number, string>();
  private readonly maxSeries: number;
  private readonly windowSize: number;
  private readonly idleMs: number;
  private readonly perComm: number;
  /** Communicator -> its series now. */
  private readonly commSeries = new Map<string, number>();
  private readonly perUser: number;
  /** User -> its series now (root's not counted). */
  private readonly userSeries = new Map<string, number>();
  /** Records dropped because the series cap was reached (the runner's log says it once). */
  dropped = 0;

  constructor(private readonly o: AggregateOptions = {}) {
    this.maxSeries = o.maxSeries ?? 20_000;
    this.windowSize = o.window ?? 256;
    this.idleMs = o.idleMs ?? 600_000;
    this.perComm = o.perCommunicator ?? this.maxSeries;
    this.perUser = o.perUser ?? this.maxSeries;
  }

  get size(): number {
    return this.series.size;
  }

  add(r: InspectorRecord, src: RecordSource, now: number): void {
    let bucket = this.buckets.get(r.bytes);
    if (bucket === undefined) {
      if (this.buckets.size > 4096) this.buckets.clear();
      this.buckets.set(r.bytes, (bucket = sizeBucket(r.bytes)));
    }
    const pid = src.noPid ? 0 : (src.pid ?? r.pid);
    // a communicator's name, ranks and nodes are its id's: not part of the key (first seen wins)
    // the file's owner too: two users' files for one GPU and communicator id are two sources, never one series
    const key = [pid, r.commId, r.rank, r.op, bucket, src.jobId ?? '', src.gpuUuid ?? '', src.user ?? ''].join('\u0001');
    let s = this.series.get(key);
    if (!s) {
      // the user's own bound first: one user's flood is that user's hit, and leaves max_series to the others
      const user = src.user !== undefined && src.user !== '0' ? src.user : undefined;
      const mine = user === undefined ? 0 : (this.userSeries.get(user) ?? 0);
      if (user !== undefined && mine >= this.perUser) {
        this.o.onUserLimit?.(user);
        return;
      }
      if (this.series.size >= this.maxSeries) {
        this.dropped++;
        this.o.onFull?.(src.user ?? 'unknown');
        return;
      }
      const inComm = this.commSeries.get(r.commId) ?? 0;
      if (inComm >= this.perComm) {
        this.o.onLimit?.(src.user ?? 'unknown', r.commId);
        return;
      }
      this.commSeries.set(r.commId, inComm + 1);
      if (user !== undefined) this.userSeries.set(user, mine + 1);
      const attrs: Attributes = {
        'nccl.collective': r.op,
        'nccl.ranks': r.nRanks,
        'nccl.nodes': r.nNodes,
        'nccl.comm.id': r.commId,
        ...(r.commName !== undefined ? { 'nccl.comm.name': r.commName } : {}),
        'nccl.rank': r.rank,
        'nccl.message.size': bucket,
        ...(src.jobId ? { 'nccl.job.id': src.jobId } : {}),
        ...(pid ? { 'process.pid': pid } : {}),
        ...(src.gpuUuid ? { 'gpu.uuid': src.gpuUuid } : {}),
        // whose file it is, where a user's: attribution holds a job the file names to its owner (a user may name any
        // job); root's files are the admin's and carry none
        ...(src.user !== undefined && src.user !== '0'
          ? { 'process.owner': /^\d+$/.test(src.user) ? userName(Number(src.user)) : src.user }
          : {}),
      };
      this.series.set(
        key,
        (s = {
          attrs,
          pidStart: pid && pid === src.pid ? src.pidStart : undefined,
          user,
          op: r.op,
          nRanks: r.nRanks,
          start: now,
          ops: 0,
          bytes: 0,
          counts: new Array<number>(EXEC_BOUNDS.length + 1).fill(0),
          sum: 0,
          dBytes: 0,
          dSeconds: 0,
          dOps: 0,
          seen: now,
        }),
      );
    }
    s.ops++;
    s.bytes += r.bytes;
    s.counts[bucketOf(r.execS)]!++;
    s.sum += r.execS;
    s.dOps++;
    s.dBytes += r.bytes;
    s.dSeconds += r.execS;
    s.seen = now;
    if (r.kind === 'coll' && r.execS > 0) this.line(r, s.attrs, now);
  }

  /** A collective into its communicator's window, lined up with the other ranks' same operation. */
  private line(r: InspectorRecord, from: Attributes, now: number): void {
    let w = this.windows.get(r.commId);
    if (!w) {
      // as many windows as series at most: a flood of communicator ids is bounded by the series cap
      if (this.windows.size >= this.maxSeries) return;
      this.windows.set(
        r.commId,
        (w = {
          ops: new Map(),
          attrs: {
            'nccl.comm.id': r.commId,
            ...(r.commName !== undefined ? { 'nccl.comm.name': r.commName } : {}),
            'nccl.ranks': r.nRanks,
            'nccl.nodes': r.nNodes,
          },
          who: new Map(),
          seen: now,
        }),
      );
    }
    w.seen = now;
    if (!w.who.has(r.rank)) {
      const who: Attributes = {};
      for (const a of ['nccl.job.id', 'process.pid', 'gpu.uuid']) if (from[a] !== undefined) who[a] = from[a]!;
      w.who.set(r.rank, who);
    }
    const k = `${r.op}/${r.sn}/${r.bytes}`;
    let ranks = w.ops.get(k);
    if (!ranks) {
      if (w.ops.size >= this.windowSize) w.ops.delete(w.ops.keys().next().value!);
      w.ops.set(k, (ranks = new Map()));
    }
    ranks.set(r.rank, r.execS);
  }

  /**
   * Forgets what was credited to a pid (its process has ended and the pid is
   * another process's now): attribution would give that process's job the
   * old series.
   */
  forgetPid(pid: number): void {
    for (const [k, s] of this.series) if (s.attrs['process.pid'] === pid) this.drop(k, s);
    for (const w of this.windows.values()) for (const [rank, who] of w.who) if (who['process.pid'] === pid) w.who.delete(rank);
  }

  /**
   * Forgets the series of pids another process has taken since (same pid, a
   * new start time): an ended rank's series outlive it by series_idle, and
   * attribution reads a pid's job from the process that has it now.
   */
  forgetReused(startOf: (pid: number) => string | undefined): void {
    const checked = new Map<number, string | undefined>();
    for (const s of this.series.values()) {
      const pid = s.attrs['process.pid'];
      if (typeof pid !== 'number' || s.pidStart === undefined || checked.has(pid)) continue;
      const now = startOf(pid);
      checked.set(pid, now);
      if (now !== undefined && now !== s.pidStart) this.forgetPid(pid);
    }
  }

  private drop(k: string, s: Series): void {
    this.series.delete(k);
    const id = s.attrs['nccl.comm.id'] as string;
    const n = (this.commSeries.get(id) ?? 1) - 1;
    if (n > 0) this.commSeries.set(id, n);
    else this.commSeries.delete(id);
    if (s.user === undefined) return;
    const u = (this.userSeries.get(s.user) ?? 1) - 1;
    if (u > 0) this.userSeries.set(s.user, u);
    else this.userSeries.delete(s.user);
  }

  /** The points of every series, and the bandwidths and rank factors of what came since the last call. */
  emit(out: Emitter, now: number): void {
    for (const [k, s] of this.series) {
      if (now - s.seen > this.idleMs) {
        this.drop(k, s);
        continue;
      }
      out.add(OPS, s.ops, s.attrs, s.start);
      out.add(BYTES, s.bytes, s.attrs, s.start);
      const h: HistogramValue = { bounds: EXEC_BOUNDS, counts: [...s.counts], sum: s.sum, count: s.ops };
      out.histogram(EXEC, h, s.attrs, s.start);
      if (s.dOps) {
        const bw = bandwidth(s.op, s.dBytes, s.dSeconds, s.nRanks);
        if (bw) {
          out.add(ALGBW, bw.algBw, s.attrs);
          out.add(BUSBW, bw.busBw, s.attrs);
        }
      }
      s.dOps = s.dBytes = s.dSeconds = 0;
    }
    for (const [id, w] of this.windows) {
      if (now - w.seen > this.idleMs) {
        this.windows.delete(id);
        continue;
      }
      const ops: RankTime[][] = [];
      for (const m of w.ops.values()) ops.push([...m].map(([rank, seconds]) => ({ rank, seconds })));
      for (const f of rankFactors(ops)) {
        const a = { ...w.attrs, 'nccl.collective': 'all', 'nccl.rank': f.rank, ...w.who.get(f.rank) };
        out.add(SLOWDOWN, f.factor, a);
        out.add(STRAGGLER, f.straggler ? 1 : 0, a);
      }
    }
  }
}

function bucketOf(s: number): number {
  let i = 0;
  while (i < EXEC_BOUNDS.length && s > EXEC_BOUNDS[i]!) i++;
  return i;
}
