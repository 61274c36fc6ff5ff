/**
 * `l9gpu slurm ctld-epilog`: as EpilogSlurmctld, queues the finished GPU job
 * and starts the worker where none runs, and exits 0 at once (whatever
 * happens: an epilog's failure is not the job's); --worker (set by the
 * epilog) drains the queue; with --job, does the work in the foreground for
 * one finished job.
 */
import { loadCliConfig } from './config.js';
import { CliError } from './errors.js';
import { JOB_ID, RAW_JOB_ID } from '../core/job-id.js';
import { clip, printable } from '../core/printable.js';
import type { FlagsOf } from './flag-spec.js';
import type { CTLD_EPILOG_FLAGS } from './command-flags.js';
import { enqueueEnded, epilogJob, storeSummary } from '../../slurm/ctld-epilog.js';
import { DEFAULT_BACKLOG } from '../../slurm/ctld-queue.js';
import { DEFAULT_CONFIG_PATH } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { DAEMON_SECTION } from '../core/config/sections.js';
import { sacctJob } from '../../slurm/sacct-job.js';
import { slurmCommand } from '../../slurm/tools.js';
import { writeOut } from './out.js';

export async function ctldEpilog(f: FlagsOf<typeof CTLD_EPILOG_FLAGS>): Promise<number> {
  const id = f.job;
  if (id) {
    const cfg = loadCliConfig(f.config);
    if (!JOB_ID.test(id)) throw new CliError(`--job: "${printable(clip(id, 40))}" is not a job id (123 or 122_4)`, 2);
    const rawFlag = f['raw-id'];
    if (rawFlag !== undefined && !RAW_JOB_ID.test(rawFlag))
      throw new CliError(`--raw-id: "${printable(clip(rawFlag, 40))}" is not a raw job id (123)`, 2);
    let raw = rawFlag ?? (id.includes('_') ? undefined : id);
    if (!raw) {
      const s = await sacctJob(id, { run: (c, a, e) => slurmCommand(cfg, c, a, e) });
      if (!s) throw new CliError(`--job ${id}: accounting has no such job`, 1);
      raw = s.jobIdRaw;
    }
    const r = await storeSummary(cfg, { rawId: raw, acctId: id });
    writeOut(`${f.worker ? `${new Date().toISOString()} ` : ''}${r.detail}\n`);
    return r.stored ? 0 : 1;
  }
  const configArgs = f.config ? ['--config', f.config] : [];
  if (f.worker) {
    const cfg = loadCliConfig(f.config);
    const stateDir = readSection(cfg, DAEMON_SECTION).state_dir;
    const { ctldLog } = await import('../../slurm/ctld-log.js');
    const { runWorker } = await import('../../slurm/ctld-worker.js');
    const log = ctldLog(stateDir);
    const r = await runWorker(cfg, { stateDir, log, lingerMs: lingerMs(process.env.L9GPU_CTLD_LINGER) });
    if (r.ran) log(`worker ${process.pid}: the queue is empty: ${r.stored} summary(ies) stored, ${r.other} job(s) with nothing stored`);
    return 0;
  }
  // as EpilogSlurmctld: whatever goes wrong (a bad config file too) is said on stderr, for slurmctld's log, and exits 0
  try {
    const job = epilogJob(process.env);
    if (job) {
      const cap = backlogCap(process.env.L9GPU_CTLD_BACKLOG);
      const r = enqueueEnded(
        loadCliConfig(f.config),
        process.env,
        job,
        process.argv[1]!,
        configArgs,
        cap,
        f.config ? undefined : process.env.L9GPU_CONFIG || DEFAULT_CONFIG_PATH,
      );
      if (r.outcome === 'dropped')
        process.stderr.write(`l9gpu ctld-epilog: job ${job.acctId} not queued: the queue holds ${cap} jobs already\n`);
    }
  } catch (e) {
    process.stderr.write(`l9gpu ctld-epilog: ${(e as Error).message}\n`);
  }
  return 0;
}

/** How long an idle worker waits for more jobs: L9GPU_CTLD_LINGER seconds where set (0 and up), else the worker's default. */
function lingerMs(v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 && n <= 3600 ? n * 1000 : undefined;
}

/** The queue's cap: L9GPU_CTLD_BACKLOG where set (a positive integer), else DEFAULT_BACKLOG. */
function backlogCap(v: string | undefined): number {
  if (v === undefined || v === '') return DEFAULT_BACKLOG;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`L9GPU_CTLD_BACKLOG: "${printable(clip(v, 20))}" is not a positive whole number of jobs`);
  return n;
}
