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
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { processStart } from '../../src/core/process-start.js';

export interface InspectorFile {
  readonly path: string;
  readonly kind: 'log' | 'prom';
  /** log: the writing process (from the name). */
  readonly pid?: number;
  /** prom: the GPU (NVML's spelling, GPU-<uuid>). */
  readonly gpuUuid?: string;
  /** The job the folder is named for (nccl-inspector-<id>), or the discovered process's SLURM_JOB_ID. */
  readonly jobId?: string;
}

export interface LocateOptions {
  readonly paths: readonly string[];
  readonly discover: boolean;
  /** Names this node goes by ([host] name and the kernel's). */
  readonly hostNames: readonly string[];
  readonly proc?: string;
  /** Most folders followed (globs and discovery together). Default 4,096. */
  readonly maxDirs?: number;
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
  return new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')}$`);
}

/** The folders a path with * and ? in its parts names (no ** and no brackets: a few levels of readdir). */
export function expandGlob(pattern: string, max: number): string[] {
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
      for (const n of names) if (re.test(n) && next.length < max) next.push(join(dir, n));
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
  /** Discovered folder -> its job id and when a process last named it. */
  private readonly discovered = new Map<string, { jobId?: string; seen: number }>();
  /** pid -> its start time and the folder its environment names (undefined: not an Inspector process). */
  private readonly looked = new Map<number, { start: string | undefined; dir?: string; jobId?: string }>();

  constructor(private readonly o: LocateOptions) {
    this.hosts = hostNames([...o.hostNames, hostname()]);
    this.proc = o.proc ?? '/proc';
    this.maxDirs = o.maxDirs ?? 4096;
  }

  get names(): ReadonlySet<string> {
    return this.hosts;
  }

  /** The Inspector files of this node in every followed folder. */
  files(now: number): InspectorFile[] {
    const dirs = new Map<string, string | undefined>();
    for (const p of this.o.paths) for (const d of expandGlob(p, this.maxDirs)) if (dirs.size < this.maxDirs) dirs.set(d, undefined);
    if (this.o.discover) {
      if (now - this.lastDiscovery >= DISCOVER_EVERY_MS) {
        this.lastDiscovery = now;
        this.discover(now);
      }
      for (const [d, v] of this.discovered) {
        if (now - v.seen > DISCOVERED_TTL_MS) this.discovered.delete(d);
        else if (dirs.size < this.maxDirs) dirs.set(d, v.jobId);
      }
    }
    const out: InspectorFile[] = [];
    for (const [dir, procJob] of dirs) {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      const jobId = JOB_DIR.exec(basename(dir))?.[1] ?? procJob;
      for (const n of names) {
        const log = LOG.exec(n);
        const prom = log ? undefined : PROM.exec(n);
        if (log ? !this.hosts.has(log[1]!) : !prom) continue;
        // by name only: the plugin stats a file when it first sees it, not every file every collection
        out.push({ path: join(dir, n), kind: log ? 'log' : 'prom', ...(log ? { pid: Number(log[2]) } : { gpuUuid: `GPU-${prom![1]}` }), ...(jobId ? { jobId } : {}) });
      }
    }
    return out;
  }

  /** The dump folders of the running processes that enabled the Inspector (their environment read once per process). */
  private discover(now: number): void {
    let pids: number[];
    try {
      pids = readdirSync(this.proc).filter((n) => /^\d+$/.test(n)).map(Number);
    } catch {
      return;
    }
    const alive = new Set(pids);
    for (const pid of this.looked.keys()) if (!alive.has(pid)) this.looked.delete(pid);
    for (const pid of pids) {
      const start = processStart(pid, this.proc);
      let l = this.looked.get(pid);
      if (!l || l.start !== start) {
        this.looked.set(pid, (l = { start, ...this.dumpDirOf(pid) }));
      }
      if (l.dir) this.discovered.set(l.dir, { ...(l.jobId ? { jobId: l.jobId } : {}), seen: now });
    }
  }

  private dumpDirOf(pid: number): { dir?: string; jobId?: string } {
    let env: string;
    try {
      env = readFileSync(`${this.proc}/${pid}/environ`, 'latin1');
    } catch {
      return {};
    }
    if (!env.includes('NCCL_INSPECTOR_ENABLE=')) return {};
    const vars = new Map<string, string>();
    for (const kv of env.split('\0')) {
      const eq = kv.indexOf('=');
      if (eq > 0) vars.set(kv.slice(0, eq), kv.slice(eq + 1));
    }
    if (vars.get('NCCL_INSPECTOR_ENABLE') !== '1') return {};
    // the Inspector reads SLURM_JOBID (atoi); SLURM_JOB_ID is the same
    const job = vars.get('SLURM_JOBID') ?? vars.get('SLURM_JOB_ID');
    const jobId = job && /^\d{1,20}$/.test(job) ? job : undefined;
    const rel = vars.get('NCCL_INSPECTOR_DUMP_DIR') || `nccl-inspector-${jobId ?? 'unknown-jobid'}`;
    let dir = rel;
    if (!isAbsolute(rel)) {
      try {
        dir = resolve(readlinkSync(`${this.proc}/${pid}/cwd`), rel);
      } catch {
        return {};
      }
    }
    return { dir, ...(jobId ? { jobId } : {}) };
  }
}
