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
 *
 * The files are users' and the daemon is root, so (README: "Ownership"):
 * - a file is opened only as src/core/user-file.ts opens one (no link, no
 *   FIFO: refused and counted as not_regular_file), and only when its folder's
 *   owner owns it (not_owner); each re-open is checked again (followed-files.ts);
 * - a log's pid is put on its series only when that process's real uid is
 *   the file's owner (not_owner otherwise: a log named after another user's
 *   process credits nothing to it); a .prom file's own slurm_job_id is never
 *   believed; a user's folder name gives no job (locate.ts);
 * - [limits] bounds what one user's files cost: files_per_user and files
 *   followed, read_bytes a collection with a share per user, a backlog past
 *   BACKLOG_READS x read_bytes skipped to its end, and descriptors held only
 *   by files being read (MAX_OPEN at most between collections), all in
 *   followed-files.ts; series_per_communicator (aggregate.ts); and log lines
 *   per folder (log_lines_per_minute), each problem said once (complaints.ts).
 */
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import type { Emitter } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import { BudgetLedger, DEFAULT_LIMITS, type BudgetName, type Limits } from '../../src/core/limits.js';
import type { Logger } from '../../src/core/log.js';
import type { Plugin, PluginContext, PluginManifest } from '../../src/core/plugin.js';
import { clip, printable } from '../../src/core/printable.js';
import { processOwner } from '../../src/core/user-file.js';
import { processStart } from '../../src/core/process-start.js';
import { Aggregator, type RecordSource } from './aggregate.js';
import { Complaints, otherHostNames } from './complaints.js';
import { NCCL_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import { FollowedFiles, MAX_LINE, type FollowedLog } from './followed-files.js';
import { jobFor, Locator } from './locate.js';
import { bandwidth } from '../../src/nccl/bandwidth.js';
import { parseInspectorLine, type InspectorRecord } from './parse.js';
import type { TailResult } from './tail.js';

const REJECTED = metric('l9gpu.nccl.lines.rejected');

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
  private readonly complaints: Complaints;
  private readonly files: FollowedFiles;
  private readonly agg: Aggregator;
  private readonly limits: Limits;
  private readonly budgets: BudgetLedger;
  private rejected = 0;
  private readonly start = Date.now();

  constructor(
    private readonly o: NcclOptions,
    private readonly log: Logger,
    guard: { limits?: Limits; budgets?: BudgetLedger } = {},
  ) {
    this.limits = guard.limits ?? DEFAULT_LIMITS;
    this.budgets = guard.budgets ?? new BudgetLedger(log);
    this.complaints = new Complaints(log, this.budgets, this.limits);
    this.files = new FollowedFiles(o, this.limits, this.budgets, this.complaints);
    this.agg = new Aggregator({
      maxSeries: o.maxSeries,
      window: o.window,
      perCommunicator: this.limits.seriesPerCommunicator,
      onLimit: (user, comm) =>
        this.budgets.hit(
          'series_per_communicator',
          user,
          `nccl: communicator ${printable(clip(comm, 40))} has ${this.limits.seriesPerCommunicator} series; records of new ones dropped`,
        ),
      perUser: this.limits.ncclSeriesPerUser,
      onUserLimit: (user) =>
        this.budgets.hit(
          'nccl_series_per_user',
          user,
          `nccl: the files of uid ${user} have ${this.limits.ncclSeriesPerUser} series; records of new ones dropped`,
        ),
      onFull: (user) =>
        this.budgets.hit('nccl_max_series', user, `nccl: ${o.maxSeries} series on the node (max_series); records of new ones dropped`),
    });
  }

  async collect(out: Emitter): Promise<void> {
    const now = out.time ?? Date.now();
    this.complaints.begin();
    this.files.follow(now);
    await this.files.read(now, (f, r) => this.take(f, r, now));
    this.files.park(now);
    for (const [key, e] of this.files.proms) {
      const { p, file } = e;
      const here = p.poll(
        (rec, jobId) => this.agg.add(rec, { ...(jobId ? { jobId } : {}), gpuUuid: p.gpuUuid, noPid: true, user: e.user }, now),
        (why) => {
          this.rejected++;
          const s = this.complaints.note(file.folder, e.user);
          s.rejected++;
          s.first ??= why;
        },
        (r) => this.files.refuse(file, e.user, r.refused as BudgetName, r.detail),
      );
      if (!here) this.files.proms.delete(key);
      else p.emit(out, now);
    }
    this.files.tellOtherHosts();
    this.complaints.tell();
    // an ended rank's series outlive it; its pid, taken by another process since, would credit them to that one's job
    this.agg.forgetReused((pid) => processStart(pid, this.o.proc));
    if (this.agg.dropped)
      out.unreadable(
        'nccl series',
        `more than ${this.o.maxSeries} series (max_series): records of new ones dropped (${this.agg.dropped} so far)`,
      );
    this.agg.emit(out, now);
    out.add(REJECTED, this.rejected, {}, this.start);
  }

  private take(f: FollowedLog, r: TailResult, now: number): void {
    for (const ev of r.events) {
      if (ev === 'truncated' || ev === 'rewritten' || ev === 'rotated') f.lineNo = 0;
      // another file under the name: whose it is, and whose process, is worked out again
      if (ev === 'rotated') f.src = undefined;
      this.log.debug('nccl: inspector log', { file: printable(f.file.path), event: ev });
    }
    this.rejected += r.skipped;
    if (r.skipped) {
      const s = this.complaints.note(f.file.folder, f.user);
      s.rejected += r.skipped;
      s.first ??= `${r.skipped} line(s) longer than ${MAX_LINE} bytes skipped`;
    }
    if (!r.lines.length) return;
    const src = this.sourceOf(f);
    for (const line of r.lines) {
      f.lineNo++;
      if (!line) continue;
      let rec: InspectorRecord;
      try {
        rec = parseInspectorLine(line, `${f.file.path}:${f.lineNo}`);
      } catch (e) {
        this.rejected++;
        const s = this.complaints.note(f.file.folder, f.user);
        s.rejected++;
        s.first ??= (e as Error).message;
        continue;
      }
      this.check(rec, f.file.path);
      this.agg.add(rec, src, now);
    }
  }

  /**
   * Who a log's records are credited to. Its pid (from its name) only when
   * that process's real uid owns the file: a user naming a log after another
   * user's process credits nothing to it. A root-owned file (in a root
   * folder: the owner rule) is believed as before.
   */
  private sourceOf(f: FollowedLog): RecordSource {
    const uid = f.tail.uid;
    const pid = f.file.pid;
    if (f.src?.pidStart !== undefined && pid !== undefined) {
      const p = processOwner(pid, this.o.proc);
      // the process ended: its series keep its pid (the job is found while its cgroup lasts); the pid taken by
      // another process: what was credited to it is forgotten, and the file worked out again
      if (p && p.start !== f.src.pidStart) {
        this.agg.forgetPid(pid);
        f.src = undefined;
      }
    }
    if (f.src) return f.src;
    const jobId = uid === undefined ? undefined : jobFor(f.file.folder, uid);
    const base = { ...(jobId ? { jobId } : {}), user: f.user };
    if (pid === undefined || uid === undefined) return (f.src = { ...base, noPid: true });
    if (uid === 0) return (f.src = { ...base, pid, pidStart: processStart(pid, this.o.proc) });
    const p = processOwner(pid, this.o.proc);
    if (p && p.uid === uid) return (f.src = { ...base, pid, pidStart: p.start });
    if (p) {
      this.budgets.hit(
        'not_owner',
        f.user,
        `nccl: a rank log named after pid ${pid}, a process of uid ${p.uid}, is owned by uid ${uid}: ` +
          `its figures are credited to no process`,
      );
      this.complaints.tellOnce(
        f.user,
        'not_owner_pid',
        f.file.folder.path,
        "nccl: rank logs named after other users' processes: credited to no process",
        { folder: printable(f.file.folder.path), user: f.user, pid, pid_uid: p.uid },
      );
    }
    return (f.src = { ...base, noPid: true });
  }

  /** The file's own bandwidth against ours: a disagreement beyond its 6 decimals means the formula or the fields are not what we think. */
  private check(r: InspectorRecord, path: string): void {
    if (r.busBw === null || r.busBw === 0) return;
    const ours = bandwidth(r.op, r.bytes, r.execS, r.nRanks);
    if (!ours) return;
    // the file prints GB/s with 6 decimals: 0.5e-6 GB/s of rounding, plus a relative hair for the double arithmetic
    if (Math.abs(ours.busBw - r.busBw) > 500 + 1e-9 * r.busBw) {
      const a = this.complaints.rate.allow(`bw\0${dirname(path)}`);
      if (!a.ok) return;
      this.log.once(
        `nccl-bw-${dirname(path)}`,
        'warn',
        "nccl: the Inspector's bus bandwidth differs from the one recomputed from size, time and ranks; the recomputed one is used",
        {
          file: printable(path),
          collective: printable(clip(r.op, 64)),
          ranks: r.nRanks,
          file_gbs: r.busBw / 1e9,
          recomputed_gbs: ours.busBw / 1e9,
        },
      );
    }
  }

  /** The folders of the last collection that could not be listed (doctor). */
  get unreached() {
    return this.files.unreached;
  }

  close(): void {
    this.files.close();
  }
}

export function ncclOptions(ctx: PluginContext): NcclOptions {
  const c = readSection(ctx.config, NCCL_SECTION);
  return {
    paths: c.paths,
    discover: c.discover,
    maxFileAgeMs: c.max_file_age * 1000,
    maxSeries: c.max_series,
    window: c.window,
    hostNames: [ctx.hostName, hostname()],
  };
}

export const ncclPlugin: PluginManifest = {
  name: 'nccl',
  description: NCCL_SECTION.description,
  section: NCCL_SECTION,
  metrics: [
    'nccl.operations',
    'nccl.bytes',
    'nccl.exec.time',
    'nccl.bandwidth.algorithm',
    'nccl.bandwidth.bus',
    'nccl.interval.bandwidth.bus',
    'nccl.interval.exec.time',
    'nccl.rank.slowdown',
    'nccl.rank.straggler',
    'l9gpu.nccl.lines.rejected',
  ],
  reportsGpus: false,
  // nothing to read is a readdir a tick: on by default, it finds the jobs that enable the Inspector
  auto: 'always',
  create: (ctx) => new NcclPlugin(ncclOptions(ctx), ctx.log, { limits: ctx.limits, budgets: ctx.budgets }),
  probe: async (ctx) => {
    const o = ncclOptions(ctx);
    const loc = new Locator({ paths: o.paths, discover: o.discover, hostNames: o.hostNames });
    const files = loc.files(Date.now());
    const logs = files.filter((f) => f.kind === 'log').length;
    const other = loc.otherHosts;
    const others = other.length
      ? `; ${other.reduce((n, f) => n + f.logs, 0)} rank log(s) of other hosts not read ` +
        `(${otherHostNames([...new Set(other.flatMap((f) => f.hosts))].slice(0, 3))}; this node: ${[...loc.names].join(', ')}) in ` +
        `${other.length} folder(s): ${other
          .slice(0, 3)
          .map((f) => `${printable(f.path)} (${f.logs})`)
          .join(', ')}${other.length > 3 ? ', ...' : ''}`
      : '';
    const found =
      (files.length
        ? `${logs} rank log(s) and ${files.length - logs} .prom file(s) in ` +
          `${o.paths.join(', ')}${o.discover ? ' and the folders of running Inspector processes' : ''}`
        : `no Inspector output now (${o.paths.join(', ')}${o.discover ? ', and running processes with NCCL_INSPECTOR_ENABLE=1' : ''})`) +
      others;
    // a discovered folder not reachable from here: not there yet (the Inspector makes it at its first dump), or
    // hidden (a mount namespace the daemon cannot see into, a link)
    const lost = loc.unreached.filter((u) => u.discovered);
    const hidden = lost.filter((u) => u.why !== 'gone' || u.detail !== 'ENOENT');
    if (!lost.length) return { ok: true, detail: found };
    const show = (l: typeof lost) =>
      l
        .slice(0, 3)
        .map((u) => `${printable(u.path)} (${u.why === 'gone' ? u.detail : `${u.why}: ${u.detail}`})`)
        .join(', ');
    return {
      // a failure only when the daemon cannot read what it should (EACCES, ...): a folder a user made a link is
      // said, but no user can make doctor fail
      ok: !lost.some((u) => u.why === 'gone' && u.detail !== 'ENOENT'),
      detail:
        `${found}; ${lost.length} discovered folder(s) cannot be reached: ` +
        `${show(hidden.length ? hidden : lost)}${lost.length > 3 ? ', ...' : ''}` +
        `${hidden.length ? '' : ' (not made yet: the Inspector makes its folder at its first dump)'}`,
    };
  },
};
