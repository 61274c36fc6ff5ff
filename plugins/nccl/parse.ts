/**
 * One NCCL Inspector JSON line (format "v4.0", NCCL 2.28.3 to 2.30.x) -> a
 * record, checked field by field: the line is a job's output, untrusted.
 * `header.comm_name` exists from 2.30.3, `p2p_perf` from 2.30.3;
 * `coll_timing_source` is optional; a double the Inspector could not compute
 * is the string "nan" (null here). Bandwidths are GB/s (1e9 bytes) in the
 * file; the record keeps bytes and seconds, as the registry's units are.
 */

export interface InspectorRecord {
  /** The communicator (header.id, hex), its name where the release writes one. */
  readonly commId: string;
  readonly commName?: string;
  readonly rank: number;
  readonly nRanks: number;
  readonly nNodes: number;
  readonly hostname: string;
  readonly pid: number;
  /** When the line was written (not when the operation ran), µs since the epoch. */
  readonly dumpUs: number;
  readonly kind: 'coll' | 'p2p';
  /** AllReduce, AllGather, ReduceScatter, Broadcast, Reduce; Send, Recv. */
  readonly op: string;
  readonly sn: number;
  readonly peer?: number;
  readonly bytes: number;
  readonly execS: number;
  readonly timingSource?: string;
  /** The file's own figures, bytes per second (null: "nan"). */
  readonly algBw: number | null;
  readonly busBw: number | null;
}

type Json = Record<string, unknown>;

const obj = (v: unknown): Json | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined);

/** Parses one line; throws an Error naming `where` (file and line number) and the field. */
export function parseInspectorLine(line: string, where: string): InspectorRecord {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch (e) {
    throw new Error(`${where}: not JSON (${(e as Error).message.slice(0, 80)})`);
  }
  const root = obj(doc);
  const header = obj(root?.header);
  const meta = obj(root?.metadata);
  if (!root || !header || !meta) throw new Error(`${where}: no header or metadata object`);
  const coll = obj(root.coll_perf);
  const p2p = obj(root.p2p_perf);
  const perf = coll ?? p2p;
  if (!perf) throw new Error(`${where}: neither coll_perf nor p2p_perf`);
  const p = coll ? 'coll' : 'p2p';
  const int = (o: Json, k: string, min = 0): number => {
    const v = o[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new Error(`${where}: ${k} is ${JSON.stringify(v)?.slice(0, 40)}, not a whole number >= ${min}`);
    return v;
  };
  const str = (o: Json, k: string): string => {
    const v = o[k];
    if (typeof v !== 'string' || v.length > 256) throw new Error(`${where}: ${k} is not a string`);
    return v;
  };
  /** A bandwidth in GB/s or "nan" -> bytes/s or null. */
  const bw = (k: string): number | null => {
    const v = perf[k];
    if (v === 'nan' || v === undefined) return null;
    // GB/s -> B/s must stay a number: 1e308 GB/s is no bandwidth
    if (typeof v !== 'number' || !Number.isFinite(v * 1e9) || v < 0) throw new Error(`${where}: ${k} is ${JSON.stringify(v)?.slice(0, 40)}`);
    return v * 1e9;
  };
  const commId = str(header, 'id');
  if (!/^0x[0-9a-f]{1,32}$/i.test(commId)) throw new Error(`${where}: header.id "${commId.slice(0, 40)}" is not a communicator id`);
  const nRanks = int(header, 'n_ranks', 1);
  const rank = int(header, 'rank');
  if (rank >= nRanks) throw new Error(`${where}: rank ${rank} of ${nRanks} ranks`);
  const execUs = perf[`${p}_exec_time_us`];
  if (typeof execUs !== 'number' || !Number.isFinite(execUs) || execUs < 0) throw new Error(`${where}: ${p}_exec_time_us is ${JSON.stringify(execUs)?.slice(0, 40)}`);
  const rec: InspectorRecord = {
    commId,
    ...(typeof header.comm_name === 'string' ? { commName: header.comm_name.slice(0, 256) } : {}),
    rank,
    nRanks,
    nNodes: int(header, 'nnodes', 1),
    hostname: str(meta, 'hostname'),
    pid: int(meta, 'pid', 1),
    dumpUs: int(meta, 'dump_timestamp_us'),
    kind: p,
    op: str(perf, p),
    sn: int(perf, `${p}_sn`),
    ...(p === 'p2p' ? { peer: int(perf, 'p2p_peer') } : {}),
    bytes: int(perf, `${p}_msg_size_bytes`),
    execS: execUs / 1e6,
    ...(typeof perf[`${p}_timing_source`] === 'string' ? { timingSource: String(perf[`${p}_timing_source`]).slice(0, 64) } : {}),
    algBw: bw(`${p}_algobw_gbs`),
    busBw: bw(`${p}_busbw_gbs`),
  };
  return rec;
}
