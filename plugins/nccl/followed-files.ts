/**
 * The Inspector files this node follows: found by locate.ts, read by tail.ts (logs) or prom.ts (.prom files), and
 * forgotten when they go. The files are users' and the daemon is root, so what a user's files may cost (files
 * followed, bytes read per collection, descriptors held, names looked at) is bounded here, where the files are
 * taken on, before any of their bytes reach a parser.
 */
import { existsSync, lstatSync } from 'node:fs';
import { dirname } from 'node:path';
import type { BudgetLedger, BudgetName, Limits } from '../../src/core/limits.js';
import { printable } from '../../src/core/printable.js';
import { openUserFile, ownerAllowed } from '../../src/core/user-file.js';
import type { RecordSource } from './aggregate.js';
import { MAX_NOTED, otherHostNames, type Complaints } from './complaints.js';
import { jobFor, Locator, processAllows, type InspectorFile } from './locate.js';
import { PromFile } from './prom.js';
import { FileTail, type TailResult } from './tail.js';

/** Bytes of one file read and folded at a time: what memory holds of a backlog. */
const CHUNK = 512 << 10;
/** A log not written for this long, its process gone, is closed. */
const RETIRE_IDLE_MS = 60_000;
/** Lines longer are no Inspector record (a verbose record with many channels is a few KiB). */
export const MAX_LINE = 256 << 10;
/** A log with more unread bytes than this many collections' read_bytes is not caught up on: skipped to its end. */
const BACKLOG_READS = 16;
/** Descriptors kept between collections (the most recently written logs'); the rest are parked. */
const MAX_OPEN = 64;
/** A log with no new bytes for this long is parked (its descriptor closed). */
const PARK_IDLE_MS = 30_000;

export interface FollowedLog {
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

export interface FollowedProm {
  p: PromFile;
  user: string;
  file: InspectorFile;
}

/** The part of the plugin's options that following reads (NcclOptions is index.ts's: importing it here would be a loop). */
export interface FollowOptions {
  readonly paths: readonly string[];
  readonly discover: boolean;
  readonly maxFileAgeMs: number;
  readonly hostNames: readonly string[];
  readonly proc?: string;
}

export class FollowedFiles {
  private readonly locator: Locator;
  readonly logs = new Map<string, FollowedLog>();
  readonly proms = new Map<string, FollowedProm>();
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

  constructor(
    private readonly o: FollowOptions,
    private readonly limits: Limits,
    private readonly budgets: BudgetLedger,
    private readonly complaints: Complaints,
  ) {
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
        if (!this.complaints.firstCrowded(`names\0${path}`)) return;
        this.budgets.hit(
          uid === 0 ? 'files' : 'files_per_user',
          String(uid),
          `nccl: a folder with ${left} more Inspector files than are looked at (4 x [limits] ${uid === 0 ? 'files' : 'files_per_user'}): ` +
            `${printable(path)}`,
          left,
        );
      },
      onCrowded: (path, uid) => {
        if (!this.complaints.firstCrowded(path)) return;
        this.budgets.hit(
          'files_per_user',
          String(uid),
          `nccl: more than ${this.limits.filesPerUser} Inspector folders of uid ${uid} in one place; ` +
            `the rest are not read (first: ${printable(path)})`,
        );
      },
    });
  }

  /**
   * The followed logs' new lines, up to read_bytes, each log's given to take as it is read. A chunk of each file in
   * turn, folded before the next is read: memory holds one chunk of lines whatever the backlog, and a file with a
   * backlog of gigabytes does not keep the others waiting.
   */
  async read(now: number, take: (f: FollowedLog, r: TailResult) => void): Promise<void> {
    let budget = this.limits.readBytes;
    const users = new Set([...this.logs.values()].map((f) => f.user));
    // each user's share first, so that one user's backlog does not keep the others' files waiting; what is left of
    // the budget then goes to whoever still has bytes to read
    let share = Math.max(CHUNK, Math.floor(budget / Math.max(1, users.size)));
    const used = new Map<string, number>();
    const maxBacklog = BACKLOG_READS * this.limits.readBytes;
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
        take(f, r);
        if (r.events.includes('deleted')) {
          f.tail.close();
          this.logs.delete(key);
          continue;
        }
        const lag = f.tail.lag;
        if (lag > maxBacklog) {
          const n = f.tail.skipToEnd();
          this.complaints.note(f.file.folder, f.user).skippedBytes += n;
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
  }

  /**
   * Files of other hosts (a folder the job's nodes share: each node reads its own ranks) are not read: said once per
   * folder, with a few of their hosts and this node's names, so that a node whose name its files do not carry is seen.
   */
  tellOtherHosts(): void {
    const by = new Map<string, { uid: number; logs: number; proms: number; hosts: readonly string[] }>();
    for (const o of this.locator.otherHosts) by.set(o.path, { uid: o.uid, logs: o.logs, proms: 0, hosts: o.hosts });
    for (const { p, file } of this.proms.values()) {
      if (!p.foreign) continue;
      let f = by.get(file.folder.path);
      if (!f) by.set(file.folder.path, (f = { uid: file.folder.uid, logs: 0, proms: 0, hosts: [] }));
      f.proms++;
    }
    for (const [folder, f] of by) {
      this.complaints.tellOnce(
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
  refuse(f: InspectorFile, user: string, why: BudgetName, detail: string, mark = why): void {
    this.budgets.hit(why, user, `nccl: ${f.kind === 'log' ? 'a rank log' : 'a .prom file'} not read (${detail}): ${printable(f.path)}`);
    if (this.noted.size >= MAX_NOTED) this.noted.clear();
    this.noted.set(f.key, mark);
    this.complaints.tellOnce(user, why, f.folder.path, `nccl: files in a folder not read: ${why}`, {
      folder: printable(f.folder.path),
      user,
      detail: printable(detail),
    });
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
  park(now: number): void {
    const open = [...this.logs.values()].filter((f) => f.tail.isOpen).sort((a, b) => b.active - a.active);
    for (let i = 0; i < open.length; i++) if (i >= MAX_OPEN || now - open[i]!.active > PARK_IDLE_MS) open[i]!.tail.park();
  }

  /**
   * New files are followed from their start, within the budgets; a file last
   * written before max_file_age when first found is an ended job's. What the
   * name is now is lstat()ed to leave out links, FIFOs and other users' files
   * without opening them (the open checks again: this only spares the work).
   */
  follow(now: number): void {
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

  /** The folders of the last collection that could not be listed (doctor). */
  get unreached() {
    return this.locator.unreached;
  }

  close(): void {
    for (const f of this.logs.values()) f.tail.close();
    this.logs.clear();
  }
}
