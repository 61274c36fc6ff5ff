/**
 * `l9gpu slurm ctld-epilog`, slurm.conf EpilogSlurmctld: keeps a finished
 * job's GPU figures in its AdminComment (src/jobs/summary.ts), so that
 * `l9gpu jobs show` on any login node reports it from sacct alone, after the
 * metrics backend has dropped it, for as long as accounting keeps the job.
 *
 * slurmctld runs it as SlurmUser when the job ends, while every node's
 * epilog is still closing the job's GPUs. So it returns at once: a job that
 * held GPUs (ctld-gpu-jobs.ts) is added to a bounded queue in the state dir
 * (ctld-queue.ts), and one worker (ctld-worker.ts; an flock says whether it
 * runs) drains it: it waits until every GPU's job-end summary (gpu.job.energy,
 * sent once a node closed the GPU) has reached the PromQL backend ([jobs]
 * promql_url), builds the report the PromQL path builds, again until its
 * figures agree with those summaries (each node's store's figures), and
 * writes it with scontrol or sacctmgr, which works on the accounting record
 * whether slurmctld still holds the job or not (jobstats does the same). A
 * comment that is not l9gpu's is never replaced. storeSummary does the same
 * for one job in the foreground (--job).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../src/core/config/load.js';
import { RAW_JOB_ID, jobIdVariableError } from '../src/core/job-id.js';
import { makeDirs } from '../src/core/make-dirs.js';
import { jobEndCoverage, reportFromPromql, settledReport, type JobEndCoverage } from '../src/jobs/promql.js';
import { promqlOptions } from '../src/jobs/promql-client.js';
import { redactUrl } from '../src/core/redact.js';
import { encodeSummary, isSummary } from '../src/jobs/summary.js';
import { sacctJob } from './sacct-job.js';
import { slurmCommand } from './tools.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION } from '../src/core/config/sections.js';
import { jobHeldGpus } from './ctld-gpu-jobs.js';
import { claimStart, workerRunning } from './ctld-lock.js';
import { LOG_FILE } from './ctld-log.js';
import { CtldQueue, DEFAULT_BACKLOG, type CtldEpilogJob } from './ctld-queue.js';

export type { CtldEpilogJob };
import { writeFastPath } from './ctld-fast.js';
import { slurmConfPath } from './paths.js';
import { JOBS_SECTION } from '../src/jobs/config.js';

/** A job with no GPU series after this long used no GPU that l9gpu saw: nothing to keep. */
export const NO_GPUS_AFTER_MS = 30_000;
/**
 * Figures that differ from the nodes' summaries yet stay the same this long
 * are the backend's last word (a scrape resamples; a sample lost on the way):
 * a few times VictoriaMetrics' 2 s flush of fresh samples into searchable parts.
 */
export const SETTLED_AFTER_MS = 5_000;

/** The job slurmctld's epilog environment names; undefined for a job that never ran on a node (cancelled while pending). */
export function epilogJob(env: NodeJS.ProcessEnv): CtldEpilogJob | undefined {
  const raw = env.SLURM_JOB_ID;
  if (!raw || !RAW_JOB_ID.test(raw))
    throw new Error(
      `${jobIdVariableError('SLURM_JOB_ID', raw)}: slurmctld sets it for EpilogSlurmctld (for a finished job by hand: --job ID)`,
    );
  const nodes = env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST ?? '';
  if (!nodes || nodes === '(null)' || nodes === 'None assigned') return undefined;
  const arr = env.SLURM_ARRAY_JOB_ID;
  const task = env.SLURM_ARRAY_TASK_ID;
  return { rawId: raw, acctId: arr && task && RAW_JOB_ID.test(arr) && RAW_JOB_ID.test(task) ? `${arr}_${task}` : raw };
}

export interface Enqueued {
  outcome: 'cpu' | 'queued' | 'dropped';
  /** The pid of the worker started; undefined where one runs already (or the job was not queued). */
  worker?: number | undefined;
}

/**
 * The epilog's whole work: the job queued where it held GPUs, and a worker
 * started where none runs (workerRunning) and none is being started
 * (claimStart).
 */
export function enqueueEnded(
  cfg: Config,
  env: NodeJS.ProcessEnv,
  job: CtldEpilogJob,
  cli: string,
  configArgs: readonly string[],
  cap = DEFAULT_BACKLOG,
  configPath?: string,
): Enqueued {
  const { verdict, known } = jobHeldGpus(env, slurmConfPath(cfg, env));
  const dir = readSection(cfg, DAEMON_SECTION).state_dir;
  if (known && configPath && existsSync(configPath)) {
    // the next epilogs decide and queue in the shell alone (slurm/ctld-epilog): best effort, this one goes on without
    try {
      makeDirs(dir);
      new CtldQueue(dir).ensure();
      writeFastPath(dir, configPath, env, known);
    } catch {
      // a state dir SlurmUser cannot write: said below, where the job is queued
    }
  }
  if (verdict === 'cpu') return { outcome: 'cpu' };
  makeDirs(dir);
  if (new CtldQueue(dir).add(job, cap) === 'dropped') return { outcome: 'dropped' };
  if (workerRunning(dir) || !claimStart(dir)) return { outcome: 'queued' };
  return { outcome: 'queued', worker: startWorker(dir, cli, configArgs) };
}

/** Starts the worker, detached from slurmctld; it logs to <state_dir>/ctld-epilog.log itself (a crash's stack there too). */
function startWorker(dir: string, cli: string, configArgs: readonly string[]): number | undefined {
  let out: number | 'ignore' = 'ignore';
  try {
    out = openSync(join(dir, LOG_FILE), 'a', 0o640);
  } catch {
    // SlurmUser may not write the state folder: the worker still runs, unlogged
  }
  const child = spawn(process.execPath, [cli, 'slurm', 'ctld-epilog', '--worker', ...configArgs], {
    detached: true,
    stdio: ['ignore', 'ignore', out],
  });
  child.unref();
  if (typeof out === 'number') closeSync(out);
  return child.pid;
}

export interface SummaryResult {
  stored: boolean;
  /** What happened, one line for the log. */
  detail: string;
}

const log = (msg: string) => process.stdout.write(`${new Date().toISOString()} ${msg}\n`);

/** The worker: waits for the nodes' job-end figures, then writes the summary. */
export async function storeSummary(
  cfg: Config,
  job: CtldEpilogJob,
  o: { waitMs?: number; now?: () => number } = {},
): Promise<SummaryResult> {
  const jobs = readSection(cfg, JOBS_SECTION);
  const q = promqlOptions(cfg, { window: '30d' });
  if (!q) return { stored: false, detail: `job ${job.acctId}: [jobs] promql_url is not set: no backend to read the job's figures from` };
  const now = o.now ?? Date.now;
  const start = now();
  const deadline = start + (o.waitMs ?? jobs.summary_wait * 1000);
  let pause = 1000;
  let cov: JobEndCoverage = { gpus: 0, ended: 0, ends: new Map() };
  for (;;) {
    try {
      cov = await jobEndCoverage(q, job.rawId);
    } catch (e) {
      log(`job ${job.acctId}: ${(e as Error).message}: trying again`);
    }
    if (cov.gpus > 0 && cov.ended === cov.gpus) break;
    if (cov.gpus === 0 && now() - start >= Math.min(NO_GPUS_AFTER_MS, deadline - start))
      return { stored: false, detail: `job ${job.acctId}: no GPU metrics of the job at ${redactUrl(q.url)}: nothing to keep` };
    if (now() >= deadline) {
      log(
        `job ${job.acctId}: ${cov.gpus - cov.ended} of ${cov.gpus} GPU(s) still without their ` +
          `job-end figures after ${Math.round((now() - start) / 1000)} s: keeping what there is`,
      );
      break;
    }
    await sleep(pause);
    // every second while the nodes' epilogs normally end (a few seconds), then backing off to 10 s
    if (now() - start > 5_000) pause = Math.min(pause * 1.5, 10_000);
  }
  // a summary may be searchable before the samples sent ahead of it: read until the figures agree with it
  const report = await settledReport(() => reportFromPromql(q, job.rawId, null), cov.ends, {
    deadline,
    settledAfterMs: SETTLED_AFTER_MS,
    pauseMs: 1000,
    now,
    sleep,
    log: (m) => log(`job ${job.acctId}: ${m}`),
  });
  if (!report) return { stored: false, detail: `job ${job.acctId}: its metrics went from ${redactUrl(q.url)} while it was read` };
  const text = encodeSummary(report);
  // accounting gets the job's end from slurmctld a moment after the epilog starts: retry until its record is there
  for (;;) {
    const acct = await sacctJob(job.acctId, { run: (c, a, e) => slurmCommand(cfg, c, a, e) }).catch((e: Error) => {
      log(`job ${job.acctId}: ${e.message}`);
      return undefined;
    });
    if (acct?.adminComment.toUpperCase() === text.toUpperCase())
      return {
        stored: true,
        detail:
          `job ${job.acctId}: summary of ${report.gpus.length} GPU(s) on ${report.job.nodes.length} ` +
          `node(s) stored in AdminComment (${text.length} characters)`,
      };
    if (acct && acct.adminComment && !isSummary(acct.adminComment))
      return {
        stored: false,
        detail: `job ${job.acctId}: AdminComment holds something else ("${acct.adminComment.slice(0, 40)}"): not replaced`,
      };
    if (acct && acct.end !== null) {
      const how = await writeComment(cfg, job.acctId, text);
      log(`job ${job.acctId}: AdminComment written through ${how}: checking that accounting has it`);
    }
    if (now() >= deadline + 60_000)
      return { stored: false, detail: `job ${job.acctId}: accounting has no finished record of the job with the summary: not stored` };
    await sleep(1000);
  }
}

/**
 * Through slurmctld while it holds the job as running or completing
 * (scontrol), else into the accounting record (sacctmgr): slurmctld sends the
 * job's record again as it finishes it, and the caller reads the comment
 * back until it stays.
 */
export async function writeComment(cfg: Config, id: string, text: string): Promise<'scontrol' | 'sacctmgr'> {
  try {
    await slurmCommand(cfg, 'scontrol', ['update', `JobId=${id}`, `AdminComment=${text}`]);
    return 'scontrol';
  } catch (e) {
    // a finished job's comment is accounting's ("Job has already finished"), a purged job slurmctld's no more
    if (!/already finished|invalid job id|not found/i.test((e as Error).message)) throw e;
  }
  await slurmCommand(cfg, 'sacctmgr', ['-i', 'modify', 'job', 'where', `JobID=${id}`, 'set', `AdminComment=${text}`]);
  return 'sacctmgr';
}
