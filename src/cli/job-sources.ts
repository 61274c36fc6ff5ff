/**
 * Where `l9gpu jobs show` finds a job, in the order a user on any machine
 * expects: this node's store (the job ran here), then Slurm accounting (the
 * summary the slurmctld epilog left in the job's AdminComment: any login
 * node, long after the metrics are gone), then a PromQL backend. Whatever the
 * figures' source, sacct has the last word on the header (state, exit code,
 * QOS, CPU cores, memory, time limit) when it can be asked.
 */
import { AccessDenied, CliError } from './errors.js';
import { askJobs, type JobsContext } from './jobs-context.js';
import { findTool } from '../core/tool.js';
import { reportFromPromql } from '../jobs/promql.js';
import { pricesFrom } from '../jobs/prices.js';
import type { JobReport } from '../jobs/report-model.js';
import { headerFromSacct, withSacct, type SacctJob } from '../jobs/slurm-header.js';
import { decodeSummary, reportFromSummary } from '../jobs/summary.js';
import { sacctJob } from '../../slurm/sacct-job.js';
import { SLURM_DIRS, slurmCommand } from '../../slurm/tools.js';

export type ShowSource = 'auto' | 'store' | 'sacct' | 'promql';

export interface PromqlTarget {
  url: string | null;
  window: string;
  headers: Record<string, string>;
}

/** The job's accounting record, undefined where there is no sacct or no such job; errors of a present sacct are the caller's. */
export async function accountingOf(ctx: JobsContext, jobId: string, cluster: string | null): Promise<SacctJob | undefined> {
  const binDir = ctx.cfg.str('slurm', 'bin_dir');
  if (!findTool('sacct', SLURM_DIRS, binDir ? [binDir] : [])) return undefined;
  return sacctJob(jobId, { run: (c, a, e) => slurmCommand(ctx.cfg, c, a, e), cluster });
}

async function fromPromql(ctx: JobsContext, jobId: string, t: PromqlTarget): Promise<JobReport> {
  if (!t.url) throw new CliError('--source promql needs --url (the PromQL API base URL) or [jobs] promql_url', 2);
  let report: JobReport | undefined;
  try {
    report = await reportFromPromql({ url: t.url, window: t.window, headers: t.headers }, jobId, pricesFrom(ctx.cfg));
  } catch (e) {
    // the endpoint's doing (down, refusing, an answer too large): one line, not a stack
    throw new CliError((e as Error).message, 1);
  }
  if (!report) throw new CliError(`no GPU metrics of job ${jobId} at ${t.url} in the last ${t.window} (are the daemons exporting there with slurm attribution?)`, 1);
  return report;
}

function fromSummary(ctx: JobsContext, acct: SacctJob): JobReport | undefined {
  let s: ReturnType<typeof decodeSummary>;
  try {
    s = decodeSummary(acct.adminComment, `job ${acct.jobId}`);
  } catch (e) {
    // accounting's record, not this program, is what is wrong: one line
    throw new CliError((e as Error).message, 1);
  }
  return s ? reportFromSummary(s, headerFromSacct(acct), pricesFrom(ctx.cfg)) : undefined;
}

/** The report, and the accounting record it was checked against (when sacct answered). */
export async function findReport(ctx: JobsContext, jobId: string, source: ShowSource, cluster: string | null, promql: PromqlTarget): Promise<JobReport> {
  let acct: SacctJob | undefined;
  let acctError: string | undefined;
  const account = async () => {
    try {
      acct = await accountingOf(ctx, jobId, cluster);
    } catch (e) {
      // sacct's own message may run over lines: the CLI's error is one
      acctError = (e as Error).message.replace(/\s+/g, ' ').trim();
      if (source === 'sacct') throw new CliError(acctError, 1);
    }
    return acct;
  };
  let report: JobReport | undefined;
  let storeError: string | undefined;
  let summaryError: string | undefined;
  if (source === 'store' || (source === 'auto' && !cluster)) {
    try {
      report = ((await askJobs(ctx, { op: 'show', jobId })) as { report: JobReport }).report;
    } catch (e) {
      if (source === 'store' || !(e instanceof CliError) || e.exitCode !== 1 || e instanceof AccessDenied) throw e;
      storeError = e.message;
    }
  }
  if (!report && (source === 'sacct' || source === 'auto')) {
    await account();
    try {
      if (acct) report = fromSummary(ctx, acct);
    } catch (e) {
      // auto: a backend may still have the job
      if (source === 'sacct' || !(e instanceof CliError)) throw e;
      summaryError = e.message;
    }
    if (!report && source === 'sacct') throw new CliError(acct ? `job ${jobId} has no l9gpu summary in its AdminComment (is EpilogSlurmctld set to l9gpu's ctld-epilog, with [jobs] promql_url?)` : `Slurm accounting has no job ${jobId}${cluster ? ` on cluster ${cluster}` : ''}`, 1);
  }
  let promqlError: string | undefined;
  if (!report && source === 'promql') report = await fromPromql(ctx, jobId, promql);
  if (!report && source === 'auto' && promql.url) {
    try {
      report = await fromPromql(ctx, jobId, promql);
    } catch (e) {
      if (!(e instanceof CliError) || e.exitCode !== 1) throw e;
      promqlError = e.message;
    }
  }
  if (!report) {
    const why = [storeError, acctError ? `sacct: ${acctError}` : summaryError ?? (acct ? 'Slurm accounting has the job but no l9gpu summary in its AdminComment' : 'Slurm accounting does not know it (or there is no sacct here)'), promqlError].filter(Boolean).join('; ');
    throw new CliError(promqlError ? why : `${why}. From the metrics backend: l9gpu jobs show ${jobId} --source promql --url <your Prometheus/VictoriaMetrics URL> (or set [jobs] promql_url)`, 1);
  }
  // a header from accounting for a report from the store or a backend (asked once: not if the search above did)
  if (report.source !== 'sacct' && acct === undefined && acctError === undefined) await account();
  if (acct && report.source !== 'sacct') report = { ...report, job: withSacct(report.job, acct) };
  return report;
}
