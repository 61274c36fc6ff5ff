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

// called for every line of every rank: module-level checks and field names worked out once, no closures or spreads
// per line (they were half of a line's cost)
const show = (v: unknown): string => String(JSON.stringify(v)).slice(0, 40);

function int(o: Json, k: string, min: number, where: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min)
    throw new Error(`${where}: ${k} is ${show(v)}, not a whole number >= ${min}`);
  return v;
}

function str(o: Json, k: string, where: string): string {
  const v = o[k];
  if (typeof v !== 'string' || v.length > 256) throw new Error(`${where}: ${k} is not a string`);
  return v;
}

/** A bandwidth in GB/s or "nan" -> bytes/s or null. */
function bw(o: Json, k: string, where: string): number | null {
  const v = o[k];
  if (v === 'nan' || v === undefined) return null;
  // GB/s -> B/s must stay a number: 1e308 GB/s is no bandwidth
  if (typeof v !== 'number' || !Number.isFinite(v * 1e9) || v < 0) throw new Error(`${where}: ${k} is ${show(v)}`);
  return v * 1e9;
}

const KEYS = {
  coll: {
    op: 'coll',
    sn: 'coll_sn',
    bytes: 'coll_msg_size_bytes',
    exec: 'coll_exec_time_us',
    timing: 'coll_timing_source',
    alg: 'coll_algobw_gbs',
    bus: 'coll_busbw_gbs',
  },
  p2p: {
    op: 'p2p',
    sn: 'p2p_sn',
    bytes: 'p2p_msg_size_bytes',
    exec: 'p2p_exec_time_us',
    timing: 'p2p_timing_source',
    alg: 'p2p_algobw_gbs',
    bus: 'p2p_busbw_gbs',
  },
} as const;
const COMM_ID = /^0x[0-9a-f]{1,32}$/i;

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
  const p2p = coll ? undefined : obj(root.p2p_perf);
  const perf = coll ?? p2p;
  if (!perf) throw new Error(`${where}: neither coll_perf nor p2p_perf`);
  const kind = coll ? 'coll' : 'p2p';
  const K = KEYS[kind];
  const commId = str(header, 'id', where);
  if (!COMM_ID.test(commId)) throw new Error(`${where}: header.id "${commId.slice(0, 40)}" is not a communicator id`);
  const nRanks = int(header, 'n_ranks', 1, where);
  const rank = int(header, 'rank', 0, where);
  if (rank >= nRanks) throw new Error(`${where}: rank ${rank} of ${nRanks} ranks`);
  const execUs = perf[K.exec];
  if (typeof execUs !== 'number' || !Number.isFinite(execUs) || execUs < 0) throw new Error(`${where}: ${K.exec} is ${show(execUs)}`);
  const rec: { -readonly [k in keyof InspectorRecord]: InspectorRecord[k] } = {
    commId,
    rank,
    nRanks,
    nNodes: int(header, 'nnodes', 1, where),
    hostname: str(meta, 'hostname', where),
    pid: int(meta, 'pid', 1, where),
    dumpUs: int(meta, 'dump_timestamp_us', 0, where),
    kind,
    op: str(perf, K.op, where),
    sn: int(perf, K.sn, 0, where),
    bytes: int(perf, K.bytes, 0, where),
    execS: execUs / 1e6,
    algBw: bw(perf, K.alg, where),
    busBw: bw(perf, K.bus, where),
  };
  if (typeof header.comm_name === 'string')
    rec.commName = header.comm_name.length > 256 ? header.comm_name.slice(0, 256) : header.comm_name;
  if (kind === 'p2p') rec.peer = int(perf, 'p2p_peer', 0, where);
  const timing = perf[K.timing];
  if (typeof timing === 'string') rec.timingSource = timing.length > 64 ? timing.slice(0, 64) : timing;
  return rec;
}
