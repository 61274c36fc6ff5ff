/**
 * The slurmctld epilog's one worker: drains the queue of ended GPU jobs
 * (slurm/ctld-queue.ts) and keeps each job's summary in its AdminComment, as
 * storeSummary does for one job, but for up to BATCH jobs at a time in the
 * queries of about one: every round asks the PromQL backend for all waiting
 * jobs' job-end coverage at once (two queries), builds the reports of all
 * ready jobs at once (three: their shares, every metric of the report in one
 * selector, their NCCL figures) and reads their accounting records in one
 * sacct call. It holds the worker lock (ctld-lock.ts) while it
 * runs and exits when the queue is empty.
 *
 * A job is done (its file unlinked) once its summary is in accounting, or
 * it cannot be (no GPU series, a foreign AdminComment, no record after the
 * wait): a worker killed before that leaves the job in cur/, and the next
 * worker does it again; one killed after its write but before the unlink
 * finds the summary there on its first read and writes nothing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../src/core/config/load.js';
import { readSection } from '../src/core/config/read.js';
import { redactUrl } from '../src/core/redact.js';
import { JOBS_SECTION } from '../src/jobs/config.js';
import { jobEndCoverages, reportsFromPromql, unsettled, type JobEndCoverage } from '../src/jobs/promql.js';
import { closePromql, promqlOptions } from '../src/jobs/promql-client.js';
import { decodeSummary, encodeSummary, isSummary } from '../src/jobs/summary.js';
import { NO_GPUS_AFTER_MS, SETTLED_AFTER_MS, writeComment } from './ctld-epilog.js';
import { startDone, tryWorkerLock } from './ctld-lock.js';
import type { LogLine } from './ctld-log.js';
import { CtldQueue, type QueuedJob } from './ctld-queue.js';
import { sacctJobs } from './sacct-job.js';
import { slurmCommand } from './tools.js';

/** Jobs in the work at once: their ids make one regular expression of each query, and one sacct call. */
export const BATCH = 100;
/** An idle worker stays this long, its lock held, for the next ended jobs of a burst (L9GPU_CTLD_LINGER, seconds). */
export const LINGER_MS = 30_000;
/** A backend (or accounting) that has not answered this long: the worker stops, leaving its jobs to the next. */
const GIVE_UP_AFTER_MS = 10 * 60_000;
/** VictoriaMetrics makes fresh samples searchable within a second or two of a flush. */
const CONFIRM_MS = 2_000;
/** A write that accounting does not show yet is not repeated before this long. */
const REWRITE_AFTER_MS = 10_000;

type Phase = 'wait' | 'report' | 'write';

interface Active {
  job: QueuedJob;
  phase: Phase;
  deadline: number;
  cov?: JobEndCoverage;
  text?: string;
  gpus?: number;
  nodes?: number;
  seen?: { key: string; at: number };
  wroteAt?: number;
}

export interface WorkerOptions {
  stateDir: string;
  log: LogLine;
  /** Pause between rounds while jobs wait (default 1 s). */
  roundMs?: number;
  /** How long an idle worker waits for more ended jobs before it exits (default LINGER_MS). */
  lingerMs?: number;
  now?: () => number;
}

export interface WorkerResult {
  /** false: another worker held the lock. */
  ran: boolean;
  stored: number;
  other: number;
}

export async function runWorker(cfg: Config, o: WorkerOptions): Promise<WorkerResult> {
  const { log } = o;
  const now = o.now ?? Date.now;
  const result: WorkerResult = { ran: false, stored: 0, other: 0 };
  let lock = tryWorkerLock(o.stateDir);
  startDone(o.stateDir);
  if (!lock) return result;
  result.ran = true;
  const queue = new CtldQueue(o.stateDir);
  const back = queue.recover();
  log(`worker ${process.pid}: started${back ? `; ${back} job(s) taken by a worker that ended before it finished them: taken again` : ''}`);
  const jobs = readSection(cfg, JOBS_SECTION);
  const q = promqlOptions(cfg, { window: '30d' });
  const active = new Map<string, Active>();
  const finish = (a: Active, stored: boolean, detail: string) => {
    log(detail);
    queue.done(a.job);
    active.delete(a.job.acctId);
    if (stored) result.stored++;
    else result.other++;
  };
  let pause = o.roundMs ?? 1000;
  let failing: { msg: string; at: number } | undefined;
  let failingSince: number | undefined;
  let idleSince: number | undefined;
  try {
    for (;;) {
      const dropped = queue.takeDropped();
      if (dropped) log(`${dropped} ended job(s) dropped: the queue was full (the newest are dropped; queued ones are kept)`);
      if (active.size < BATCH) {
        if (queue.pending()) idleSince = undefined;
        for (const job of queue.take(BATCH - active.size, (f, why) => log(`queue file ${f}: ${why}: removed`))) {
          if (active.has(job.acctId)) {
            // the job ended twice (requeued) while its first end is in the work: that one's summary is the job's
            queue.done(job);
            continue;
          }
          active.set(job.acctId, { job, phase: 'wait', deadline: job.at + jobs.summary_wait * 1000 });
        }
      }
      if (active.size === 0) {
        // a while idle first, the lock held: jobs end in bursts (a reservation's end, an array), and the next
        // ones are queued for this worker, not each a Node start of its own
        idleSince ??= now();
        if (now() - idleSince < (o.lingerMs ?? LINGER_MS)) {
          await sleep(Math.min(1000, o.roundMs ?? 1000));
          continue;
        }
        // let go first, then look again: an epilog that queued a job after our last look and found the lock held
        // started no worker, so it is ours; one that queued after we let go starts its own
        lock.release();
        if (queue.pending() === 0) break;
        lock = tryWorkerLock(o.stateDir);
        if (!lock) break;
        continue;
      }
      if (!q) {
        for (const a of [...active.values()])
          finish(a, false, `job ${a.job.acctId}: [jobs] promql_url is not set: no backend to read the job's figures from`);
        continue;
      }
      try {
        await round(cfg, q, [...active.values()], now, finish, log);
        failing = undefined;
        failingSince = undefined;
        pause = o.roundMs ?? 1000;
      } catch (e) {
        // the backend or accounting away: the jobs wait in the work (and the queue) for it, the log says so once a minute
        const msg = (e as Error).message;
        const t = now();
        failingSince ??= t;
        if (t - failingSince >= GIVE_UP_AFTER_MS) {
          // the jobs stay taken (cur/): the worker the next ending job's epilog starts takes them again
          log(
            `${msg}: no answer for ${Math.round((t - failingSince) / 60_000)} min: the worker stops; ` +
              `its ${active.size} job(s) and ${queue.pending()} queued wait for the next one`,
          );
          break;
        }
        if (failing?.msg !== msg || t - failing.at >= 60_000) {
          log(`${msg}: trying again (${active.size} job(s) in the work, ${queue.pending()} queued)`);
          failing = { msg, at: t };
        }
        pause = Math.min(pause * 2, 30_000);
      }
      if (active.size) await sleep(pause);
    }
  } finally {
    lock?.release();
    if (q) closePromql(q);
  }
  return result;
}

type Finish = (a: Active, stored: boolean, detail: string) => void;

async function round(
  cfg: Config,
  q: NonNullable<ReturnType<typeof promqlOptions>>,
  list: Active[],
  now: () => number,
  finish: Finish,
  log: LogLine,
): Promise<void> {
  const waiting = list.filter((a) => a.phase === 'wait');
  if (waiting.length) {
    const covs = await jobEndCoverages(
      q,
      waiting.map((a) => a.job.rawId),
    );
    for (const a of waiting) {
      const cov = covs.get(a.job.rawId)!;
      a.cov = cov;
      const t = now();
      if (cov.gpus > 0 && cov.ended === cov.gpus) a.phase = 'report';
      else if (cov.gpus === 0 && t - a.job.at >= Math.min(NO_GPUS_AFTER_MS, a.deadline - a.job.at)) {
        finish(a, false, `job ${a.job.acctId}: no GPU metrics of the job at ${redactUrl(q.url)}: nothing to keep`);
      } else if (t >= a.deadline) {
        log(
          `job ${a.job.acctId}: ${cov.gpus - cov.ended} of ${cov.gpus} GPU(s) still without their ` +
            `job-end figures after ${Math.round((t - a.job.at) / 1000)} s: keeping what there is`,
        );
        a.phase = 'report';
      }
    }
  }
  const ready = list.filter((a) => a.phase === 'report');
  if (ready.length) {
    const reports = await reportsFromPromql(
      q,
      ready.map((a) => a.job.rawId),
      null,
    );
    for (const a of ready) {
      const report = reports.get(a.job.rawId);
      if (!report) {
        finish(a, false, `job ${a.job.acctId}: its metrics went from ${redactUrl(q.url)} while it was read`);
        continue;
      }
      // a summary may be searchable before the samples sent ahead of it: read again until the figures agree with it
      const off = unsettled(report, a.cov?.ends ?? new Map());
      const t = now();
      const key = JSON.stringify(report.gpus.map((g) => g.figures));
      if (a.seen?.key !== key) a.seen = { key, at: t };
      // figures that agree are kept once a read CONFIRM_MS later gives the same: the job-end summary agreeing says
      // the energy and time series are whole, not that every other series (PCIe, NVLink) has its last sample yet
      const settled = (off.length === 0 && t - a.seen.at >= CONFIRM_MS) || t - a.seen.at >= SETTLED_AFTER_MS || t >= a.deadline;
      if (!settled) continue;
      if (off.length)
        log(
          `job ${a.job.acctId}: the backend's figures of ${off.join(', ')} differ from the node's ` +
            `job-end summary and ${t >= a.deadline ? 'the wait is over' : `they stayed so for ${SETTLED_AFTER_MS / 1000} s`}: ` +
            `keeping the backend's`,
        );
      a.text = encodeSummary(report);
      a.gpus = report.gpus.length;
      a.nodes = report.job.nodes.length;
      a.phase = 'write';
    }
  }
  const writing = list.filter((a) => a.phase === 'write');
  if (writing.length) {
    const errors = new Map<string, string>();
    const accts = await sacctJobs(
      writing.map((a) => a.job.acctId),
      { run: (c, args, e) => slurmCommand(cfg, c, args, e), onError: (id, e) => errors.set(id, e.message) },
    );
    for (const a of writing) {
      const acct = accts.get(a.job.acctId);
      const text = a.text!;
      if (errors.has(a.job.acctId)) log(`job ${a.job.acctId}: ${errors.get(a.job.acctId)}`);
      if (acct?.adminComment.toUpperCase() === text.toUpperCase()) {
        finish(
          a,
          true,
          `job ${a.job.acctId}: summary of ${a.gpus} GPU(s) on ${a.nodes} node(s) stored in AdminComment (${text.length} characters)`,
        );
        continue;
      }
      if (acct && madeSince(acct.adminComment, a.job.at)) {
        // a worker that ended between its write and marking the job done: the summary of this end is there
        finish(a, true, `job ${a.job.acctId}: its summary was stored already (by a worker that ended before it marked the job done)`);
        continue;
      }
      if (acct && acct.adminComment && !isSummary(acct.adminComment)) {
        finish(a, false, `job ${a.job.acctId}: AdminComment holds something else ("${acct.adminComment.slice(0, 40)}"): not replaced`);
        continue;
      }
      const t = now();
      // accounting gets the job's end from slurmctld a moment after the epilog starts: written once it has it
      if (acct && acct.end !== null && (a.wroteAt === undefined || t - a.wroteAt >= REWRITE_AFTER_MS)) {
        a.wroteAt = t;
        try {
          await writeComment(cfg, a.job.acctId, text);
        } catch (e) {
          log(`job ${a.job.acctId}: ${(e as Error).message}`);
        }
        continue;
      }
      if (t >= a.deadline + 60_000)
        finish(a, false, `job ${a.job.acctId}: accounting has no finished record of the job with the summary: not stored`);
    }
  }
}

/** Whether `comment` is an l9gpu summary made at or after `at` (ms): one of the end the job was queued for. */
function madeSince(comment: string, at: number): boolean {
  if (!isSummary(comment)) return false;
  try {
    const made = Date.parse(decodeSummary(comment, 'AdminComment')?.made ?? '');
    return Number.isFinite(made) && made >= at;
  } catch {
    return false;
  }
}
