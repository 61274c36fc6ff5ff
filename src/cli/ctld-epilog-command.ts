/**
 * `l9gpu slurm ctld-epilog`: as EpilogSlurmctld, starts the worker that keeps
 * the finished job's GPU summary in its AdminComment and exits 0 at once
 * (whatever happens: an epilog's failure is not the job's); with --job, does
 * that work in the foreground for one finished job.
 */
import { loadCliConfig } from './config.js';
import { CliError } from './errors.js';
import { JOB_ID, RAW_JOB_ID } from '../core/job-id.js';
import { clip, printable } from '../core/printable.js';
import type { FlagValues } from './flag-spec.js';
import { epilogJob, startWorker, storeSummary } from '../../slurm/ctld-epilog.js';
import { sacctJob } from '../../slurm/sacct-job.js';
import { slurmCommand } from '../../slurm/tools.js';
import { writeOut } from './out.js';


export async function ctldEpilog(f: FlagValues): Promise<number> {
  const id = f.job as string | undefined;
  if (id) {
    const cfg = loadCliConfig(f.config as string | undefined);
    if (!JOB_ID.test(id)) throw new CliError(`--job: "${printable(clip(id, 40))}" is not a job id (123 or 122_4)`, 2);
    const rawFlag = f['raw-id'] as string | undefined;
    if (rawFlag !== undefined && !RAW_JOB_ID.test(rawFlag)) throw new CliError(`--raw-id: "${printable(clip(rawFlag, 40))}" is not a raw job id (123)`, 2);
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
  // as EpilogSlurmctld: whatever goes wrong (a bad config file too) is said on stderr, for slurmctld's log, and exits 0
  try {
    const job = epilogJob(process.env);
    if (job) startWorker(loadCliConfig(f.config as string | undefined), job, process.argv[1]!, f.config ? ['--config', f.config as string] : []);
  } catch (e) {
    process.stderr.write(`l9gpu ctld-epilog: ${(e as Error).message}\n`);
  }
  return 0;
}
