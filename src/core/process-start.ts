/** When a process started (field 22 of /proc/<pid>/stat, clock ticks since boot): what tells a reused pid from the process seen before. */
import { readFileSync } from 'node:fs';

export function processStart(pid: number, proc = '/proc'): string | undefined {
  try {
    const s = readFileSync(`${proc}/${pid}/stat`, 'latin1');
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
