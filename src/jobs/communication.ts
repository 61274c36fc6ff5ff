/**
 * The communication section of a job report: from the per-rank NCCL rows
 * (this node's store, or every node's series through PromQL), the job's
 * collectives by time spent, the bus bandwidth each achieved against the
 * fabric's peak for the job's partition, and the ranks slowest on the same
 * operations.
 *
 * A row is one rank's figures for one (communicator, collective, size
 * bucket). Bandwidth over rows is bytes over seconds summed (each rank's time
 * weighs in), with nccl-tests' factors (src/nccl/bandwidth.ts). A rank's
 * slowdown compares its mean time per operation with the other ranks' on the
 * same (communicator, collective, size), by the same robust statistics as the
 * daemon's live nccl.rank.slowdown (src/nccl/straggler.ts).
 */
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { JOBS_SECTION } from './config.js';
import { binaryBytes } from '../core/binary-size.js';
import { bandwidth } from '../nccl/bandwidth.js';
import { rankFactors, type RankTime } from '../nccl/straggler.js';
import type { CommunicationFigures, JobReport, Note } from './report-model.js';
import type { Db } from '../store/open.js';
import { ncclRows, type NcclRow } from '../store/counted.js';
import { byText } from '../core/text-table.js';

/** A stored NCCL row with its node (rank -1: a row of no one rank, 2.30's interval files). */
export interface CommRow extends NcclRow {
  node: string;
}

/** Sizes from which a collective should come near the fabric's peak (smaller ones are latency-bound). */
const LARGE = 16 << 20;
/** Below this fraction of the peak a large collective is worth a note. */
const LOW = 0.5;
/** A collective group under this share of the job's communication time is not worth a note. */
const MINOR = 0.1;

/** The fabric's peak bus bandwidth for a partition (B/s): [jobs] nccl_peak_bus_bandwidths, else nccl_peak_bus_bandwidth; null: not
 * configured. */
export function peakFor(cfg: Config | null, partition: string | null): number | null {
  if (!cfg) return null;
  const j = readSection(cfg, JOBS_SECTION);
  const per = j.nccl_peak_bus_bandwidths;
  const gbs = (partition !== null && per[partition] !== undefined ? Number(per[partition]) : null) ?? j.nccl_peak_bus_bandwidth;
  return gbs !== null && Number.isFinite(gbs) && gbs > 0 ? gbs * 1e9 : null;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

export function communicationOf(rows: readonly CommRow[], peak: number | null): CommunicationFigures | null {
  const used = rows.filter((r) => r.ops > 0);
  if (!used.length) return null;
  const groups = new Map<string, CommRow[]>();
  for (const r of used) {
    const k = `${r.comm}\u0001${r.collective}\u0001${r.size}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(r);
  }
  let total = 0;
  const collectives: CommunicationFigures['collectives'] = [];
  const ops: RankTime[][] = [];
  const rankOf: { comm: string; comm_name: string; rank: number; node: string }[] = [];
  const rankIds = new Map<string, number>();
  for (const g of groups.values()) {
    const f = g[0]!;
    const ranks = g.filter((r) => r.rank >= 0);
    const bytes = g.reduce((a, r) => a + r.bytes, 0);
    const seconds = g.reduce((a, r) => a + r.seconds, 0);
    // per rank: a rank's view of the group (the rows of a rank-less interval file count as one)
    const nViews = Math.max(1, new Set(g.map((r) => `${r.node}/${r.rank}`)).size);
    const timePerRank = seconds / nViews;
    total += timePerRank;
    const bw = bandwidth(f.collective, bytes, seconds, f.n_ranks);
    collectives.push({
      comm: f.comm,
      comm_name: f.comm_name || null,
      collective: f.collective,
      size: f.size,
      ranks: f.n_ranks,
      nodes: f.n_nodes,
      ranks_seen: ranks.length ? new Set(ranks.map((r) => `${r.node}/${r.rank}`)).size : 0,
      operations: Math.max(...g.map((r) => r.ops)),
      time_s: r3(timePerRank),
      share: 0,
      alg_bw_Bps: bw ? Math.round(bw.algBw) : null,
      bus_bw_Bps: bw ? Math.round(bw.busBw) : null,
      of_peak: bw && peak ? r3(bw.busBw / peak) : null,
    });
    if (ranks.length >= 3) {
      const op: RankTime[] = [];
      for (const r of ranks) {
        const id = `${f.comm}\u0001${r.node}\u0001${r.rank}`;
        let n = rankIds.get(id);
        if (n === undefined) {
          rankIds.set(id, (n = rankOf.length));
          rankOf.push({ comm: f.comm, comm_name: f.comm_name, rank: r.rank, node: r.node });
        }
        op.push({ rank: n, seconds: r.seconds / r.ops });
      }
      ops.push(op);
    }
  }
  for (const c of collectives) c.share = total > 0 ? r3(c.time_s / total) : 0;
  collectives.sort((a, b) => b.time_s - a.time_s || byText(a.collective, b.collective));
  // one operation group is enough here: each is already the mean over the job
  const factors = rankFactors(ops, { minOperations: 1 });
  const slowest = factors
    .slice(0, 5)
    .filter((x) => x.factor > 1)
    .map((x) => ({ ...rankOf[x.rank]!, comm_name: rankOf[x.rank]!.comm_name || null, slowdown: x.factor, straggler: x.straggler }));
  return { time_s: r3(total), peak_bus_bw_Bps: peak, collectives, slowest_ranks: slowest };
}

/** The job run's rows in this node's store (src/ledger/nccl-rollup.ts). */
export function commRowsFromStore(db: Db, jobId: string, runKey: string, node: string): CommRow[] {
  return ncclRows(db, jobId, runKey).map((r) => ({ node, ...r }));
}

/**
 * The fabric's peak, which is the reader's setting ([jobs] of the config the
 * report is shown with), put on a report: each collective's fraction of it,
 * and the notes it makes.
 */
export function withPeak(report: JobReport, peak: number | null): JobReport {
  const c = report.communication;
  if (!c || peak === null) return report;
  const communication = {
    ...c,
    peak_bus_bw_Bps: peak,
    collectives: c.collectives.map((k) => ({ ...k, of_peak: k.bus_bw_Bps === null ? null : r3(k.bus_bw_Bps / peak) })),
  };
  const notes = [...report.notes.filter((n) => !n.code.startsWith('nccl-')), ...communicationNotes(communication)];
  return { ...report, communication, notes };
}

/** What a user should look at: a large collective far below the fabric's peak, a straggling rank. */
export function communicationNotes(c: CommunicationFigures | null): Note[] {
  if (!c) return [];
  const out: Note[] = [];
  if (c.peak_bus_bw_Bps) {
    for (const k of c.collectives) {
      if (k.of_peak === null || k.of_peak >= LOW || k.share < MINOR || (binaryBytes(k.size) ?? 0) < LARGE) continue;
      out.push({
        level: 'warn',
        code: 'nccl-bandwidth-low',
        text:
          `${k.collective} of ${k.size} messages on ${k.comm_name ?? k.comm} reached ${(k.bus_bw_Bps! / 1e9).toFixed(1)} ` +
          `GB/s bus bandwidth, ${Math.round(k.of_peak * 100)} % of the fabric's ${(c.peak_bus_bw_Bps / 1e9).toFixed(0)} ` +
          `GB/s, in ${Math.round(k.share * 100)} % of the job's communication time`,
      });
    }
  }
  for (const s of c.slowest_ranks) {
    if (!s.straggler) continue;
    out.push({
      level: 'warn',
      code: 'nccl-straggler',
      text:
        `rank ${s.rank} of ${s.comm_name ?? s.comm} on ${s.node} took ${s.slowdown.toFixed(2)}x the ` +
        `typical rank's time on the same collectives (an Inspector time includes waiting for peers: ` +
        `a rank late to a collective lengthens the others' times, so look at what this one waits on ` +
        `too)`,
    });
  }
  return out;
}
