import { Command } from '@oclif/core';
import { reportingCliErrors } from '../../cli/errors.js';
import { JOBS_FLAGS, jobsList } from '../../cli/jobs-commands.js';
import { oclifFlags } from '../../cli/oclif-flags.js';

export default class Jobs extends Command {
  static override summary = 'List jobs that used GPUs on this node: GPU-hours, utilization, peak memory, energy, cost, problems.';
  static override description = `One row per job run, newest first, from this node's l9gpu store (kept by the Slurm hooks and the daemon).
Users see their own jobs; root and members of [jobs] admin_group see everyone's (--user to pick one).
For one job in detail: l9gpu jobs show <jobid>.`;

  static override examples = [
    '<%= config.bin %> jobs',
    '<%= config.bin %> jobs --state running',
    '<%= config.bin %> jobs --since 7d --account physics --csv > gpu-usage.csv',
    '<%= config.bin %> jobs --by user --since 7d',
    '<%= config.bin %> jobs --user alice --json | jq \'.[] | select(.problems | length > 0)\'',
  ];

  static override flags = oclifFlags(JOBS_FLAGS);

  async run(): Promise<void> {
    const { flags } = await this.parse(Jobs);
    await reportingCliErrors((code) => this.exit(code), () => jobsList(flags));
  }
}
