/**
 * Which Slurm job a process belongs to: its cgroup path (".../job_<id>/...",
 * cgroup v1 and v2, task/cgroup) or, without cgroups (proctrack/linuxproc),
 * SLURM_JOB_ID in its environment (root only).
 *
 * The cgroup is Slurm's word (root made it); the environment is the
 * process's own, and any user may start a process that says
 * SLURM_JOB_ID=<someone else's job>. So a job read from the environment
 * stands only when the store does not know that job as another user's.
 */
import { readFileSync } from 'node:fs';
import { processUid } from '../src/core/proc-owner.js';

const MAX_ENVIRON = 256 * 1024;

/** The job, and who said it: Slurm (the cgroup) or the process (its environment). */
export function jobOfPidSaid(pid: number, proc = '/proc'): { job: string; by: 'cgroup' | 'environ' } | null {
  try {
    const m = /\/job_(\d+)(?:\/|$)/m.exec(readFileSync(`${proc}/${pid}/cgroup`, 'utf8'));
    if (m) return { job: m[1]!, by: 'cgroup' };
  } catch {
    return null; // gone
  }
  try {
    const env = readFileSync(`${proc}/${pid}/environ`).subarray(0, MAX_ENVIRON).toString('latin1');
    const m = /(?:^|\0)SLURM_JOB_ID=(\d+)(?:\0|$)/.exec(env);
    return m ? { job: m[1]!, by: 'environ' } : null;
  } catch {
    return null; // not ours to read, or gone
  }
}

export function jobOfPid(pid: number, proc = '/proc'): string | null {
  return jobOfPidSaid(pid, proc)?.job ?? null;
}

/**
 * jobOfPid, where a job the process names itself must not be another
 * user's: `jobUid` gives the uid the store has for a job (undefined: not
 * known, believed). Refusals are passed to `refused` (the budget ledger).
 */
export function ownJobOfPid(jobUid: (job: string) => number | undefined, refused?: (pid: number, job: string, uid: number | undefined) => void) {
  return (pid: number, proc = '/proc'): string | null => {
    const said = jobOfPidSaid(pid, proc);
    if (!said || said.by === 'cgroup') return said?.job ?? null;
    const owner = jobUid(said.job);
    if (owner === undefined) return said.job;
    const uid = processUid(pid, proc);
    if (uid === owner) return said.job;
    refused?.(pid, said.job, uid);
    return null;
  };
}
