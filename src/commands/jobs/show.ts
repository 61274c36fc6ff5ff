import { Args, Command, Flags } from '@oclif/core';
import { CliError, reportingCliErrors } from '../../cli/errors.js';
import { askJobs, jobsContext } from '../../cli/jobs-context.js';
import { accessError } from '../../jobs/api.js';
import { configFlag } from '../../cli/oclif-flags.js';
import { reportFromPromql } from '../../jobs/promql.js';
import { renderReport } from '../../jobs/render.js';
import { style } from '../../core/text-table.js';
import { pricesFrom } from '../../jobs/report.js';
import type { JobReport } from '../../jobs/report-model.js';

export default class JobsShow extends Command {
  static override summary = 'How a job used its GPUs: utilization, memory, energy, power, throttling, Xids, a plot and notes.';
  static override description = `The report a user or support engineer reads. From this node's store by default (the job's GPUs on this node);
with --source promql --url URL, from the metrics every node's daemon exported to Prometheus, VictoriaMetrics, Mimir or Last9:
the whole multi-node job, per node, with the same figures and notes.`;

  static override examples = ['<%= config.bin %> jobs show 4242', '<%= config.bin %> jobs show 4242_7 --json', '<%= config.bin %> jobs show 4242 --source promql --url http://victoria:8428'];

  static override args = { jobid: Args.string({ required: true, description: 'Job id, or ARRAYID_TASKID.' }) };

  static override flags = {
    config: configFlag,
    json: Flags.boolean({ description: 'Print JSON.' }),
    source: Flags.string({ options: ['store', 'promql'], default: 'store', description: 'Where the figures come from.' }),
    url: Flags.string({ helpValue: 'URL', description: 'PromQL API base URL (with --source promql), e.g. http://victoria:8428 or http://prometheus:9090.' }),
    window: Flags.string({ default: '30d', helpValue: 'RANGE', description: 'With --source promql: how far back to look for the job (a PromQL range: 7d, 30d).' }),
    header: Flags.string({ multiple: true, helpValue: 'K=V', description: 'With --source promql: an HTTP header (Authorization=Bearer ..., X-Scope-OrgID=...).' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(JobsShow);
    await reportingCliErrors((code) => this.exit(code), async () => {
      if (!/^\d+(_\d+)?$/.test(args.jobid)) throw new CliError(`"${args.jobid}" is not a job id (123 or 122_4)`, 2);
      const ctx = jobsContext(flags.config);
      const prices = pricesFrom(ctx.cfg);
      let report: JobReport | undefined;
      if (flags.source === 'promql') {
        if (!flags.url) throw new CliError('--source promql needs --url (the PromQL API base URL)', 2);
        const headers = Object.fromEntries((flags.header ?? []).map((h) => [h.slice(0, h.indexOf('=')), h.slice(h.indexOf('=') + 1)]));
        report = await reportFromPromql({ url: flags.url, window: flags.window, headers }, args.jobid, prices);
        if (!report) throw new CliError(`no GPU metrics of job ${args.jobid} at ${flags.url} in the last ${flags.window} (are the daemons exporting there with slurm attribution?)`, 1);
        const denied = accessError(report, ctx.viewer);
        if (denied) throw new CliError(denied, 1);
      } else {
        report = ((await askJobs(ctx, { op: 'show', jobId: args.jobid })) as { report: JobReport }).report;
      }
      if (flags.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
      else process.stdout.write(renderReport(report, style(process.stdout.isTTY === true && !process.env.NO_COLOR)));
    });
  }
}
