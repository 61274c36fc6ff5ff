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
 *   owner owns it (not_owner); each re-open is checked again;
 * - a log's pid is put on its series only when that process's real uid is
 *   the file's owner (not_owner otherwise: a log named after another user's
 *   process credits nothing to it); a .prom file's own slurm_job_id is never
 *   believed; a user's folder name gives no job (locate.ts);
 * - [limits] bounds what one user's files cost: files_per_user and files
 *   followed, read_bytes a collection with a share per user, a backlog past
 *   BACKLOG_READS x read_bytes skipped to its end, series_per_communicator, and
 *   log lines per folder (log_lines_per_minute); descriptors are held only
 *   by files being read (MAX_OPEN at most between collections).
 */
import { existsSync, lstatSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import type { Emitter } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import { BudgetLedger, DEFAULT_LIMITS, LogRate, type BudgetName, type Limits } from '../../src/core/limits.js';
import type { Logger } from '../../src/core/log.js';
import type { Plugin, PluginContext, PluginManifest } from '../../src/core/plugin.js';
import { clip, printable } from '../../src/core/printable.js';
import { openUserFile, ownerAllowed, processOwner } from '../../src/core/user-file.js';
import { processStart } from '../../src/core/process-start.js';
import { Aggregator, type RecordSource } from './aggregate.js';
import { NCCL_SECTION } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import { jobFor, Locator, processAllows, type InspectorFile, type InspectorFolder } from './locate.js';
import { bandwidth } from '../../src/nccl/bandwidth.js';
import { parseInspectorLine, type InspectorRecord } from './parse.js';
import { PromFile } from './prom.js';
import { FileTail, type TailResult } from './tail.js';

const REJECTED = metric('l9gpu.nccl.lines.rejected');

/** Bytes of one file read and folded at a time: what memory holds of a backlog. */
const CHUNK = 512 << 10;
/** A log not written for this long, its process gone, is closed. */
const RETIRE_IDLE_MS = 60_000;
/** Lines longer are no Inspector record (a verbose record with many channels is a few KiB). */
const MAX_LINE = 256 << 10;
/** A log with more unread bytes than this many collections' read_bytes is not caught up on: skipped to its end. */
const BACKLOG_READS = 16;
/** Descriptors kept between collections (the most recently written logs'); the rest are parked. */
const MAX_OPEN = 64;
/** A log with no new bytes for this long is parked (its descriptor closed). */
const PARK_IDLE_MS = 30_000;
/** Files remembered as refused or over a budget (by key): past it the memory starts again. */
const MAX_NOTED = 65_536;

interface FollowedLog {
  readonly tail: FileTail;
  readonly file: InspectorFile;
  /** The owner's uid, as the ledger names users. */
  readonly user: string;
  lineNo: number;
  /** Last time new bytes came. */
  active: number;
  /** Who the records are credited to, worked out for the open file's owner. */
  src?: RecordSource;
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

/** What a collection gathered to say, per folder: one line each (not one per file). */
interface Said {
  user: string;
  rejected: number;
  first?: string;
  skippedBytes: number;
}

export class NcclPlugin implements Plugin {
  private readonly locator: Locator;
  private readonly agg: Aggregator;
  private readonly logs = new Map<string, FollowedLog>();
  private readonly proms = new Map<string, { p: PromFile; user: string; file: InspectorFile }>();
  /** Files found too old to be this node's activity, by key: their mtime then. */
  private readonly stale = new Map<string, number>();
  /** Files refused or over a budget, by key: what they were then (counted once while they stay so). */
  private readonly noted = new Map<string, string>();
  /**
   * Files waiting for a place (over files_per_user or files), by key: whose, and their folder's mtime then. While
   * the folder is unchanged the name is what it was, and while its owner still has no place it is not lstat()ed
   * again: thousands of waiting names were thousands of lstat calls each collection.
   */
  private readonly waiting = new Map<string, { user: string; dirMtimeMs: number }>();
  /** Folders left out for being past their owner's budget, counted once each. */
  private readonly crowded = new Set<string>();
  /** (reason, folder) already said: a folder's hostile files are one line, not one per file. */
  private readonly told = new Set<string>();
  private readonly rate: LogRate;
  private readonly limits: Limits;
  private readonly budgets: BudgetLedger;
  private rejected = 0;
  private readonly start = Date.now();
  private said = new Map<string, Said>();

  constructor(
    private readonly o: NcclOptions,
    private readonly log: Logger,
    guard: { limits?: Limits; budgets?: BudgetLedger } = {},
  ) {
    this.limits = guard.limits ?? DEFAULT_LIMITS;
    this.budgets = guard.budgets ?? new BudgetLedger(log);
    this.rate = new LogRate(this.limits.logLinesPerMinute);
    this.locator = new Locator({
      paths: o.paths,
      discover: o.discover,
      hostNames: o.hostNames,
      ...(o.proc ? { proc: o.proc } : {}),
      // each folder holds a file at least: a user's folders past their files' budget are nothing to read
      dirsPerUser: this.limits.filesPerUser,
      // a user's folder holds only its owner's files, so no more than 4 x files_per_user of them are worth a look; a
      // root folder (shared, sticky) is anyone's: 4 x files, what the node follows in all
      filesPerDir: { user: 4 * this.limits.filesPerUser, root: 4 * this.limits.files },
      onFolderFull: (path, uid, left) => {
        if (this.crowded.has(`names\0${path}`)) return;
        if (this.crowded.size >= MAX_NOTED) this.crowded.clear();
        this.crowded.add(`names\0${path}`);
        this.budgets.hit(
          uid === 0 ? 'files' : 'files_per_user',
          String(uid),
          `nccl: a folder with ${left} more Inspector files than are looked at (4 x [limits] ${uid === 0 ? 'files' : 'files_per_user'}): ` +
            `${printable(path)}`,
          left,
        );
      },
      onCrowded: (path, uid) => {
        if (this.crowded.has(path)) return;
        if (this.crowded.size >= MAX_NOTED) this.crowded.clear();
        this.crowded.add(path);
        this.budgets.hit(
          'files_per_user',
          String(uid),
          `nccl: more than ${this.limits.filesPerUser} Inspector folders of uid ${uid} in one place; ` +
            `the rest are not read (first: ${printable(path)})`,
        );
      },
    });
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
    this.said = new Map();
    this.follow(now);
    let budget = this.limits.readBytes;
    const users = new Set([...this.logs.values()].map((f) => f.user));
    // each user's share first, so that one user's backlog does not keep the others' files waiting; what is left of
    // the budget then goes to whoever still has bytes to read
    let share = Math.max(CHUNK, Math.floor(budget / Math.max(1, users.size)));
    const used = new Map<string, number>();
    const maxBacklog = BACKLOG_READS * this.limits.readBytes;
    // a chunk of each file in turn, folded before the next is read: memory holds one chunk of lines whatever the
    // backlog, and a file with a backlog of gigabytes does not keep the others waiting
    let active = [...this.logs];
    let held: typeof active = [];
    while ((active.length || held.length) && budget > 0) {
      if (!active.length) {
        active = held;
        held = [];
        share = Infinity;
      }
      const next: typeof active = [];
      for (const [key, f] of active) {
        if ((used.get(f.user) ?? 0) >= share) {
          held.push([key, f]);
          continue;
        }
        const r = f.tail.poll();
        budget -= r.read;
        used.set(f.user, (used.get(f.user) ?? 0) + r.read);
        if (r.read) f.active = now;
        if (r.refused) {
          this.refuse(f.file, f.user, r.refused.why, r.refused.detail);
          this.logs.delete(key);
          continue;
        }
        this.take(f, r, now);
        if (r.events.includes('deleted')) {
          f.tail.close();
          this.logs.delete(key);
          continue;
        }
        const lag = f.tail.lag;
        if (lag > maxBacklog) {
          const n = f.tail.skipToEnd();
          this.note(f.file.folder, f.user).skippedBytes += n;
          this.budgets.hit(
            'read_bytes',
            f.user,
            `nccl: a log with ${n} bytes unread (more than ${BACKLOG_READS} x [limits] read_bytes) ` +
              `skipped to its end: ${printable(f.file.path)}`,
          );
        } else if (lag > 0) next.push([key, f]);
        else if (r.read === 0) this.retire(key, f, now);
        if (budget <= 0) break;
      }
      active = next;
      // a backlog: let the event loop breathe between rounds
      if (active.length || held.length) await new Promise((res) => setImmediate(res));
    }
    this.park(now);
    for (const [key, e] of this.proms) {
      const { p, file } = e;
      const here = p.poll(
        (rec, jobId) => this.agg.add(rec, { ...(jobId ? { jobId } : {}), gpuUuid: p.gpuUuid, noPid: true, user: e.user }, now),
        (why) => {
          this.rejected++;
          const s = this.note(file.folder, e.user);
          s.rejected++;
          s.first ??= why;
        },
        (r) => this.refuse(file, e.user, r.refused as BudgetName, r.detail),
      );
      if (!here) this.proms.delete(key);
      else p.emit(out, now);
    }
    this.tellOtherHosts();
    this.tell();
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

  /** What the collection has to say about a folder. */
  private note(folder: InspectorFolder, user: string): Said {
    let s = this.said.get(folder.path);
    if (!s) this.said.set(folder.path, (s = { user, rejected: 0, skippedBytes: 0 }));
    return s;
  }

  /** One line per folder with something to say, at most log_lines_per_minute a minute for each. */
  private tell(): void {
    for (const [folder, s] of this.said) {
      if (!s.rejected && !s.skippedBytes) continue;
      const a = this.rate.allow(folder);
      if (!a.ok) {
        this.budgets.hit(
          'log_lines_per_minute',
          s.user,
          `nccl: more than ${this.limits.logLinesPerMinute} lines a minute about ${printable(folder)}: the rest held back`,
        );
        continue;
      }
      this.log.warn('nccl: inspector output not read', {
        folder: printable(folder),
        ...(s.rejected ? { lines_rejected: s.rejected, first: printable(clip(s.first ?? '', 200)) } : {}),
        ...(s.skippedBytes ? { bytes_skipped: s.skippedBytes } : {}),
        ...(a.held ? { lines_held_back: a.held } : {}),
      });
    }
  }

  /**
   * Files of other hosts (a folder the job's nodes share: each node reads its own ranks) are not read: said once per
   * folder, with a few of their hosts and this node's names, so that a node whose name its files do not carry is seen.
   */
  private tellOtherHosts(): void {
    const by = new Map<string, { uid: number; logs: number; proms: number; hosts: readonly string[] }>();
    for (const o of this.locator.otherHosts) by.set(o.path, { uid: o.uid, logs: o.logs, proms: 0, hosts: o.hosts });
    for (const { p, file } of this.proms.values()) {
      if (!p.foreign) continue;
      let f = by.get(file.folder.path);
      if (!f) by.set(file.folder.path, (f = { uid: file.folder.uid, logs: 0, proms: 0, hosts: [] }));
      f.proms++;
    }
    for (const [folder, f] of by) {
      this.tellOnce(
        String(f.uid),
        'other_hosts',
        folder,
        'nccl: Inspector files of other hosts in a folder are not read (each node reads its own)',
        {
          folder: printable(folder),
          ...(f.logs ? { rank_logs: f.logs, hosts: otherHostNames(f.hosts) } : {}),
          ...(f.proms ? { prom_files: f.proms } : {}),
          this_node: [...this.locator.names].join(','),
        },
      );
    }
  }

  /** A file not to be read: counted once while it stays what it is, and said once per folder and reason. */
  private refuse(f: InspectorFile, user: string, why: BudgetName, detail: string, mark = why): void {
    this.budgets.hit(why, user, `nccl: ${f.kind === 'log' ? 'a rank log' : 'a .prom file'} not read (${detail}): ${printable(f.path)}`);
    if (this.noted.size >= MAX_NOTED) this.noted.clear();
    this.noted.set(f.key, mark);
    this.tellOnce(user, why, f.folder.path, `nccl: files in a folder not read: ${why}`, {
      folder: printable(f.folder.path),
      user,
      detail: printable(detail),
    });
  }

  /** Once per (reason, folder), and at most log_lines_per_minute a minute per user: one user's thousands of folders are not thousands of
   * lines. */
  private tellOnce(user: string, why: string, folder: string, msg: string, fields: Record<string, unknown>): void {
    const k = `${why}\0${folder}`;
    if (this.told.has(k)) return;
    const a = this.rate.allow(`user\0${user}`);
    if (!a.ok) {
      this.budgets.hit(
        'log_lines_per_minute',
        user,
        `nccl: more than ${this.limits.logLinesPerMinute} lines a minute about the folders of uid ${user}: the rest held back`,
      );
      return;
    }
    if (this.told.size >= 4096) this.told.clear();
    this.told.add(k);
    this.log.warn(msg, { ...fields, ...(a.held ? { lines_held_back: a.held } : {}) });
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
      const s = this.note(f.file.folder, f.user);
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
        const s = this.note(f.file.folder, f.user);
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
      this.tellOnce(
        f.user,
        'not_owner_pid',
        f.file.folder.path,
        "nccl: rank logs named after other users' processes: credited to no process",
        { folder: printable(f.file.folder.path), user: f.user, pid, pid_uid: p.uid },
      );
    }
    return (f.src = { ...base, noPid: true });
  }

  /**
   * A log whose process has ended and which has been read to its end is
   * closed (the Inspector never deletes its logs: an ended job's would hold a
   * descriptor for the daemon's life) and not read again unless a new process
   * rewrites it (its time changes: fopen "w" starts it anew). A log whose pid
   * is not its owner's process is retired on its time alone.
   */
  private retire(key: string, f: FollowedLog, now: number): void {
    const pid = f.src && !f.src.noPid ? f.file.pid : undefined;
    if (pid !== undefined && existsSync(`${this.o.proc ?? '/proc'}/${pid}`)) return;
    const st = lstatSync(f.file.path, { throwIfNoEntry: false });
    if (!st) return;
    if (now - st.mtimeMs < RETIRE_IDLE_MS) return;
    f.tail.close();
    this.logs.delete(key);
    this.stale.set(key, st.mtimeMs);
  }

  /** Descriptors between collections: the idle logs' closed, and at most MAX_OPEN of the others. */
  private park(now: number): void {
    const open = [...this.logs.values()].filter((f) => f.tail.isOpen).sort((a, b) => b.active - a.active);
    for (let i = 0; i < open.length; i++) if (i >= MAX_OPEN || now - open[i]!.active > PARK_IDLE_MS) open[i]!.tail.park();
  }

  /**
   * New files are followed from their start, within the budgets; a file last
   * written before max_file_age when first found is an ended job's. What the
   * name is now is lstat()ed to leave out links, FIFOs and other users' files
   * without opening them (the open checks again: this only spares the work).
   */
  private follow(now: number): void {
    const files = this.locator.files(now);
    // forget what is gone: the maps hold at most the files there are
    if (this.stale.size || this.noted.size || this.waiting.size) {
      const there = new Set(files.map((f) => f.key));
      for (const k of this.stale.keys()) if (!there.has(k)) this.stale.delete(k);
      for (const k of this.noted.keys()) if (!there.has(k)) this.noted.delete(k);
      for (const k of this.waiting.keys()) if (!there.has(k)) this.waiting.delete(k);
    }
    const perUser = new Map<string, number>();
    let followed = this.logs.size + this.proms.size;
    for (const f of this.logs.values()) perUser.set(f.user, (perUser.get(f.user) ?? 0) + 1);
    for (const f of this.proms.values()) perUser.set(f.user, (perUser.get(f.user) ?? 0) + 1);
    for (const f of files) {
      if (this.logs.has(f.key) || this.proms.has(f.key)) continue;
      const w = this.waiting.get(f.key);
      if (
        w &&
        w.dirMtimeMs === f.folder.mtimeMs &&
        ((perUser.get(w.user) ?? 0) >= this.limits.filesPerUser || followed >= this.limits.files)
      )
        continue;
      this.waiting.delete(f.key);
      const st = lstatSync(f.path, { throwIfNoEntry: false });
      if (!st) continue;
      const user = String(st.uid);
      const was = this.noted.get(f.key);
      if (!st.isFile()) {
        if (was !== 'not_regular_file')
          this.refuse(f, user, 'not_regular_file', st.isSymbolicLink() ? 'a symbolic link' : st.isFIFO() ? 'a FIFO' : 'not a regular file');
        continue;
      }
      const byProcess = !processAllows(f.folder, st.uid);
      if (!ownerAllowed(st.uid, st.nlink, f.folder.uid) || byProcess) {
        if (was !== 'not_owner')
          this.refuse(
            f,
            user,
            'not_owner',
            `owned by uid ${st.uid}, in a folder of uid ${f.folder.uid}${
              byProcess ? ` named only by processes of uid ` + `${[...new Set(f.folder.procs!.map((p) => p.uid))].join(', ')}` : ''
            }`,
          );
        continue;
      }
      if (this.stale.get(f.key) === st.mtimeMs) continue;
      if (now - st.mtimeMs > this.o.maxFileAgeMs) {
        this.stale.set(f.key, st.mtimeMs);
        continue;
      }
      const mine = perUser.get(user) ?? 0;
      const over: BudgetName | undefined =
        mine >= this.limits.filesPerUser ? 'files_per_user' : followed >= this.limits.files ? 'files' : undefined;
      if (over) {
        // counted once per file while it waits; followed when a place comes free
        if (was !== over) {
          this.budgets.hit(
            over,
            user,
            `nccl: more than ${over === 'files' ? this.limits.files : this.limits.filesPerUser} ` +
              `Inspector files${over === 'files' ? ' on the node' : ` of uid ${user}`}; the rest are not ` +
              `read (first in ${printable(dirname(f.path))})`,
          );
          if (this.noted.size >= MAX_NOTED) this.noted.clear();
          this.noted.set(f.key, over);
        }
        if (this.waiting.size >= MAX_NOTED) this.waiting.clear();
        this.waiting.set(f.key, { user, dirMtimeMs: f.folder.mtimeMs });
        continue;
      }
      this.noted.delete(f.key);
      this.stale.delete(f.key);
      perUser.set(user, mine + 1);
      followed++;
      // every open of the name (the first, and after a rotation or park) wants a regular file of this same owner
      const open = (p: string) => openUserFile(p, { folderUid: f.folder.uid, uid: st.uid });
      if (f.kind === 'log')
        this.logs.set(f.key, {
          tail: new FileTail(f.path, { maxLine: MAX_LINE, maxRead: CHUNK, open }),
          file: f,
          user,
          lineNo: 0,
          active: now,
        });
      else {
        const onDropped = (n: number) =>
          this.budgets.hit(
            'series_per_communicator',
            user,
            `nccl: a .prom file with more than ${this.limits.seriesPerCommunicator} samples; the rest dropped: ${printable(f.path)}`,
            n,
          );
        this.proms.set(f.key, {
          p: new PromFile(
            f.path,
            f.gpuUuid!,
            this.locator.names,
            jobFor(f.folder, st.uid),
            open,
            this.limits.seriesPerCommunicator,
            onDropped,
          ),
          user,
          file: f,
        });
      }
    }
  }

  /** The file's own bandwidth against ours: a disagreement beyond its 6 decimals means the formula or the fields are not what we think. */
  private check(r: InspectorRecord, path: string): void {
    if (r.busBw === null || r.busBw === 0) return;
    const ours = bandwidth(r.op, r.bytes, r.execS, r.nRanks);
    if (!ours) return;
    // the file prints GB/s with 6 decimals: 0.5e-6 GB/s of rounding, plus a relative hair for the double arithmetic
    if (Math.abs(ours.busBw - r.busBw) > 500 + 1e-9 * r.busBw) {
      const a = this.rate.allow(`bw\0${dirname(path)}`);
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
    return this.locator.unreached;
  }

  close(): void {
    for (const f of this.logs.values()) f.tail.close();
    this.logs.clear();
  }
}

/** A few host names from file names (a user's text), for a line. */
const otherHostNames = (hosts: readonly string[]) => hosts.map((h) => printable(clip(h, 64))).join(',');

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
        `${show(hidden.length ? hidden : lost)}${lost.length > 3 ? ', ...' : ''}${hidden.length ? '' : ' (not made yet: the Inspector makes its folder at its first dump)'}`,
    };
  },
};
