/**
 * NCCL Inspector: the collectives and point-to-point operations of the
 * distributed jobs on this node, from the files NCCL's Inspector profiler
 * plugin writes (NCCL 2.28.3 and later). Each rank process appends JSON lines
 * to its own log, followed by tail.ts; the Prometheus files of 2.29 and later
 * are read by prom.ts. Every record is checked (parse.ts), its bandwidth
 * recomputed from size, time and ranks and compared with the file's own, and
 * folded into per-rank series (aggregate.ts) with each rank's slowdown
 * against its peers on the same operations (straggler.ts).
 *
 * Which job and GPU a series belongs to is attribution's: the writing
 * process's pid is on every JSON series (its cgroup names the job, NVML's
 * process list its GPU), the dump folder's job id as a fallback; a .prom file
 * names its GPU.
 */
import { existsSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Emitter } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import type { Logger } from '../../src/core/log.js';
import type { Plugin, PluginContext, PluginManifest } from '../../src/core/plugin.js';
import { Aggregator } from './aggregate.js';
import { NCCL_SECTION } from './config.js';
import { Locator, type InspectorFile } from './locate.js';
import { bandwidth } from '../../src/core/nccl-bandwidth.js';
import { parseInspectorLine, type InspectorRecord } from './parse.js';
import { PromFile } from './prom.js';
import { FileTail, type TailResult } from './tail.js';

const REJECTED = metric('l9gpu.nccl.lines.rejected');

/** Bytes read from all logs in one collection (the rest the next): a backlog of gigabytes is caught up on over collections. */
const READ_BUDGET = 64 << 20;
/** Bytes of one file read and folded at a time: what memory holds of a backlog. */
const CHUNK = 512 << 10;
/** A log not written for this long, its process gone, is closed. */
const RETIRE_IDLE_MS = 60_000;
/** Lines longer are no Inspector record (a verbose record with many channels is a few KiB). */
const MAX_LINE = 256 << 10;

interface FollowedLog {
  readonly tail: FileTail;
  readonly file: InspectorFile;
  lineNo: number;
}

export interface NcclOptions {
  readonly paths: readonly string[];
  readonly discover: boolean;
  readonly maxFileAgeMs: number;
  readonly maxSeries: number;
  readonly window: number;
  readonly hostNames: readonly string[];
  readonly proc?: string;
}

export class NcclPlugin implements Plugin {
  private readonly locator: Locator;
  private readonly agg: Aggregator;
  private readonly logs = new Map<string, FollowedLog>();
  private readonly proms = new Map<string, PromFile>();
  /** Files found too old to be this node's activity, by path: their mtime then. */
  private readonly stale = new Map<string, number>();
  private rejected = 0;
  private readonly start = Date.now();

  constructor(
    private readonly o: NcclOptions,
    private readonly log: Logger,
  ) {
    this.locator = new Locator({ paths: o.paths, discover: o.discover, hostNames: o.hostNames, ...(o.proc ? { proc: o.proc } : {}) });
    this.agg = new Aggregator({ maxSeries: o.maxSeries, window: o.window });
  }

  async collect(out: Emitter): Promise<void> {
    const now = out.time ?? Date.now();
    this.follow(now);
    let budget = READ_BUDGET;
    // a chunk of each file in turn, folded before the next is read: memory holds one chunk of lines whatever the
    // backlog, and a file with a backlog of gigabytes does not keep the others waiting
    let active = [...this.logs];
    while (active.length && budget > 0) {
      const next: typeof active = [];
      for (const [path, f] of active) {
        const r = f.tail.poll();
        budget -= r.read;
        this.take(path, f, r, out, now);
        if (r.events.includes('deleted')) {
          f.tail.close();
          this.logs.delete(path);
        } else if (f.tail.lag > 0) next.push([path, f]);
        else if (r.read === 0) this.retire(path, f, now);
        if (budget <= 0) break;
      }
      active = next;
      // a backlog: let the event loop breathe between rounds
      if (active.length) await new Promise((res) => setImmediate(res));
    }
    for (const [path, p] of this.proms) {
      const here = p.poll(
        (rec, jobId) => this.agg.add(rec, { ...(jobId ? { jobId } : {}), gpuUuid: p.gpuUuid, noPid: true }, now),
        (why) => {
          this.rejected++;
          out.unreadable(path, why);
        },
      );
      if (!here) this.proms.delete(path);
      else p.emit(out, now);
    }
    if (this.agg.dropped) out.unreadable('nccl series', `more than ${this.o.maxSeries} series (max_series): records of new ones dropped (${this.agg.dropped} so far)`);
    this.agg.emit(out, now);
    out.add(REJECTED, this.rejected, {}, this.start);
  }

  private take(path: string, f: FollowedLog, r: TailResult, out: Emitter, now: number): void {
    for (const ev of r.events) {
      if (ev === 'truncated' || ev === 'rewritten') f.lineNo = 0;
      this.log.debug('nccl: inspector log', { file: path, event: ev });
    }
    this.rejected += r.skipped;
    if (r.skipped) out.unreadable(path, `${r.skipped} line(s) longer than ${MAX_LINE} bytes skipped`);
    for (const line of r.lines) {
      f.lineNo++;
      if (!line) continue;
      let rec: InspectorRecord;
      try {
        rec = parseInspectorLine(line, `${path}:${f.lineNo}`);
      } catch (e) {
        this.rejected++;
        out.unreadable(path, (e as Error).message);
        continue;
      }
      this.check(rec, path);
      this.agg.add(rec, f.file.jobId ? { jobId: f.file.jobId } : {}, now);
    }
  }

  /**
   * A log whose process has ended and which has been read to its end is
   * closed (the Inspector never deletes its logs: an ended job's would hold a
   * descriptor for the daemon's life) and not read again unless a new process
   * rewrites it (its time changes: fopen "w" starts it anew).
   */
  private retire(path: string, f: FollowedLog, now: number): void {
    const pid = f.file.pid;
    if (pid === undefined || existsSync(`${this.o.proc ?? '/proc'}/${pid}`)) return;
    let mtimeMs: number;
    try {
      mtimeMs = statSync(path).mtimeMs;
    } catch {
      return;
    }
    if (now - mtimeMs < RETIRE_IDLE_MS) return;
    f.tail.close();
    this.logs.delete(path);
    this.stale.set(path, mtimeMs);
  }

  /** New files are followed from their start; a file last written before max_file_age when first found is an ended job's. */
  private follow(now: number): void {
    const files = this.locator.files(now);
    // forget what is gone: the map holds at most the files there are
    if (this.stale.size) {
      const there = new Set(files.map((f) => f.path));
      for (const p of this.stale.keys()) if (!there.has(p)) this.stale.delete(p);
    }
    for (const f of files) {
      if (this.logs.has(f.path) || this.proms.has(f.path)) continue;
      let st;
      try {
        st = statSync(f.path);
      } catch {
        continue;
      }
      if (!st.isFile() || this.stale.get(f.path) === st.mtimeMs) continue;
      if (now - st.mtimeMs > this.o.maxFileAgeMs) {
        this.stale.set(f.path, st.mtimeMs);
        continue;
      }
      this.stale.delete(f.path);
      if (f.kind === 'log') this.logs.set(f.path, { tail: new FileTail(f.path, { maxLine: MAX_LINE, maxRead: CHUNK }), file: f, lineNo: 0 });
      else this.proms.set(f.path, new PromFile(f.path, f.gpuUuid!, this.locator.names, f.jobId));
    }
  }

  /** The file's own bandwidth against ours: a disagreement beyond its 6 decimals means the formula or the fields are not what we think. */
  private check(r: InspectorRecord, path: string): void {
    if (r.busBw === null || r.busBw === 0) return;
    const ours = bandwidth(r.op, r.bytes, r.execS, r.nRanks);
    if (!ours) return;
    // the file prints GB/s with 6 decimals: 0.5e-6 GB/s of rounding, plus a relative hair for the double arithmetic
    if (Math.abs(ours.busBw - r.busBw) > 500 + 1e-9 * r.busBw) {
      this.log.once(`nccl-bw-${path}`, 'warn', 'nccl: the Inspector\'s bus bandwidth differs from the one recomputed from size, time and ranks; the recomputed one is used', {
        file: path, collective: r.op, ranks: r.nRanks, file_gbs: r.busBw / 1e9, recomputed_gbs: ours.busBw / 1e9,
      });
    }
  }

  close(): void {
    for (const f of this.logs.values()) f.tail.close();
    this.logs.clear();
  }
}

export function ncclOptions(ctx: PluginContext): NcclOptions {
  const c = ctx.config;
  return {
    paths: c.list('nccl', 'paths'),
    discover: c.bool('nccl', 'discover'),
    maxFileAgeMs: (c.num('nccl', 'max_file_age') ?? 3600) * 1000,
    maxSeries: c.num('nccl', 'max_series') ?? 20_000,
    window: c.num('nccl', 'window') ?? 256,
    hostNames: [ctx.hostName, hostname()],
  };
}

export const ncclPlugin: PluginManifest = {
  name: 'nccl',
  description: NCCL_SECTION.description,
  section: NCCL_SECTION,
  metrics: [
    'nccl.operations', 'nccl.bytes', 'nccl.exec.time', 'nccl.bandwidth.algorithm', 'nccl.bandwidth.bus',
    'nccl.interval.bandwidth.bus', 'nccl.interval.exec.time', 'nccl.rank.slowdown', 'nccl.rank.straggler', 'l9gpu.nccl.lines.rejected',
  ],
  reportsGpus: false,
  // nothing to read is a readdir a tick: on by default, it finds the jobs that enable the Inspector
  auto: 'always',
  create: (ctx) => new NcclPlugin(ncclOptions(ctx), ctx.log),
  probe: async (ctx) => {
    const o = ncclOptions(ctx);
    const files = new Locator({ paths: o.paths, discover: o.discover, hostNames: o.hostNames }).files(Date.now());
    const logs = files.filter((f) => f.kind === 'log').length;
    return { ok: true, detail: files.length ? `${logs} rank log(s) and ${files.length - logs} .prom file(s) in ${o.paths.join(', ')}${o.discover ? ' and the folders of running Inspector processes' : ''}` : `no Inspector output now (${o.paths.join(', ')}${o.discover ? ', and running processes with NCCL_INSPECTOR_ENABLE=1' : ''})` };
  },
};
