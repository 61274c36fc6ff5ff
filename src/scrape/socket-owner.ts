/**
 * Which process listens on a local TCP port: /proc/net/tcp and tcp6 give the
 * listening socket's inode, and the process holding `socket:[inode]` among its
 * file descriptors is the owner. The fd walk reads every process's fds (root
 * sees all, others their own), so the answer is kept and checked each time
 * by the cheap test (the process is still there, with the same start time,
 * and the port's socket is the same inode); only a change walks again.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The inodes of the sockets listening on a port (state 0A), IPv4 and IPv6. */
export function listeningInodes(port: number, proc = '/proc'): Set<string> {
  const out = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const f of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`${proc}/net/${f}`, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      // "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
      const c = line.trim().split(/\s+/);
      if (c.length < 10 || c[3] !== '0A') continue;
      const local = c[1]!;
      if (local.slice(local.lastIndexOf(':') + 1) === hexPort && c[9] !== '0') out.add(c[9]!);
    }
  }
  return out;
}

/** The start time of a process (field 22 of its stat), which tells a reused pid from the one seen before. */
export function processStart(pid: number, proc = '/proc'): string | undefined {
  try {
    const s = readFileSync(`${proc}/${pid}/stat`, 'latin1');
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** The process holding one of the sockets among its file descriptors, or undefined. */
export function ownerOf(inodes: ReadonlySet<string>, proc = '/proc'): number | undefined {
  if (inodes.size === 0) return undefined;
  const want = new Set([...inodes].map((i) => `socket:[${i}]`));
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`${proc}/${pid}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      try {
        if (want.has(readlinkSync(`${proc}/${pid}/fd/${fd}`))) return Number(pid);
      } catch {
        // closed meanwhile
      }
    }
  }
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
