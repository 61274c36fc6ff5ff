import { Command, Flags } from '@oclif/core';
import { reportingCliErrors } from '../../cli/errors.js';
import { askJobs, jobsContext, parseSince } from '../../cli/jobs-context.js';
import { configFlag } from '../../cli/oclif-flags.js';
import { renderCsv, renderList } from '../../jobs/render.js';
import { style } from '../../core/text-table.js';

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
      const { rows, user } = await askJobs(ctx, { op: 'list', user: flags.user ?? null, account: flags.account ?? null, partition: flags.partition ?? null, state: flags.state as 'all', since: flags.since ? parseSince(flags.since) : null, limit: flags.limit }).then((a) => a as Extract<typeof a, { op: 'list' }>);
      if (flags.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      else if (flags.csv) process.stdout.write(renderCsv(rows));
      else if (rows.length === 0) process.stdout.write(`no jobs${user ? ` of ${user}` : ''} match on this node\n`);
      else process.stdout.write(renderList(rows, style(process.stdout.isTTY === true && !process.env.NO_COLOR)));
    });
  }
}
