/**
 * Which Slurm job a process belongs to: its cgroup path (".../job_<id>/...",
 * cgroup v1 and v2, task/cgroup) or, without cgroups (proctrack/linuxproc),
 * SLURM_JOB_ID in its environment (root only).
 */
import { readFileSync } from 'node:fs';

const MAX_ENVIRON = 256 * 1024;

export function jobOfPid(pid: number, proc = '/proc'): string | null {
  try {
    const m = /\/job_(\d+)(?:\/|$)/m.exec(readFileSync(`${proc}/${pid}/cgroup`, 'utf8'));
    if (m) return m[1]!;
  } catch {
    return null; // gone
  }
  try {
    const env = readFileSync(`${proc}/${pid}/environ`).subarray(0, MAX_ENVIRON).toString('latin1');
    const m = /(?:^|\0)SLURM_JOB_ID=(\d+)(?:\0|$)/.exec(env);
    return m ? m[1]! : null;
  } catch {
    return null; // not ours to read, or gone
  }
}
