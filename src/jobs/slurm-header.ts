/**
 * The report header from Slurm accounting: what `sacct` says of a job
 * (src/jobs/accounting.ts), laid over a header from the store or PromQL, or
 * making one for a job no store row knows.
 */
import type { SacctJob } from './accounting.js';
import type { JobHeader } from './report-model.js';

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/** elapsed / limit in 0..1 (a job killed at its limit runs a little over it: OverTimeLimit, KillWait). */
export function timeEfficiency(elapsedS: number | null, limitS: number | null): number | null {
  if (elapsedS === null || limitS === null || limitS <= 0) return null;
  return Math.round(Math.min(1, Math.max(0, elapsedS / limitS)) * 1e4) / 1e4;
}

/** The header with everything sacct knows laid over it: Slurm's accounting is the authority on a job's identity, state and times. */
export function withSacct(h: JobHeader, s: SacctJob): JobHeader {
  const or = <T>(v: T | null, keep: T): T => (v === null ? keep : v);
  const elapsed = or(s.elapsedS, h.elapsed_s);
  const limit = or(s.timeLimitS, h.time_limit_s);
  return {
    ...h,
    id: s.jobId,
    job_id: s.jobIdRaw,
    user: or(s.user, h.user),
    uid: or(s.uid, h.uid),
    account: or(s.account, h.account),
    partition: or(s.partition, h.partition),
    qos: or(s.qos, h.qos),
    name: or(s.name, h.name),
    cluster: or(s.cluster, h.cluster),
    state: s.state || h.state,
    start: or(iso(s.start), h.start),
    end: or(iso(s.end), h.end),
    elapsed_s: elapsed,
    exit_code: or(s.exitCode, h.exit_code),
    exit_signal: or(s.exitSignal, h.exit_signal),
    // the report's own nodes name its GPU rows (per node tables join on them, and a metrics backend names them by
    // host name, which may not be Slurm's NodeName): Slurm's list only where the report has none
    nodes: h.nodes.length ? h.nodes : s.nodes,
    earlier_runs: s.restarts,
    cpus: or(s.cpus, h.cpus),
    mem_req_bytes: or(s.memReqBytes, h.mem_req_bytes),
    mem_max_rss_bytes: or(s.maxRssBytes, h.mem_max_rss_bytes),
    time_limit_s: limit,
    time_efficiency: timeEfficiency(elapsed, limit),
    gpus_alloc: or(s.gpus, h.gpus_alloc),
  };
}

/** A header from sacct alone (a job no store row or metric knows: the AdminComment summary path). */
export function headerFromSacct(s: SacctJob): JobHeader {
  const blank: JobHeader = {
    id: s.jobId,
    job_id: s.jobIdRaw,
    // the hooks' run key without a SLUID (slurm/hook.ts runKey): the restart count
    run: `r${s.restarts}`,
    user: null,
    uid: null,
    account: null,
    partition: null,
    qos: null,
    name: null,
    cluster: null,
    state: s.state,
    start: null,
    end: null,
    elapsed_s: null,
    exit_code: null,
    nodes: [],
    earlier_runs: 0,
    cpus: null,
    mem_req_bytes: null,
    mem_max_rss_bytes: null,
    time_limit_s: null,
    time_efficiency: null,
    gpus_alloc: null,
    exit_signal: null,
  };
  return withSacct(blank, s);
}
