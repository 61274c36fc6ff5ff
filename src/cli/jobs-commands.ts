/**
 * `l9gpu jobs` and `l9gpu jobs show`: their flags as data and their bodies,
 * shared by the oclif commands (help, error messages) and the light entry
 * (light-main.ts) that runs them without the CLI framework.
 */
import { AccessDenied, CliError } from './errors.js';
import { CONFIG_FLAG, type FlagSpec, type FlagValues } from './flag-spec.js';
import { askJobs, jobsContext, parseSince } from './jobs-context.js';
import { accessError } from '../jobs/api.js';
import { findReport, type ShowSource } from './job-sources.js';
import { slurmNotes } from '../jobs/slurm-notes.js';
import { siteNotesFrom } from '../jobs/site-notes.js';
import { renderBy, renderByCsv, renderCsv, renderList, renderReport } from '../jobs/render.js';
import { GROUP_BY, keyedGroups, type GroupBy } from '../jobs/by.js';
import { peakFor, withPeak } from '../jobs/communication.js';
import { style } from '../core/text-table.js';
import { JOB_ID } from '../core/job-id.js';
import { checkRequestHeaders } from '../core/config/schema.js';
import { clip, printable } from '../core/printable.js';

export const JOBS_FLAGS: readonly FlagSpec[] = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON.', exclusive: ['csv'] },
  { name: 'csv', type: 'boolean', description: 'Print CSV.', exclusive: ['json'] },
  { name: 'user', type: 'string', char: 'u', helpValue: 'USER', description: 'Only this user\'s jobs (others\' need root or [jobs] admin_group).' },
  { name: 'state', type: 'string', options: ['running', 'completed', 'all'], default: 'all', description: 'Running jobs, ended ones, or all.' },
  { name: 'since', type: 'string', helpValue: 'TIME', description: 'Jobs started at or after TIME: 2026-11-01, 2026-11-01T08:00, 24h, 7d.' },
  { name: 'account', type: 'string', char: 'A', helpValue: 'ACCOUNT', description: 'Only this Slurm account.' },
  { name: 'partition', type: 'string', char: 'p', helpValue: 'PARTITION', description: 'Only this partition.' },
  { name: 'limit', type: 'integer', default: 100, min: 0, description: 'At most this many jobs, or groups with --by (0: all).' },
  {
    name: 'by', type: 'string', options: GROUP_BY, helpValue: 'user|account|partition|name',
    description: 'One row per user, account, partition or job name (in Kubernetes mode: namespace = account, workload = name) over every matching job (--limit caps the groups): jobs, GPU-hours, idle GPU-hours (each GPU\'s GPU-hours x (1 - its mean utilization)), mean utilization, energy, cost, CO2e.',
  },
];

export const JOBS_SHOW_FLAGS: readonly FlagSpec[] = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON.' },
  { name: 'source', type: 'string', options: ['auto', 'store', 'sacct', 'promql'], default: 'auto', description: 'Where the figures come from. auto: this node\'s store if the job ran here, else the summary the slurmctld epilog left in the job\'s AdminComment (sacct), else the PromQL backend (--url or [jobs] promql_url).' },
  { name: 'url', type: 'string', helpValue: 'URL', description: 'PromQL API base URL, e.g. http://victoria:8428 or http://prometheus:9090 (default: [jobs] promql_url).' },
  { name: 'window', type: 'string', default: '30d', helpValue: 'RANGE', description: 'With --source promql: how far back to look for the job (a PromQL range: 7d, 30d).' },
  { name: 'header', type: 'string', multiple: true, whole: true, helpValue: 'K=V', description: 'With --source promql: an HTTP header (Authorization=Bearer ..., X-Scope-OrgID=...).' },
  { name: 'cluster', type: 'string', char: 'M', helpValue: 'CLUSTER', description: 'The Slurm cluster whose accounting holds the job (sacct -M, as in Slurm\'s own commands); default: the local cluster.' },
];

/** A pod as Kubernetes names it: a namespace (a DNS label, at most 63 characters) and a name (a DNS subdomain, at most 253). */
const POD = /^(?=[^/]{1,63}\/)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\/(?=.{1,253}$)[a-z0-9](?:[-.a-z0-9]*[a-z0-9])?$/;

const color = () => style(process.stdout.isTTY === true && !process.env.NO_COLOR);

export async function jobsList(f: FlagValues): Promise<void> {
  const ctx = jobsContext(f.config as string | undefined);
  const answer = await askJobs(ctx, {
    op: 'list', user: (f.user as string) ?? null, account: (f.account as string) ?? null, partition: (f.partition as string) ?? null,
    state: f.state as 'all', since: f.since ? parseSince(f.since as string) : null, limit: f.limit as number, by: (f.by as GroupBy | undefined) ?? null,
  });
  const { rows, user, by, groups } = answer as Extract<typeof answer, { op: 'list' }>;
  if (by && groups) {
    if (f.json) process.stdout.write(JSON.stringify(keyedGroups(by, groups), null, 2) + '\n');
    else if (f.csv) process.stdout.write(renderByCsv(groups, by));
    else if (groups.length === 0) process.stdout.write(`no jobs${user ? ` of ${user}` : ''} match on this node\n`);
    else process.stdout.write(renderBy(groups, by, color()));
    return;
  }
  if (f.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
  else if (f.csv) process.stdout.write(renderCsv(rows));
  else if (rows.length === 0) process.stdout.write(`no jobs${user ? ` of ${user}` : ''} match on this node\n`);
  else process.stdout.write(renderList(rows, color()));
}

export async function jobsShow(jobid: string, f: FlagValues): Promise<void> {
  if (!JOB_ID.test(jobid) && !POD.test(jobid)) throw new CliError(`"${printable(clip(jobid, 40))}" is not a job id (123 or 122_4) nor a pod (namespace/name)`, 2);
  const ctx = jobsContext(f.config as string | undefined);
  const given = Object.fromEntries(((f.header as string[]) ?? []).map((h) => [h.slice(0, h.indexOf('=')), h.slice(h.indexOf('=') + 1)]));
  try {
    checkRequestHeaders(given);
  } catch (e) {
    throw new CliError(`--header: ${(e as Error).message}`, 2);
  }
  const headers = { ...ctx.cfg.map('jobs', 'promql_headers'), ...given };
  const url = (f.url as string | undefined) ?? ctx.cfg.str('jobs', 'promql_url');
  let report = await findReport(ctx, jobid, f.source as ShowSource, (f.cluster as string | undefined) ?? null, { url, window: f.window as string, headers });
  // this node's store answered under its own rule; a report from accounting or a backend is checked here
  const denied = report.source === 'store' ? undefined : accessError(report, ctx.viewer);
  if (denied) throw new AccessDenied(denied);
  report = withPeak(report, peakFor(ctx.cfg, report.job.partition));
  report = { ...report, notes: [...report.notes, ...slurmNotes(report.job, report.gpus, report.totals, siteNotesFrom(ctx.cfg))] };
  if (f.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  else process.stdout.write(renderReport(report, color()));
}
