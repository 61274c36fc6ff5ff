/**
 * The Slurm prolog/epilog: record the job run and its GPU bindings in the
 * store, in one transaction. Fail-open and fast, because a failing or slow
 * prolog drains the node: every error exits 0 (unless [slurm] hook_strict),
 * a hard deadline ends the run, nothing but the slurmd environment is read
 * (no PATH, no HOME, no Slurm commands), and neither OpenTelemetry nor oclif
 * is loaded.
 */
import { clip, printable } from '../src/core/printable.js';
import { RAW_JOB_ID, jobIdVariableError } from '../src/core/job-id.js';
import { closeSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { APPEND_NOFOLLOW, assertSafeStateDir } from '../src/store/state-dir.js';
import { join } from 'node:path';
import { loadConfig, type Config } from '../src/core/config/load.js';
import { daemonSection } from '../src/core/config/sections.js';
import { openStore } from '../src/store/open.js';
import { recordEnd, recordStart, type JobEnd, type JobRecord } from '../src/store/jobs.js';
import { SLURM_SECTION } from './config.js';
import { LEARNED_NODE_KEY, slurmNodeName } from './node-name.js';
import { setMeta } from '../src/store/meta.js';
import { gresConfFor } from './paths.js';
import { resolveGpus, storeInventory } from './resolve.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION } from '../src/core/config/sections.js';

export type HookKind = 'prolog' | 'epilog';
const MAX_LOG_BYTES = 1 << 20;

/** A job run's key: Slurm 25.11's SLUID when present, else the restart count (requeue keeps the job id). */
export function runKey(env: NodeJS.ProcessEnv): string {
  return env.SLURM_JOB_SLUID ? `sluid:${env.SLURM_JOB_SLUID}` : `r${Number(env.SLURM_JOB_RESTART_COUNT ?? 0) || 0}`;
}

const num = (v: string | undefined): number | null => (v !== undefined && /^\d+$/.test(v) ? Number(v) : null);
const str = (v: string | undefined): string | null => (v === undefined || v === '' || v === '(null)' ? null : v);
/** An array or het job's id as the environment gives it: no id of Slurm's is anything else, and then there is none. */
const id = (v: string | undefined): string | null => (v !== undefined && RAW_JOB_ID.test(v) ? v : null);

export function jobFromEnv(env: NodeJS.ProcessEnv): JobRecord {
  const jobId = str(env.SLURM_JOB_ID) ?? str(env.SLURM_JOBID);
  if (!jobId || !RAW_JOB_ID.test(jobId)) throw new Error(`${jobIdVariableError('SLURM_JOB_ID', jobId ?? undefined)}: not run by slurmd?`);
  const start = num(env.SLURM_JOB_START_TIME);
  return {
    jobId,
    runKey: runKey(env),
    cluster: str(env.SLURM_CLUSTER_NAME),
    user: str(env.SLURM_JOB_USER),
    uid: num(env.SLURM_JOB_UID),
    account: str(env.SLURM_JOB_ACCOUNT),
    partition: str(env.SLURM_JOB_PARTITION),
    qos: str(env.SLURM_JOB_QOS),
    name: str(env.SLURM_JOB_NAME), // only in PrologSlurmctld; the reconciler fills it otherwise
    arrayJobId: id(env.SLURM_ARRAY_JOB_ID),
    arrayTaskId: id(env.SLURM_ARRAY_TASK_ID),
    hetJobId: id(env.SLURM_HET_JOB_ID),
    hetJobOffset: id(env.SLURM_HET_JOB_OFFSET),
    startTime: start !== null ? start * 1000 : null,
  };
}

/** Epilog: SLURM_JOB_EXIT_CODE is the raw wait status. A cancelled job also ends 0:0: state is left to the reconciler. */
export function endFromEnv(env: NodeJS.ProcessEnv, now: number): JobEnd {
  const raw = num(env.SLURM_JOB_EXIT_CODE);
  if (raw === null) return { endTime: now };
  const code = (raw >> 8) & 0xff;
  const sig = raw & 0x7f;
  return { endTime: now, exitCode: code, exitSignal: sig, state: code !== 0 || sig !== 0 ? 'FAILED' : null };
}

export interface HookResult {
  ok: boolean;
  message: string;
}

export function hookConfig(env: NodeJS.ProcessEnv): Config {
  return loadConfig({ sections: [daemonSection(), SLURM_SECTION], env, partial: true });
}

/**
 * busyMs: how long a store write may wait for the lock. A synchronous wait
 * cannot be interrupted by the hook's timer, so main() sets it to what is
 * left of the deadline; the wrapper (slurm/hook-run) kills whatever is left
 * one second after it.
 */
export function runHook(kind: HookKind, env: NodeJS.ProcessEnv, cfg: Config, now = Date.now(), busyMs?: number): HookResult {
  const stateDir = readSection(cfg, DAEMON_SECTION).state_dir;
  const job = jobFromEnv(env);
  const db = openStore(stateDir, {
    busyTimeoutMs: busyMs,
    onRecovered: (m) => logLine(stateDir, `${new Date(now).toISOString()} l9gpu ${kind} job ${job.jobId}: ${m}`),
  });
  try {
    const gpus = resolveGpus(
      {
        cudaVisibleDevices: env.CUDA_VISIBLE_DEVICES,
        jobGpus: env.SLURM_JOB_GPUS,
        // no version's prolog environment says "shard" (SLURM_SHARDS_ON_NODE is not in it); MPS is visible.
        // A GPU another job already holds is marked shared by the store; the reconciler adds gres_detail's word
        shared: !!env.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
        gresConf: gresConfFor(cfg, env),
        node: slurmNodeName(cfg, env),
      },
      storeInventory(db),
    );
    if (kind === 'prolog') recordStart(db, job, gpus, 'prolog', now);
    else recordEnd(db, job, endFromEnv(env, now), gpus, 'epilog', now);
    // the daemon (a systemd service) never sees SLURMD_NODENAME: this is how it learns its node's name in Slurm
    if (env.SLURMD_NODENAME) setMeta(db, LEARNED_NODE_KEY, env.SLURMD_NODENAME);
    return { ok: true, message: `${kind} job ${job.jobId} run ${job.runKey}: ${gpus.map((g) => g.uuid).join(',') || 'no GPUs'}` };
  } finally {
    db.close();
  }
}

const MAX_LINE = 2000;

/** The job as a log line names it: its id when it is one, else "?" (the error says what it was). */
const jobLabel = (env: NodeJS.ProcessEnv): string => (RAW_JOB_ID.test(env.SLURM_JOB_ID ?? '') ? env.SLURM_JOB_ID! : '?');

/** Appends to <state_dir>/hooks.log, rotated at 1 MiB, never through a link; never throws. */
function logLine(stateDir: string | undefined, raw: string): void {
  // one line, of a size a log can hold, whatever an environment value put in it
  const line = printable(clip(raw, MAX_LINE));
  process.stderr.write(line + '\n');
  if (!stateDir) return;
  const path = join(stateDir, 'hooks.log');
  try {
    assertSafeStateDir(stateDir);
    if (statSync(path).size > MAX_LOG_BYTES) renameSync(path, `${path}.1`);
  } catch {
    /* no log yet, or a folder the store refuses too (its error is the line being logged) */
  }
  try {
    assertSafeStateDir(stateDir);
    const fd = openSync(path, APPEND_NOFOLLOW, 0o644);
    try {
      writeSync(fd, line + '\n');
    } finally {
      closeSync(fd);
    }
  } catch {
    /* the hook must not fail because its log cannot be written */
  }
}

/** Entry point of slurm/prolog and slurm/epilog: always exits, within the deadline. */
export function main(kind: HookKind, env: NodeJS.ProcessEnv = process.env): void {
  let strict = false;
  let stateDir: string | undefined;
  let timeoutS = 5;
  let cfg: Config;
  try {
    cfg = hookConfig(env);
    const slurm = readSection(cfg, SLURM_SECTION);
    strict = slurm.hook_strict;
    stateDir = readSection(cfg, DAEMON_SECTION).state_dir;
    timeoutS = slurm.hook_timeout;
  } catch (e) {
    // without a config there is no store to write: say it once, and let the job run
    logLine(undefined, `${new Date().toISOString()} l9gpu ${kind} job ${jobLabel(env)}: ${(e as Error).message}`);
    process.exit(0);
  }
  // the deadline counts from the process start: Node's own start-up and the config are part of it
  const started = Date.now() - process.uptime() * 1000;
  const timer = setTimeout(
    () => {
      logLine(stateDir, `${new Date().toISOString()} l9gpu ${kind} job ${jobLabel(env)}: deadline of ${timeoutS}s passed: giving up`);
      process.exit(strict ? 1 : 0);
    },
    Math.max(0, timeoutS * 1000 - (Date.now() - started)),
  );
  try {
    // leave a quarter second of the deadline to log the failure and exit
    const r = runHook(kind, env, cfg, Date.now(), Math.max(100, Math.round(timeoutS * 1000 - (Date.now() - started) - 250)));
    if (env.L9GPU_HOOK_VERBOSE) logLine(stateDir, `${new Date().toISOString()} l9gpu ${r.message}`);
    clearTimeout(timer);
    process.exit(0);
  } catch (e) {
    // how far into its deadline it gave up: a lock waited out, a slow disk (the time counts from the process's start)
    logLine(
      stateDir,
      `${new Date().toISOString()} l9gpu ${kind} job ${jobLabel(env)}: ${(e as Error).message} ` +
        `(after ${Math.round(Date.now() - started)} ms of ${timeoutS} s)`,
    );
    clearTimeout(timer);
    process.exit(strict ? 1 : 0);
  }
}
