/**
 * Where the Inspector's files are on this node: the configured folders
 * (globs in their last parts), and, with discovery on, the dump folder of
 * every running process that enabled the Inspector, as the Inspector itself
 * picks it (NCCL_INSPECTOR_DUMP_DIR, else nccl-inspector-<SLURM_JOBID> or
 * nccl-inspector-unknown-jobid, relative to the process's working directory).
 *
 * A folder's files: <hostname>-pid<pid>.log (one per process, JSON lines)
 * and nccl_inspector_metrics_<uuid>.prom (one per GPU). The folder may be on a
 * filesystem every node of a job shares: a log named for another host is not
 * read (each node reads its own ranks), nor a .prom file another node wrote.
 *
 * Folders are users': each is listed through a descriptor of the folder
 * itself (user-file.ts: its last part no link), and one folder reached by two
 * paths (a glob and a process's view of it) is read once. A discovered
 * process's folder is read through /proc/<pid>/root or /proc/<pid>/cwd when
 * the process lives in another mount namespace (a container; a PrivateTmp
 * /tmp), since the path it named means something else from here.
 *
 * What a folder says about its job is trusted only as far as who made it: a
 * root folder's name (nccl-inspector-<id>) as before; in a user's folder only
 * the SLURM_JOB_ID of a discovered process of that same user, never the
 * folder's name (anyone can name a folder after anyone's job).
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { processStart } from '../../src/core/process-start.js';
import { listUserDir, processOwner, type Refusal } from '../../src/core/user-file.js';

/** A followed folder as listed this collection. */
export interface InspectorFolder {
  /** The path it was listed by (and its files are opened by). */
  readonly path: string;
  /** Its owner (fstat of the listed folder). */
  readonly uid: number;
  /** Its mtime then (fstat before the listing): a name added, removed or renamed changes it. */
  readonly mtimeMs: number;
  /** The job its owner's files are credited to when no process says better: see the module's note. */
  jobId?: string;
  /**
   * Every discovered process that names the folder: its uid and job. All of
   * them, not one: a process of another user naming the folder too must not
   * take the owner's own processes' place.
   */
  procs?: readonly { readonly uid: number; readonly jobId?: string }[];
  /**
   * Named only by users' processes (no configured path): in a root folder only
   * the files of a naming process's uid are read, so that a process cannot
   * point root at a root folder (NCCL_INSPECTOR_DUMP_DIR=/root, or a link in
   * the path above).
   */
  readonly byProcess: boolean;
}

/** Whether a file of `uid` in the folder may be read, as far as the processes naming it go (ownerAllowed is the other half). */
export function processAllows(folder: InspectorFolder, uid: number): boolean {
  if (!folder.byProcess || !folder.procs) return true;
  // a user's folder holds only its owner's files (ownerAllowed): whoever named it, those are the owner's to give
  if (folder.uid !== 0 && uid === folder.uid) return true;
  return folder.procs.some((p) => p.uid === 0 || p.uid === uid);
}

/**
 * The job a file owned by `uid` in the folder is credited to: the folder's
 * when the file is its owner's; else only a job its discovered process gives,
 * when that process is the file owner's (a user's file in a root folder is
 * not that folder's job).
 */
export function jobFor(folder: InspectorFolder, uid: number): string | undefined {
  if (uid === folder.uid) return folder.jobId;
  return folder.procs?.find((p) => p.uid === uid && p.jobId)?.jobId;
}

export interface InspectorFile {
  readonly path: string;
  /** The folder's device and inode and the name: one file reached by two paths has one key. */
  readonly key: string;
  readonly kind: 'log' | 'prom';
  /** log: the writing process (from the name: the owner rule decides whether it is believed). */
  readonly pid?: number;
  /** prom: the GPU (NVML's spelling, GPU-<uuid>). */
  readonly gpuUuid?: string;
  readonly folder: InspectorFolder;
}

/** A folder that was to be read and was not (doctor says which, and why). */
/** A folder's rank logs named for other hosts (a filesystem the job's nodes share), as the last files() listed it. */
export interface OtherHosts {
  readonly path: string;
  /** The folder's owner: whose budget a line about it counts against. */
  readonly uid: number;
  logs: number;
  /** A few of the other hosts' names (file names: a user's text). */
  readonly hosts: string[];
}

export interface Unreached {
  readonly path: string;
  readonly why: Refusal;
  readonly detail: string;
  readonly discovered: boolean;
}

export interface LocateOptions {
  readonly paths: readonly string[];
  readonly discover: boolean;
  /** Names this node goes by ([host] name and the kernel's). */
  readonly hostNames: readonly string[];
  readonly proc?: string;
  /** Most folders followed (globs and discovery together). Default 4,096. */
  readonly maxDirs?: number;
  /** Most folders of one owner a glob gives (root's are not counted). Default: no bound. */
  readonly dirsPerUser?: number;
  /** A folder left out for dirsPerUser (each collection it still is). */
  onCrowded?(path: string, uid: number): void;
  /** Inspector files given of one folder: (a user's folder, root's). Default: no bound. */
  readonly filesPerDir?: { readonly user: number; readonly root: number };
  /** A folder with more Inspector names than filesPerDir (each collection it still has): how many were left out. */
  onFolderFull?(path: string, uid: number, left: number): void;
}

/** A discovered process's dump folder: the path to read it by, and who the process is. */
interface Discovered {
  path: string;
  /** In another mount namespace: the process's own view of it, and the same path from here (maybe another folder). */
  readonly other?: { readonly proc: string; readonly plain: string | undefined };
  readonly jobId?: string;
  readonly pid: number;
  readonly uid: number;
}

const DISCOVER_EVERY_MS = 10_000;
/** A discovered folder is followed this long after its last process was seen. */
const DISCOVERED_TTL_MS = 3_600_000;
const LOG = /^(.+)-pid(\d{1,10})\.log$/;
const PROM = /^nccl_inspector_metrics_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.prom$/;
const JOB_DIR = /^nccl-inspector-(\d{1,20})$/;

/** The names a host's own files may carry: each name given, and its first label (gethostname may or may not be the FQDN). */
export function hostNames(names: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const n of names) {
    if (!n) continue;
    out.add(n);
    out.add(n.split('.')[0]!);
  }
  return out;
}

function globPart(p: string): RegExp | undefined {
  if (!/[*?]/.test(p)) return undefined;
  return new RegExp(
    `^${p
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]')}$`,
  );
}

/**
 * The folders a path with * and ? in its parts names (no ** and no brackets:
 * a few levels of readdir). At most `perOwner` matches of one owner a level
 * (lstat: the owner of the name itself): one user's thousands of folders in
 * /tmp would otherwise fill `max` before anyone else's were looked at. Those
 * left out are given to `skipped`.
 */
export function expandGlob(pattern: string, max: number, perOwner = Infinity, skipped?: (path: string, uid: number) => void): string[] {
  let cur = [pattern.startsWith('/') ? '/' : '.'];
  for (const part of pattern.split('/').filter(Boolean)) {
    const re = globPart(part);
    const next: string[] = [];
    for (const dir of cur) {
      if (!re) {
        next.push(join(dir, part));
        continue;
      }
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      const owners = new Map<number, number>();
      for (const n of names) {
        if (!re.test(n) || next.length >= max) continue;
        const path = join(dir, n);
        if (perOwner !== Infinity) {
          const uid = lstatSync(path, { throwIfNoEntry: false })?.uid;
          if (uid === undefined) continue;
          const k = owners.get(uid) ?? 0;
          if (uid !== 0 && k >= perOwner) {
            skipped?.(path, uid);
            continue;
          }
          owners.set(uid, k + 1);
        }
        next.push(path);
      }
    }
    cur = next;
    if (!cur.length) break;
  }
  return cur;
}

export class Locator {
  private readonly hosts: Set<string>;
  private readonly proc: string;
  private readonly maxDirs: number;
  private lastDiscovery = -Infinity;
  /**
   * Discovered folder (the path it is read by) -> the processes that named it
   * at the last discovery that found any (kept after they end: a dump at exit
   * is still theirs), the uids that ever did (what the folder counts against),
   * when one last did, and whether the folder was ever there.
   */
  private readonly discovered = new Map<string, { procs: Discovered[]; uids: Set<number>; seen: number; existed: boolean }>();
  private readonly dirsPerUser: number;
  /** pid -> its start time and the folder its environment names (undefined: not an Inspector process). */
  private readonly looked = new Map<number, { start: string | undefined; d?: Discovered }>();
  /** This daemon's mount namespace (its inode): a process in another one is read through /proc/<pid>/root. */
  private readonly ownNs: number | undefined;
  /** The folders of the last files() that could not be listed. */
  unreached: Unreached[] = [];
  /** The folders of the last files() holding rank logs of other hosts, not read (each node reads its own). */
  otherHosts: OtherHosts[] = [];

  constructor(private readonly o: LocateOptions) {
    this.hosts = hostNames([...o.hostNames, hostname()]);
    this.proc = o.proc ?? '/proc';
    this.maxDirs = o.maxDirs ?? 4096;
    this.dirsPerUser = o.dirsPerUser ?? Infinity;
    this.ownNs = nsOf('/proc/self/ns/mnt');
  }

  get names(): ReadonlySet<string> {
    return this.hosts;
  }

  /** The Inspector files of this node in every followed folder. */
  files(now: number): InspectorFile[] {
    // the configured folders first: one also named by a process is still the admin's, with what the process says
    const dirs = new Map<string, Discovered[] | undefined>();
    for (const p of this.o.paths)
      for (const d of expandGlob(p, this.maxDirs, this.o.dirsPerUser, this.o.onCrowded))
        if (dirs.size < this.maxDirs) dirs.set(d, undefined);
    const globbed = new Set(dirs.keys());
    if (this.o.discover) {
      if (now - this.lastDiscovery >= DISCOVER_EVERY_MS) {
        this.lastDiscovery = now;
        this.discover(now);
      }
      for (const [d, v] of this.discovered) {
        if (now - v.seen > DISCOVERED_TTL_MS) this.discovered.delete(d);
        else if (dirs.size < this.maxDirs || dirs.has(d)) dirs.set(d, v.procs);
      }
    }
    const out: InspectorFile[] = [];
    const listed = new Map<string, InspectorFolder>();
    this.unreached = [];
    this.otherHosts = [];
    for (const [dir, proc] of dirs) {
      const l = listUserDir(dir);
      if ('refused' in l) {
        this.unreached.push({ path: dir, why: l.refused, detail: l.detail, discovered: proc !== undefined });
        continue;
      }
      const id = `${l.st.dev}/${l.st.ino}`;
      const had = listed.get(id);
      if (had) {
        // one folder by two paths (a glob, and a process's /proc/<pid>/root view of it): read once
        if (proc && !had.procs) {
          had.procs = proc.map(procOf);
          had.jobId = folderJob(had.path, had.uid, proc).jobId;
        }
        continue;
      }
      const folder: InspectorFolder = {
        path: dir,
        uid: l.st.uid,
        mtimeMs: l.st.mtimeMs,
        ...folderJob(dir, l.st.uid, proc),
        ...(proc ? { procs: proc.map(procOf) } : {}),
        byProcess: proc !== undefined && !globbed.has(dir),
      };
      listed.set(id, folder);
      // a folder of 300,000 names made every one an object (and an lstat) each collection: past what its files can
      // ever be followed for, names are only counted
      const room = this.o.filesPerDir ? (l.st.uid === 0 ? this.o.filesPerDir.root : this.o.filesPerDir.user) : Infinity;
      let given = 0;
      let left = 0;
      let other: OtherHosts | undefined;
      for (const n of l.names) {
        const log = LOG.exec(n);
        const prom = log ? undefined : PROM.exec(n);
        if (log && !this.hosts.has(log[1]!)) {
          if (!other) this.otherHosts.push((other = { path: dir, uid: l.st.uid, logs: 0, hosts: [] }));
          other.logs++;
          if (other.hosts.length < 3 && !other.hosts.includes(log[1]!)) other.hosts.push(log[1]!);
          continue;
        }
        if (!log && !prom) continue;
        if (given >= room) {
          left++;
          continue;
        }
        given++;
        // by name only: the plugin opens a file when it first sees it, not every file every collection
        out.push({
          path: join(dir, n),
          key: `${id}/${n}`,
          kind: log ? 'log' : 'prom',
          ...(log ? { pid: Number(log[2]) } : { gpuUuid: `GPU-${prom![1]}` }),
          folder,
        });
      }
      if (left) this.o.onFolderFull?.(dir, l.st.uid, left);
    }
    return out;
  }

  /** The dump folders of the running processes that enabled the Inspector (their environment read once per process). */
  private discover(now: number): void {
    let pids: number[];
    try {
      pids = readdirSync(this.proc)
        .filter((n) => /^\d+$/.test(n))
        .map(Number);
    } catch {
      return;
    }
    const alive = new Set(pids);
    for (const pid of this.looked.keys()) if (!alive.has(pid)) this.looked.delete(pid);
    // what each uid's folders count, so that one user's thousands of processes naming made-up folders cannot take
    // every place (maxDirs) from the other users' jobs
    const perUid = new Map<number, number>();
    for (const e of this.discovered.values()) for (const u of e.uids) perUid.set(u, (perUid.get(u) ?? 0) + 1);
    const fresh = new Map<string, Discovered[]>();
    for (const pid of pids) {
      const start = processStart(pid, this.proc);
      let l = this.looked.get(pid);
      if (!l || l.start !== start) {
        const d = this.dumpDirOf(pid);
        this.looked.set(pid, (l = { start, ...(d ? { d } : {}) }));
      }
      const d = l.d;
      if (!d) continue;
      if (d.other) d.path = viewOf(d.other);
      let e = this.discovered.get(d.path);
      if (!e?.uids.has(d.uid)) {
        const mine = perUid.get(d.uid) ?? 0;
        if ((d.uid !== 0 && mine >= this.dirsPerUser) || (!e && this.discovered.size >= this.maxDirs)) {
          this.o.onCrowded?.(d.path, d.uid);
          continue;
        }
        perUid.set(d.uid, mine + 1);
        if (!e) this.discovered.set(d.path, (e = { procs: [], uids: new Set(), seen: now, existed: false }));
        e.uids.add(d.uid);
      }
      e.seen = now;
      const f = fresh.get(d.path);
      if (f) f.push(d);
      else fresh.set(d.path, [d]);
    }
    for (const [path, e] of this.discovered) {
      const f = fresh.get(path);
      if (f) e.procs = f;
      e.existed ||= lstatSync(path, { throwIfNoEntry: false }) !== undefined;
      // no process names it any more and it was never made: nothing will ever be there to read
      if (!f && !e.existed) this.discovered.delete(path);
    }
  }

  private dumpDirOf(pid: number): Discovered | undefined {
    let env: string;
    try {
      env = readFileSync(`${this.proc}/${pid}/environ`, 'latin1');
    } catch {
      return undefined;
    }
    if (!env.includes('NCCL_INSPECTOR_ENABLE=')) return undefined;
    const vars = new Map<string, string>();
    for (const kv of env.split('\0')) {
      const eq = kv.indexOf('=');
      if (eq > 0) vars.set(kv.slice(0, eq), kv.slice(eq + 1));
    }
    if (vars.get('NCCL_INSPECTOR_ENABLE') !== '1') return undefined;
    const owner = processOwner(pid, this.proc);
    if (!owner) return undefined;
    // the Inspector reads SLURM_JOBID (atoi); SLURM_JOB_ID is the same
    const job = vars.get('SLURM_JOBID') ?? vars.get('SLURM_JOB_ID');
    const jobId = job && /^\d{1,20}$/.test(job) ? job : undefined;
    const rel = vars.get('NCCL_INSPECTOR_DUMP_DIR') || `nccl-inspector-${jobId ?? 'unknown-jobid'}`;
    const who = { pid, uid: owner.uid, ...(jobId ? { jobId } : {}) };
    // in this daemon's namespace the plain path outlives the process (a dump at its exit is still read after it);
    // in another, its path is only right seen through the process's own root and working folder
    const sameNs = this.ownNs !== undefined && nsOf(`${this.proc}/${pid}/ns/mnt`) === this.ownNs;
    let plain: string | undefined;
    try {
      plain = isAbsolute(rel) ? resolve(rel) : resolve(readlinkSync(`${this.proc}/${pid}/cwd`), rel);
    } catch {
      plain = undefined;
    }
    if (sameNs) return plain === undefined ? undefined : { path: plain, ...who };
    const other = { proc: isAbsolute(rel) ? `${this.proc}/${pid}/root${resolve(rel)}` : join(`${this.proc}/${pid}/cwd`, rel), plain };
    return { path: viewOf(other), other, ...who };
  }
}

/**
 * Which path to read a folder of another mount namespace by: the plain one
 * when it is the same folder from here (a bind mount: it outlives the
 * process), else the process's own view. Looked at every discovery: the
 * Inspector makes its folder at its first dump.
 */
function viewOf(o: { proc: string; plain: string | undefined }): string {
  if (o.plain === undefined) return o.proc;
  const id = (p: string) => {
    try {
      const st = statSync(p);
      return `${st.dev}/${st.ino}`;
    } catch {
      return undefined;
    }
  };
  const a = id(o.proc);
  return a !== undefined && a === id(o.plain) ? o.plain : o.proc;
}

function procOf(d: Discovered): { uid: number; jobId?: string } {
  return { uid: d.uid, ...(d.jobId ? { jobId: d.jobId } : {}) };
}

function nsOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/**
 * The job a folder's files are credited to when their process says nothing
 * (it has ended): a root folder's name or process, as before; in a user's
 * folder only its discovered process's job, and only when that process is the
 * folder owner's (the files in it are that owner's: the plugin's owner rule).
 */
function folderJob(dir: string, uid: number, procs: readonly Discovered[] | undefined): { jobId?: string } {
  const procJob = procs?.find((p) => p.uid === uid && p.jobId)?.jobId;
  const jobId = uid === 0 ? (JOB_DIR.exec(basename(dir))?.[1] ?? procJob) : procJob;
  return jobId ? { jobId } : {};
}
