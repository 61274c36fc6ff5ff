/**
 * Which pod a process belongs to: the pod uid in its cgroup path (cgroupfs
 * ".../kubepods/burstable/pod<uid>/<container>", systemd
 * ".../kubepods-burstable-pod<uid with _>.slice/..."). Only a DaemonSet with
 * hostPID sees the host's processes; without it NVML's pids are not in this
 * container's /proc, and shares of a time-sliced GPU fall back to 1/N.
 */
import { readFileSync } from 'node:fs';
import { PidJobCache } from '../../core/pid-job-cache.js';

const POD_UID = /pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/;

export function podUidOfPid(pid: number, proc = '/proc'): string | null {
  try {
    const m = POD_UID.exec(readFileSync(`${proc}/${pid}/cgroup`, 'utf8'));
    return m ? m[1]!.replace(/_/g, '-') : null;
  } catch {
    return null; // gone, or not in this PID namespace
  }
}

/** pid -> the open run ("namespace/pod") whose pod uid its cgroup names; the uid -> run map follows the store. */
export class PodPids {
  private readonly uids: PidJobCache;
  private byUid = new Map<string, string>();

  constructor(proc = '/proc') {
    this.uids = new PidJobCache(podUidOfPid, proc);
  }

  update(runs: Iterable<{ uid: string; jobId: string }>): void {
    this.byUid = new Map([...runs].map((r) => [r.uid, r.jobId]));
  }

  job(pid: number): string | null {
    const uid = this.uids.job(pid);
    return uid ? (this.byUid.get(uid) ?? null) : null;
  }
}
