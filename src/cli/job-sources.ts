/**
 * Where `l9gpu jobs show` finds a job, in the order a user on any machine
 * expects: this node's store (the job ran here), then Slurm accounting (the
 * summary the slurmctld epilog left in the job's AdminComment: any login
 * node, long after the metrics are gone), then a PromQL backend. The
 * sources and the report's finishing are src/jobs/show.ts; this file binds
 * them to the CLI's context (the daemon's socket, sacct) and turns a miss
 * into the command's error.
 */
import { AccessDenied, CliError } from './errors.js';
import { askShow, type JobsContext } from './jobs-context.js';
import { findTool } from '../core/tool.js';
import type { JobReport } from '../jobs/report-model.js';
import type { SacctJob } from '../jobs/accounting.js';
import {
  accountingOnce,
  finishReport,
  firstReport,
  promqlSource,
  reportSettings,
  summarySource,
  type JobSource,
  type SourceName,
} from '../jobs/show.js';
import { sacctJob, sacctJobs } from '../../slurm/sacct-job.js';
import { SLURM_DIRS, slurmCommand } from '../../slurm/tools.js';
import { readSection } from '../core/config/read.js';
import type { PromqlOptions } from '../jobs/promql-client.js';
import { SLURM_SECTION } from '../../slurm/config.js';

export type ShowSource = 'auto' | SourceName;

/** The PromQL backend to ask (promqlOptions), or none configured. */
export type PromqlTarget = PromqlOptions | { url: null; window: string };

/** Whether this machine has a sacct to ask ([slurm] bin_dir, then Slurm's usual places). */
export async function hasSacct(ctx: JobsContext): Promise<boolean> {
  const binDir = readSection(ctx.cfg, SLURM_SECTION).bin_dir;
  return !!findTool('sacct', SLURM_DIRS, binDir ? [binDir] : []);
}

/** The job's accounting record, undefined where there is no sacct or no such job; errors of a present sacct are the caller's. */
export async function accountingOf(ctx: JobsContext, jobId: string, cluster: string | null): Promise<SacctJob | undefined> {
  if (!(await hasSacct(ctx))) return undefined;
  return sacctJob(jobId, { run: (c, a, e) => slurmCommand(ctx.cfg, c, a, e), cluster, name: true });
}

/** The accounting records of many jobs, in a few sacct calls (sacctJobs); the caller has checked there is a sacct. */
export function accountingOfMany(
  ctx: JobsContext,
  jobIds: readonly string[],
  onError?: (id: string, e: Error) => void,
): Promise<Map<string, SacctJob | undefined>> {
  return sacctJobs(jobIds, { run: (c, a, e) => slurmCommand(ctx.cfg, c, a, e), cluster: null, ...(onError ? { onError } : {}) });
}

/** This node's store: a job it does not know (or a daemon that does not answer) is a miss; a job the asker may not see ends the search. */
function storeSource(ctx: JobsContext): JobSource {
  return {
    name: 'store',
    async find(jobId, settings) {
      try {
        return { report: await askShow(ctx, jobId, settings.prices) };
      } catch (e) {
        if (!(e instanceof CliError) || e.exitCode !== 1 || e instanceof AccessDenied) throw e;
        return { miss: { why: e.message } };
      }
    },
  };
}

/** The finished report of `jobs show --source <source>`, or the command's error naming why each source asked has none. */
export async function showReport(
  ctx: JobsContext,
  jobId: string,
  source: ShowSource,
  cluster: string | null,
  promql: PromqlTarget,
): Promise<JobReport> {
  if (source === 'promql' && !promql.url)
    throw new CliError('--source promql needs --url (the PromQL API base URL) or [jobs] promql_url', 2);
  const settings = reportSettings(ctx.cfg);
  const accounting = accountingOnce(() => accountingOf(ctx, jobId, cluster));
  const all: Record<SourceName, JobSource | null> = {
    // --cluster names another cluster's job: this node's store has none of it
    store: source === 'auto' && cluster ? null : storeSource(ctx),
    sacct: summarySource(accounting, cluster),
    promql: promql.url !== null ? promqlSource(promql as PromqlOptions) : null,
  };
  const sources = (source === 'auto' ? Object.values(all) : [all[source]]).filter((s): s is JobSource => s !== null);
  const found = await firstReport(jobId, sources, settings);
  if ('misses' in found) {
    if (source !== 'auto') throw new CliError(found.misses[0]!.alone ?? found.misses[0]!.why, 1);
    const why = found.misses.map((m) => m.why).join('; ');
    throw new CliError(
      all.promql
        ? why
        : `${why}. From the metrics backend: l9gpu jobs show ${jobId} --source promql --url <your ` +
            `Prometheus/VictoriaMetrics URL> (or set [jobs] promql_url)`,
      1,
    );
  }
  // a header from accounting for a report from the store or a backend (asked once: not again if the summary source did)
  const acct = await accounting().catch(() => undefined);
  const done = finishReport(found.report, acct, settings, ctx.viewer);
  if ('denied' in done) throw new AccessDenied(done.denied);
  return done.report;
}
