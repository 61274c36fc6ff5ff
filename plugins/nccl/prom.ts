/**
 * The Inspector's Prometheus files (NCCL_INSPECTOR_PROM_DUMP=1), one per GPU:
 * <dir>/nccl_inspector_metrics_<uuid>.prom, the bare lowercase UUID of the
 * device (cuDeviceGetUuid; NVML's is the same with "GPU-" before it). Two
 * schemas, told apart by their labels:
 *
 * - 2.29.x: one sample per collective of each rank (comm_id, rank, coll_sn,
 *   message_size "128.00MB", exec time in µs): records, like a JSON line's;
 * - 2.30 and later: one sample per dump interval and (communicator name,
 *   collective, size range "64-65MB", algo_proto), the bus bandwidth a
 *   geometric mean and the exec time a mean, no rank: interval gauges.
 *
 * The file is rewritten in place (fopen "w"), so a read can catch it half
 * written: it is read only once it has stayed the same size and age for a
 * whole poll (or was last written seconds ago) and ends with a newline, and a sample is used only when it reads
 * whole. Its `node`/`hostname` label names the host that wrote it: on a
 * shared folder another node's files are not this node's.
 *
 * The file is a user's: its slurm_job_id label is not believed (anyone can
 * write any job there); the job is the one the plugin's owner rule gives its
 * folder. It is opened only as user-file.ts opens a user's file (never a link,
 * a FIFO, another user's file), and read through that one descriptor.
 */
import { closeSync, readSync } from 'node:fs';
import { openUserFile, type Opened } from '../../src/core/user-file.js';
import type { Attributes, Emitter } from '../../src/core/metrics/model.js';
import { binarySize } from '../../src/core/binary-size.js';
import { metric } from '../../src/core/metrics/registry.js';
import { parsePage, type Family, type Labels } from '../../src/scrape/exposition.js';
import type { InspectorRecord } from './parse.js';

const IBUS = metric('nccl.interval.bandwidth.bus');
const IEXEC = metric('nccl.interval.exec.time');

/** A .prom file bigger than this is not an Inspector's (a few hundred lines per GPU). */
const MAX_PROM_BYTES = 16 << 20;

/** 2.30 rewrites its files every dump interval (30 s at least, minutes at most in practice): older figures are no longer the job's. */
const PROM_STALE_MS = 600_000;
/** A file last written longer ago than this is not being written. */
const SETTLE_MS = 2000;

const UNIT_POW: Record<string, number> = { B: 0, KB: 1, MB: 2, GB: 3, TB: 4, PB: 5 };

/**
 * The Inspector's human-readable sizes, 1024-based: 2.29's "128.00MB" / "8B"
 * (a size) and 2.30's "64-65MB" (a range: its lower bound). undefined: not one.
 */
export function promSize(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(?:-\d+)?(B|KB|MB|GB|TB|PB)$/.exec(s);
  if (!m) return undefined;
  const v = Number(m[1]) * 1024 ** UNIT_POW[m[2]!]!;
  return Number.isFinite(v) ? Math.round(v) : undefined;
}

export interface PromRead {
  /** 2.29's per-collective samples, as records (pid 0: the file is a GPU's, not a process's). */
  readonly records: { record: InspectorRecord; jobId?: string }[];
  /** 2.30's interval samples, as points to emit while the file stands. */
  readonly interval: { metric: typeof IBUS; value: number; attributes: Attributes }[];
  /** Samples left out, with why (the first few). */
  readonly rejected: string[];
  /** The file is another host's. */
  readonly foreign: boolean;
  /** Sample lines past maxSamples: counted, never parsed. */
  readonly dropped: number;
}

/** One .prom file's text -> records or interval points. `hosts`: the names this node goes by. */
export function readPromText(
  text: string,
  where: string,
  hosts: ReadonlySet<string>,
  gpuUuid: string,
  folderJob?: string,
  maxSamples = Infinity,
): PromRead {
  // a real file has a few hundred samples; a user's file of 137k lines would otherwise become as many points every collection
  const { families, dropped } = parsePage(text, { source: where, maxBytes: MAX_PROM_BYTES, maxSamples });
  const by = new Map<string, Family>(families.map((f) => [f.name, f]));
  const records: PromRead['records'] = [];
  const interval: PromRead['interval'] = [];
  const rejected: string[] = [];
  let foreign = false;
  const num = (l: Labels, k: string, min: number): number | undefined => {
    const v = l[k];
    const n = v !== undefined && /^\d{1,15}$/.test(v) ? Number(v) : undefined;
    return n !== undefined && n >= min ? n : undefined;
  };
  const mine = (host: string | undefined): boolean => {
    if (host !== undefined && !hosts.has(host)) foreign = true;
    return !foreign;
  };
  // 2.29: per collective, keyed by its own labels (the three families share them)
  const exec29 = by.get('nccl_collective_exec_time_microseconds');
  for (const s of exec29?.samples ?? []) {
    const l = s.labels;
    if (l.coll_sn === undefined) continue;
    if (!mine(l.hostname)) break;
    const nRanks = num(l, 'nranks', 1);
    const rank = num(l, 'rank', 0);
    const sn = num(l, 'coll_sn', 0);
    const bytes = promSize(l.message_size ?? '');
    const commId = l.comm_id ?? '';
    if (
      nRanks === undefined ||
      rank === undefined ||
      rank >= nRanks ||
      sn === undefined ||
      bytes === undefined ||
      !/^0x[0-9a-f]{1,32}$/i.test(commId) ||
      !l.collective ||
      !(s.value >= 0)
    ) {
      if (rejected.length < 5)
        rejected.push(
          `${where}: a sample of ${s.name} without a readable rank, nranks, coll_sn, comm_id, collective, message_size or time`,
        );
      continue;
    }
    const t = Date.parse(l.timestamp ?? '');
    const jobId = folderJob;
    records.push({
      ...(jobId ? { jobId } : {}),
      record: {
        commId,
        rank,
        nRanks,
        nNodes: num(l, 'n_nodes', 1) ?? 1,
        hostname: l.hostname ?? '',
        pid: 0,
        dumpUs: Number.isFinite(t) ? t * 1000 : 0,
        kind: 'coll',
        op: l.collective.slice(0, 64),
        sn,
        bytes,
        execS: s.value / 1e6,
        algBw: null,
        busBw: null,
      },
    });
  }
  // 2.30+: per interval, no rank
  const pairs: [string, string, 'collective' | 'p2p_operation'][] = [
    ['nccl_bus_bandwidth_gbs', 'nccl_collective_exec_time_microseconds', 'collective'],
    ['nccl_p2p_bus_bandwidth_gbs', 'nccl_p2p_exec_time_microseconds', 'p2p_operation'],
  ];
  for (const [bw, ex, opLabel] of pairs) {
    for (const [fam, def, scale] of [
      [bw, IBUS, 1e9],
      [ex, IEXEC, 1e-6],
    ] as const) {
      for (const s of by.get(fam)?.samples ?? []) {
        const l = s.labels;
        if (l.version === undefined) continue;
        if (!mine(l.node)) break;
        const nRanks = num(l, 'nranks', 1);
        const bytes = promSize(l.message_size ?? '');
        const op = l[opLabel];
        const v = s.value * scale;
        if (nRanks === undefined || bytes === undefined || !op || !(v >= 0) || !Number.isFinite(v)) {
          if (rejected.length < 5)
            rejected.push(`${where}: a sample of ${s.name} without a readable nranks, ${opLabel}, message_size or value`);
          continue;
        }
        const jobId = folderJob;
        interval.push({
          metric: def,
          value: v,
          attributes: {
            'nccl.collective': op.slice(0, 64),
            'nccl.ranks': nRanks,
            'nccl.nodes': num(l, 'n_nodes', 1) ?? 1,
            ...(l.comm_name !== undefined ? { 'nccl.comm.name': l.comm_name.slice(0, 256) } : {}),
            // the Inspector's own range ("3-4MB": [3, 4) MiB), named by its lower bound: a power of two would merge two ranges
            'nccl.message.size': binarySize(bytes),
            ...(l.algo_proto ? { 'nccl.algo_proto': l.algo_proto.slice(0, 64) } : {}),
            ...(jobId ? { 'nccl.job.id': jobId } : {}),
            'gpu.uuid': gpuUuid,
          },
        });
      }
    }
  }
  return foreign ? { records: [], interval: [], rejected: [], foreign, dropped: 0 } : { records, interval, rejected, foreign, dropped };
}

/**
 * One .prom file followed across polls: read once it has settled, its 2.29
 * records given once each (a collective already taken, by communicator, rank,
 * collective and sequence number, is not taken again), its 2.30 points
 * re-emitted every collection while the file stands.
 */
export class PromFile {
  private last: { size: number; mtimeMs: number } | undefined;
  private consumed = '';
  private points: PromRead['interval'] = [];
  private readonly taken = new Map<string, number>();

  constructor(
    readonly path: string,
    readonly gpuUuid: string,
    private readonly hosts: ReadonlySet<string>,
    /** The job the owner rule gives the file's folder (never the file's own label). */
    private readonly folderJob?: string,
    private readonly open: (path: string) => Opened = (p) => openUserFile(p),
    /** Samples kept of one read ([limits] series_per_communicator): the points, and the records remembered as taken. */
    private readonly maxSamples = Infinity,
    /** Samples of a read past maxSamples (once per read of a new version of the file). */
    private readonly onDropped: (n: number) => void = () => {},
  ) {}

  /** Who owns the file, as last opened. */
  uid: number | undefined;
  /** The last settled read was another host's file (its node/hostname label): nothing of it is taken. */
  foreign = false;

  /**
   * false: the file is gone (the Inspector unlinks its files at a clean exit);
   * a refusal (not a regular file, not the folder owner's) goes to `onRefused`.
   */
  poll(
    onRecord: (r: InspectorRecord, jobId: string | undefined) => void,
    onReject: (why: string) => void,
    onRefused: (o: { refused: string; detail: string }) => void = () => {},
  ): boolean {
    const o = this.open(this.path);
    if ('refused' in o) {
      if (o.refused === 'gone') return false;
      onRefused(o);
      return false;
    }
    let text: string;
    try {
      const r = this.read(o.fd, o.st, onReject);
      if (r === undefined) return true;
      text = r;
    } finally {
      closeSync(o.fd);
    }
    this.uid = o.st.uid;
    return this.take(text, onRecord, onReject);
  }

  /** The file's text when it is whole and new, through its descriptor (undefined: not now). */
  private read(fd: number, st: { size: number; mtimeMs: number }, onReject: (why: string) => void): string | undefined {
    const now = { size: st.size, mtimeMs: st.mtimeMs };
    // the Inspector writes a file in one go: unchanged since the last poll, or last written a while ago, it is whole
    const settled = (this.last && this.last.size === now.size && this.last.mtimeMs === now.mtimeMs) || Date.now() - now.mtimeMs > SETTLE_MS;
    this.last = now;
    const version = `${now.size}/${now.mtimeMs}`;
    if (!settled || version === this.consumed) return undefined;
    if (now.size > MAX_PROM_BYTES) {
      onReject(`${this.path}: ${now.size} bytes, more than an Inspector file holds (${MAX_PROM_BYTES})`);
      this.consumed = version;
      return undefined;
    }
    // one more byte than fstat said: a file grown since is caught mid-write, not cut short
    const buf = Buffer.allocUnsafe(now.size + 1);
    let n = 0;
    try {
      for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, n);
    } catch {
      return undefined;
    }
    const text = buf.toString('utf8', 0, n);
    // caught mid-write after all: the next settled poll
    if (n > now.size || (text.length && !text.endsWith('\n'))) return undefined;
    this.consumed = version;
    return text;
  }

  private take(text: string, onRecord: (r: InspectorRecord, jobId: string | undefined) => void, onReject: (why: string) => void): boolean {
    let r: PromRead;
    try {
      r = readPromText(text, this.path, this.hosts, this.gpuUuid, this.folderJob, this.maxSamples);
    } catch (e) {
      onReject((e as Error).message);
      this.points = [];
      return true;
    }
    this.foreign = r.foreign;
    for (const why of r.rejected) onReject(why);
    if (r.dropped) this.onDropped(r.dropped);
    this.points = r.interval;
    const here = new Set<string>();
    for (const { record: rec, jobId } of r.records) {
      const k = `${rec.commId}/${rec.rank}/${rec.op}`;
      here.add(k);
      const had = this.taken.get(k);
      if (had !== undefined && rec.sn <= had) continue;
      this.taken.set(k, rec.sn);
      onRecord(rec, jobId);
    }
    // a file cycling through new keys would grow the map without end: past maxSamples it keeps this read's keys only
    // (at most maxSamples), the ones a rewrite of the file can still hold
    if (this.taken.size > this.maxSamples) for (const k of this.taken.keys()) if (!here.has(k)) this.taken.delete(k);
    return true;
  }

  /** The 2.30 interval points of the last settled read, while they are recent: a file left by a process that did not exit cleanly is not
   * unlinked, and its last figures are not today's. */
  emit(out: Emitter, now: number): void {
    if (!this.last || now - this.last.mtimeMs > PROM_STALE_MS) return;
    for (const p of this.points) out.add(p.metric, p.value, p.attributes);
  }
}
