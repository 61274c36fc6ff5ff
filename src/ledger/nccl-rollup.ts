/**
 * A job's NCCL communication, for `l9gpu jobs show`: from the attributed
 * nccl.* points (a rank's process is the job's), the operations, bytes and
 * execution seconds added while the job ran, per communicator, collective,
 * message-size bucket and rank on this node. Bandwidths and the slowest ranks
 * are worked out from these when the report is made (src/jobs/communication.ts).
 */
import type { Attributes } from '../core/metrics/model.js';
import type { DeltaFigures } from './deltas-rollup.js';
import { increase } from './series-deltas.js';
import { ncclRowStatement } from '../store/counted.js';
import { jobHintOf } from '../core/metrics/registry.js';

interface Acc {
  jobId: string;
  runKey: string;
  comm: string;
  commName: string;
  collective: string;
  size: string;
  rank: number;
  nRanks: number;
  nNodes: number;
  ops: number;
  bytes: number;
  seconds: number;
}

const FIELD: Record<string, 'ops' | 'bytes' | 'seconds'> = { 'nccl.operations': 'ops', 'nccl.bytes': 'bytes', 'nccl.exec.time': 'seconds' };

export const NCCL_FIGURES: DeltaFigures<Acc> = {
  takes: (p) => p.metric.scope === 'nccl',
  jobOf(p) {
    if (!FIELD[p.metric.name]) return undefined;
    if (p.job) return p.job.id;
    // no run attributed (no provider, or the file's owner may not name that job): the job the points' declared hint names
    const hint = jobHintOf(p.metric);
    const jobId = hint === undefined ? undefined : p.attributes[hint];
    return typeof jobId === 'string' ? jobId : undefined;
  },
  rowOf(p, jobId, runKey) {
    const a: Attributes = p.attributes;
    const commName = typeof a['nccl.comm.name'] === 'string' ? a['nccl.comm.name'] : '';
    // 2.30's interval files have no communicator id: its name stands for it
    const comm = typeof a['nccl.comm.id'] === 'string' ? a['nccl.comm.id'] : commName;
    const collective = String(a['nccl.collective']);
    const size = String(a['nccl.message.size'] ?? '');
    const rank = typeof a['nccl.rank'] === 'number' ? a['nccl.rank'] : -1;
    return {
      key: `${comm}\u0001${collective}\u0001${size}\u0001${rank}`,
      row: () => ({
        jobId,
        runKey,
        comm,
        commName,
        collective,
        size,
        rank,
        nRanks: Number(a['nccl.ranks']) || 1,
        nNodes: Number(a['nccl.nodes']) || 1,
        ops: 0,
        bytes: 0,
        seconds: 0,
      }),
    };
  },
  add(acc, p, prev) {
    const field = FIELD[p.metric.name]!;
    acc[field] += field === 'seconds' ? increase(p.hist?.sum ?? 0, prev?.h?.sum) : increase(p.value, prev?.v);
  },
  write(db, accs, time) {
    const put = ncclRowStatement(db);
    for (const a of accs)
      put.run(
        a.jobId,
        a.runKey,
        a.comm,
        a.commName,
        a.collective,
        a.size,
        a.rank,
        a.nRanks,
        a.nNodes,
        time,
        time,
        a.ops,
        a.bytes,
        a.seconds,
      );
  },
  failure: "cannot update the jobs' communication figures: the NCCL counts since the last write go in at the next one",
  kind: 'job ledger (communication figures)',
};
