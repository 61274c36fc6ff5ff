import { Command, Flags } from '@oclif/core';
import { CliError, reportingCliErrors } from '../../cli/errors.js';
import { jobsContext, openJobsStore, parseSince } from '../../cli/jobs-context.js';
import { configFlag } from '../../cli/oclif-flags.js';
import { listJobs } from '../../jobs/list.js';
import { renderCsv, renderList } from '../../jobs/render.js';
import { style } from '../../core/text-table.js';
import { pricesFrom } from '../../jobs/report.js';

export default class Jobs extends Command {
  static override summary = 'List jobs that used GPUs on this node: GPU-hours, utilization, peak memory, energy, cost, problems.';
  static override description = `One row per job run, newest first, from this node's l9gpu store (kept by the Slurm hooks and the daemon).
Users see their own jobs; root and members of [jobs] admin_group see everyone's (--user to pick one).
For one job in detail: l9gpu jobs show <jobid>.`;

  static override examples = [
    '<%= config.bin %> jobs',
    '<%= config.bin %> jobs --state running',
    '<%= config.bin %> jobs --since 7d --account physics --csv > gpu-usage.csv',
    '<%= config.bin %> jobs --user alice --json | jq \'.[] | select(.problems | length > 0)\'',
  ];

  static override flags = {
    config: configFlag,
    json: Flags.boolean({ description: 'Print JSON.', exclusive: ['csv'] }),
    csv: Flags.boolean({ description: 'Print CSV.', exclusive: ['json'] }),
    user: Flags.string({ char: 'u', helpValue: 'USER', description: 'Only this user\'s jobs (others\' need root or [jobs] admin_group).' }),
    state: Flags.string({ options: ['running', 'completed', 'all'], default: 'all', description: 'Running jobs, ended ones, or all.' }),
    since: Flags.string({ helpValue: 'TIME', description: 'Jobs started at or after TIME: 2026-11-01, 2026-11-01T08:00, 24h, 7d.' }),
    account: Flags.string({ char: 'A', helpValue: 'ACCOUNT', description: 'Only this Slurm account.' }),
    partition: Flags.string({ char: 'p', helpValue: 'PARTITION', description: 'Only this partition.' }),
    limit: Flags.integer({ default: 100, min: 0, description: 'At most this many jobs (0: all).' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Jobs);
    await reportingCliErrors((code) => this.exit(code), async () => {
      const ctx = jobsContext(flags.config);
      if (flags.user && flags.user !== ctx.viewer.name && !ctx.viewer.privileged) throw new CliError(`you can only list your own jobs (${ctx.viewer.name}); root and [jobs] admin_group see everyone's`, 1);
      const user = flags.user ?? (ctx.viewer.privileged ? null : ctx.viewer.name);
      const { db, node } = openJobsStore(ctx);
      const rows = listJobs(db, { user, account: flags.account, partition: flags.partition, state: flags.state as 'all', since: flags.since ? parseSince(flags.since) : null, limit: flags.limit }, node, pricesFrom(ctx.cfg));
      db.close();
      if (flags.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      else if (flags.csv) process.stdout.write(renderCsv(rows));
      else if (rows.length === 0) process.stdout.write(`no jobs${user ? ` of ${user}` : ''} match on this node\n`);
      else process.stdout.write(renderList(rows, style(process.stdout.isTTY === true && !process.env.NO_COLOR)));
    });
  }
}
