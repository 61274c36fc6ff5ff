/**
 * Which Slurm job a process belongs to: its cgroup path or, without cgroups
 * (proctrack/linuxproc), SLURM_JOB_ID in its environment (root only).
 *
 * Only Slurm's own cgroups count: cgroup v2's /system.slice/slurmstepd.scope
 * /job_<id> and v1's /slurm[_<node>]/uid_<uid>/job_<id>, from the top of the
 * hierarchy. A user with a delegated systemd --user cgroup can make a folder
 * named job_<id> under their own slice; that is no job.
 *
 * The environment is the process's own words: any user may start a process
 * that says SLURM_JOB_ID=<someone else's job>, or a job this node has not
 * seen (another node's, a future id). So a job read from it stands only when
 * the store knows that job as the process's own user's; until then (the
 * prolog has not run yet) it is no job, and asked again a few seconds later
 * (PidJobCache).
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { processUid } from '../src/core/proc-owner.js';

/** The first bytes of an environment read: SLURM_JOB_ID is set early, and a user's environment may be megabytes. */
const MAX_ENVIRON = 256 * 1024;
const SLURM_CGROUP = /^(?:0::\/system\.slice\/slurmstepd\.scope|\d+:[^:\n]*:\/slurm[^/\n]*\/uid_\d+)\/job_(\d{1,10})(?:\/|$)/m;

/** The first `max` bytes of a file (a /proc file has no size to stat), or undefined when it cannot be read. */
function head(path: string, max: number): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.allocUnsafe(max);
    let n = 0;
    for (let r; n < max && (r = readSync(fd, buf, n, max - n, null)) > 0;) n += r;
    return buf.subarray(0, n);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The job, and who said it: Slurm (its cgroup) or the process (its environment). */
export function jobOfPidSaid(pid: number, proc = '/proc'): { job: string; by: 'cgroup' | 'environ' } | null {
  let cgroup: string;
  try {
    cgroup = readFileSync(`${proc}/${pid}/cgroup`, 'utf8');
  } catch {
    return null; // gone
  }
  const m = SLURM_CGROUP.exec(cgroup);
  if (m) return { job: m[1]!, by: 'cgroup' };
  const env = head(`${proc}/${pid}/environ`, MAX_ENVIRON)?.toString('latin1');
  if (env === undefined) return null; // not ours to read, or gone
  const e = /(?:^|\0)SLURM_JOB_ID=(\d{1,10})(?:\0|$)/.exec(env);
  return e ? { job: e[1]!, by: 'environ' } : null;
}

export function jobOfPid(pid: number, proc = '/proc'): string | null {
  return jobOfPidSaid(pid, proc)?.job ?? null;
}

/**
 * jobOfPid, where a job the process names itself must be known to the store
 * as its own user's: `jobUid` gives the uid the store has for a job (null: a
 * run recorded without one, believed; undefined: not known, not yet believed).
 * Another user's job is passed to `refused` (the budget ledger).
 */
export function ownJobOfPid(
  jobUid: (job: string) => number | null | undefined,
  refused?: (pid: number, job: string, uid: number | undefined) => void,
) {
  return (pid: number, proc = '/proc'): string | null => {
    const said = jobOfPidSaid(pid, proc);
    if (!said || said.by === 'cgroup') return said?.job ?? null;
    const owner = jobUid(said.job);
    if (owner === undefined) return null;
    if (owner === null) return said.job;
    const uid = processUid(pid, proc);
    if (uid === owner) return said.job;
    refused?.(pid, said.job, uid);
    return null;
  };
}
