/**
 * `l9gpu jobs` and `l9gpu jobs show` (and their Kubernetes names, pods):
 * their bodies, run from the command table (command-table.ts) by the oclif
 * commands and by the light entry that runs them without the CLI framework.
 */
import { CliError } from './errors.js';
import type { FlagsOf } from './flag-spec.js';
import type { JOBS_FLAGS, JOBS_SHOW_FLAGS } from './command-flags.js';
import { askList, jobsContext, parseSince, type JobsContext } from './jobs-context.js';
import { accountingOfMany, hasSacct, showReport } from './job-sources.js';
import { timeLimitNotes, wasteRows, wasteThresholds, type WasteInput } from '../jobs/waste.js';
import { wasteInputsFromPromql } from '../jobs/waste-promql.js';
import { redactUrl } from '../core/redact.js';
import { pricesFrom } from '../jobs/prices.js';
import { renderBy, renderByCsv, renderCsv, renderList, renderReport, renderWaste, renderWasteCsv } from '../jobs/render.js';
import { keyedGroups } from '../jobs/by.js';
import { reportJson } from '../jobs/report-json.js';
import { style } from '../core/text-table.js';
import { JOB_ID } from '../core/job-id.js';
import { checkRequestHeaders } from '../core/config/schema.js';
import { clip, printable } from '../core/printable.js';
import { promqlOptions } from '../jobs/promql-client.js';
import { colorOut, writeOut } from './out.js';

/** A pod as Kubernetes names it: a namespace (a DNS label, at most 63 characters) and a name (a DNS subdomain, at most 253). */
const POD = /^(?=[^/]{1,63}\/)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\/(?=.{1,253}$)[a-z0-9](?:[-.a-z0-9]*[a-z0-9])?$/;

const color = () => style(colorOut());

type ListFlags = FlagsOf<typeof JOBS_FLAGS>;
type ShowFlags = FlagsOf<typeof JOBS_SHOW_FLAGS>;

export async function jobsList(f: ListFlags): Promise<void> {
  const ctx = jobsContext(f.config);
  if (f.waste) return jobsWaste(ctx, f);
  const { rows, user, by, groups } = await askList(
    ctx,
    {
      op: 'list',
      user: f.user ?? null,
      account: f.account ?? null,
      partition: f.partition ?? null,
      state: f.state,
      since: f.since ? parseSince(f.since) : null,
      limit: f.limit,
      by: f.by ?? null,
    },
    pricesFrom(ctx.cfg),
  );
  if (by && groups) {
    if (f.json) writeOut(JSON.stringify(keyedGroups(by, groups), null, 2) + '\n');
    else if (f.csv) writeOut(renderByCsv(groups, by));
    else if (groups.length === 0) writeOut(`no jobs${user ? ` of ${user}` : ''} match on this node\n`);
    else writeOut(renderBy(groups, by, color()));
    return;
  }
  if (f.json) writeOut(JSON.stringify(rows, null, 2) + '\n');
  else if (f.csv) writeOut(renderCsv(rows));
  else if (rows.length === 0) writeOut(`no jobs${user ? ` of ${user}` : ''} match on this node\n`);
  else writeOut(renderList(rows, color()));
}

export async function jobsShow(jobid: string, f: ShowFlags): Promise<void> {
  if (!JOB_ID.test(jobid) && !POD.test(jobid))
    throw new CliError(`"${printable(clip(jobid, 40))}" is not a job id (123 or 122_4) nor a pod (namespace/name)`, 2);
  const ctx = jobsContext(f.config);
  const given = Object.fromEntries((f.header ?? []).map((h) => [h.slice(0, h.indexOf('=')), h.slice(h.indexOf('=') + 1)]));
  try {
    checkRequestHeaders(given);
  } catch (e) {
    throw new CliError(`--header: ${(e as Error).message}`, 2);
  }
  // the configured credentials go to promql_url's origin alone: a --url elsewhere gets only its --header values
  const promql = promqlOptions(ctx.cfg, { url: f.url, window: f.window, headers: given, optional: true });
  const report = await showReport(ctx, jobid, f.source, f.cluster ?? null, promql ?? { url: null, window: f.window });
  if (f.json) writeOut(JSON.stringify(reportJson(report), null, 2) + '\n');
  else writeOut(renderReport(report, color()));
}

/** `l9gpu jobs --waste`: the fold's inputs from the store (or the cluster's from PromQL), their time limits from accounting, folded. */
async function jobsWaste(ctx: JobsContext, f: ListFlags): Promise<void> {
  const since = f.since ? parseSince(f.since) : null;
  let inputs: WasteInput[];
  let where = 'on this node';
  if (f.source === 'promql') {
    const from = since ?? Date.now() - 7 * 86_400_000;
    const window = `${Math.max(60, Math.ceil((Date.now() - from) / 1000))}s`;
    const promql = promqlOptions(ctx.cfg, { url: f.url, window, optional: true });
    if (!promql) throw new CliError('--waste --source promql needs --url (the PromQL API base URL) or [jobs] promql_url', 2);
    try {
      inputs = await wasteInputsFromPromql(promql, ctx.viewer);
    } catch (e) {
      throw new CliError((e as Error).message, 1);
    }
    where = `at ${redactUrl(promql.url)}`;
  } else {
    const a = await askList(
      ctx,
      {
        op: 'list',
        user: f.user ?? null,
        account: f.account ?? null,
        partition: f.partition ?? null,
        state: f.state,
        since,
        limit: f.limit,
        waste: true,
      },
      pricesFrom(ctx.cfg),
    );
    inputs = a.waste ?? [];
  }
  // a time limit is Slurm accounting's alone: asked for the ended jobs together where there is a sacct (none, or one
  // that fails: no time-limit class)
  const ended = inputs.filter((j) => j.state !== 'RUNNING');
  if (ended.length && (await hasSacct(ctx))) {
    try {
      // a job whose accounting lines do not parse has no time-limit class; each different reason said once
      const unread = new Map<string, string[]>();
      const acct = await accountingOfMany(
        ctx,
        ended.map((j) => j.id),
        (id, e) => {
          const why = e.message.replace(/\s+/g, ' ').trim();
          unread.set(why, [...(unread.get(why) ?? []), id]);
        },
      );
      const unknown: string[] = [];
      const said = new Set([...unread.values()].flat());
      for (const j of ended) {
        const a = acct.get(j.id);
        j.time_limit_s = a?.timeLimitS ?? null;
        // not in accounting: slurmdbd not told yet (slurmctld sends job records behind), purged, or not Slurm's
        if (a === undefined && !said.has(j.id)) unknown.push(j.id);
      }
      if (unknown.length) unread.set('not in Slurm accounting (slurmdbd may not have the record yet)', unknown);
      for (const line of timeLimitNotes(unread)) process.stderr.write(line);
    } catch (e) {
      process.stderr.write(`l9gpu: no time-limit class: ${printable(clip((e as Error).message.replace(/\s+/g, ' ').trim(), 300))}\n`);
    }
  }
  const rows = wasteRows(inputs, wasteThresholds(ctx.cfg));
  if (f.json) writeOut(JSON.stringify(rows, null, 2) + '\n');
  else if (f.csv) writeOut(renderWasteCsv(rows));
  else if (rows.length === 0) writeOut(`no job wasted GPU-hours ${where}${inputs.length ? ` (${inputs.length} job(s) looked at)` : ''}\n`);
  else writeOut(renderWaste(rows, color()));
}
