/**
 * Engines on this node, found by their processes: a process whose command
 * line names the engine (vllm serve, sglang.launch_server, tritonserver...)
 * and the TCP ports it listens on. A Slurm job may start an engine on any
 * port; which of them serves the metrics page the plugin finds by asking.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { processStart } from '../core/process-start.js';
import { listeningSockets, socketInodes } from './socket-owner.js';

export interface Listener {
  readonly pid: number;
  /** The process's start time: a reused pid is another process. */
  readonly start: string | undefined;
  /** Where to connect: the bound address (loopback for a wildcard one) and port. */
  readonly host: string;
  readonly port: number;
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
    const start = processStart(Number(pid), proc);
    const seen = new Set<number>();
    for (const inode of socketInodes(pid, proc)) {
      const s = sockets.get(inode);
      if (s && !seen.has(s.port) && !taken.has(`${s.host}:${s.port}`)) {
        seen.add(s.port);
        taken.add(`${s.host}:${s.port}`);
        out.push({ pid: Number(pid), start, host: s.host, port: s.port });
      }
    }
  }
  return out;
}
