/**
 * Engines on this node, found by their processes: a process whose command
 * line names the engine (vllm serve, sglang.launch_server, tritonserver...)
 * and the TCP ports it listens on. A Slurm job may start an engine on any
 * port; which of them serves the metrics page the plugin finds by asking.
 */
import { readdirSync, readFileSync, readlinkSync, openSync, readSync, closeSync } from 'node:fs';
import { processStart } from './socket-owner.js';

export interface Listener {
  readonly pid: number;
  /** The process's start time: a reused pid is another process. */
  readonly start: string | undefined;
  /** Where to connect: the bound address (loopback for a wildcard one) and port. */
  readonly host: string;
  readonly port: number;
}

/** Listening sockets by inode: /proc/net/tcp and tcp6, state 0A. */
export function listeningSockets(proc = '/proc'): Map<string, { host: string; port: number }> {
  const out = new Map<string, { host: string; port: number }>();
  for (const [f, v6] of [['tcp', false], ['tcp6', true]] as const) {
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

/** The first 4 KiB of a process's command line, arguments joined by spaces. */
function cmdline(pid: string, proc: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(`${proc}/${pid}/cmdline`, 'r');
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.toString('utf8', 0, n).replace(/\0/g, ' ');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The listening ports of every process whose command line matches. */
export function discoverListeners(match: RegExp, proc = '/proc'): Listener[] {
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const candidates = pids.filter((p) => match.test(cmdline(p, proc)));
  if (candidates.length === 0) return [];
  const sockets = listeningSockets(proc);
  const out: Listener[] = [];
  // one listener per address: a forked child holds its parent's socket too (vLLM's engine core), and the lowest
  // pid, the parent, is the server
  const taken = new Set<string>();
  candidates.sort((a, b) => Number(a) - Number(b));
  for (const pid of candidates) {
    let fds: string[];
    try {
      fds = readdirSync(`${proc}/${pid}/fd`);
    } catch {
      continue;
    }
    const start = processStart(Number(pid), proc);
    const seen = new Set<number>();
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`${proc}/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      const s = m ? sockets.get(m[1]!) : undefined;
      if (s && !seen.has(s.port) && !taken.has(`${s.host}:${s.port}`)) {
        seen.add(s.port);
        taken.add(`${s.host}:${s.port}`);
        out.push({ pid: Number(pid), start, host: s.host, port: s.port });
      }
    }
  }
  return out;
}
