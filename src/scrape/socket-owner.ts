/**
 * Which process listens on a local TCP port: /proc/net/tcp and tcp6 give the
 * listening socket's inode, and the process holding `socket:[inode]` among its
 * file descriptors is the owner. The fd walk reads every process's fds (root
 * sees all, others their own), so the answer is kept and checked each time
 * by the cheap test (the process is still there, with the same start time,
 * and the port's socket is the same inode); only a change walks again.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { processStart } from '../core/process-start.js';

/** Listening sockets by inode: /proc/net/tcp and tcp6, state 0A. */
export function listeningSockets(proc = '/proc'): Map<string, { host: string; port: number }> {
  const out = new Map<string, { host: string; port: number }>();
  for (const [f, v6] of [
    ['tcp', false],
    ['tcp6', true],
  ] as const) {
    let text: string;
    try {
      text = readFileSync(`${proc}/net/${f}`, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const c = line.trim().split(/\s+/);
      if (c.length < 10 || c[3] !== '0A' || c[9] === '0') continue;
      const [addr, port] = c[1]!.split(':');
      out.set(c[9]!, { host: hostOf(addr!, v6), port: parseInt(port!, 16) });
    }
  }
  return out;
}

/** /proc/net's hex address -> where to connect: a wildcard address is reached on loopback. */
function hostOf(hex: string, v6: boolean): string {
  if (!v6) {
    const b = [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16)).reverse();
    return b.every((x) => x === 0) ? '127.0.0.1' : b.join('.');
  }
  if (/^0+$/.test(hex)) return '[::1]';
  // an IPv4-mapped address (::ffff:a.b.c.d) in /proc's word order
  if (hex.slice(0, 24) === '0000000000000000FFFF0000') return hostOf(hex.slice(24), false);
  const words: string[] = [];
  for (let i = 0; i < 32; i += 8) {
    const w = hex.slice(i, i + 8);
    const le = w.slice(6, 8) + w.slice(4, 6) + w.slice(2, 4) + w.slice(0, 2);
    words.push(le.slice(0, 4), le.slice(4, 8));
  }
  return `[${words.map((w) => w.replace(/^0+(?=.)/, '')).join(':')}]`;
}

/** The inodes of the sockets listening on a port, IPv4 and IPv6. */
export function listeningInodes(port: number, proc = '/proc'): Set<string> {
  const out = new Set<string>();
  for (const [inode, s] of listeningSockets(proc)) if (s.port === port) out.add(inode);
  return out;
}

/** The inodes of the sockets a process holds among its file descriptors (none: gone, or not ours to read). */
export function socketInodes(pid: number | string, proc = '/proc'): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`${proc}/${pid}/fd`);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`${proc}/${pid}/fd/${fd}`));
      if (m) out.push(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** The process holding one of the sockets among its file descriptors, or undefined. */
export function ownerOf(inodes: ReadonlySet<string>, proc = '/proc'): number | undefined {
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) if (socketInodes(pid, proc).some((i) => inodes.has(i))) return Number(pid);
  return undefined;
}

/** How long an owner is trusted while its process lives: /proc/net/tcp is read again after this. */
const RECHECK_MS = 60_000;

/**
 * The owner of one port, kept between calls. Each call checks only that the
 * process lives (one small read); the sockets (/proc/net/tcp, large on a busy
 * node: ~6 ms a read here) are read again when it died, or once a minute.
 */
export class PortOwner {
  private last: { inodes: string; pid: number; start: string | undefined; at: number } | undefined;
  constructor(
    private readonly port: number,
    private readonly proc = '/proc',
  ) {}

  pid(now = Date.now()): number | undefined {
    const l = this.last;
    if (l && now - l.at < RECHECK_MS && processStart(l.pid, this.proc) === l.start) return l.pid;
    const inodes = listeningInodes(this.port, this.proc);
    const key = [...inodes].sort().join(',');
    if (l && l.inodes === key && processStart(l.pid, this.proc) === l.start) {
      this.last = { ...l, at: now };
      return l.pid;
    }
    const pid = ownerOf(inodes, this.proc);
    this.last = pid === undefined ? undefined : { inodes: key, pid, start: processStart(pid, this.proc), at: now };
    return pid;
  }
}

/** Whether a URL's host is this machine (loopback, or one of its names): only then has its socket an owner here. */
export function isLocalHost(host: string, names: readonly string[]): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\./.test(h) || h === '0.0.0.0' || names.some((n) => n.toLowerCase() === h);
}
