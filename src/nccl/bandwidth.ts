/** NCCL's bandwidth figures, shared by the Inspector plugin and the job report. */

/**
 * Algorithm and bus bandwidth (bytes/s) as the Inspector computes them
 * (inspectorComputeOpBw, the factors of nccl-tests' PERFORMANCE.md): algbw =
 * bytes / time, where AllGather and ReduceScatter move the message times the
 * ranks; busbw = algbw x 2(n-1)/n for AllReduce, (n-1)/n for AllGather and
 * ReduceScatter, x 1 for Broadcast, Reduce, Send and Recv. null: no time, or
 * an operation of no known factor.
 */
const KNOWN_OPS = /^(?:AllReduce|AllGather|AllGatherV|ReduceScatter|Broadcast|Reduce|Send|Recv|SendRecv)$/;

export function bandwidth(op: string, bytes: number, seconds: number, nRanks: number): { algBw: number; busBw: number } | null {
  // an operation the Inspector could not name ("Invalid": NCCL's AlltoAll) has no factor: it prints 0, we print nothing
  if (!(seconds > 0) || nRanks < 1 || !KNOWN_OPS.test(op)) return null;
  const gathered = /^(AllGather|ReduceScatter)/.test(op);
  const alg = (gathered ? bytes * nRanks : bytes) / seconds;
  const n = nRanks;
  const factor = /^AllReduce/.test(op) ? (2 * (n - 1)) / n : gathered ? (n - 1) / n : 1;
  // a time of a few zeptoseconds makes no bandwidth a number holds
  return Number.isFinite(alg) ? { algBw: alg, busBw: alg * factor } : null;
}
