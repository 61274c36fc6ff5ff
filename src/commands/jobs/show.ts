import { Args, Command } from '@oclif/core';
import { reportingCliErrors } from '../../cli/errors.js';
import { JOBS_SHOW_FLAGS, jobsShow } from '../../cli/jobs-commands.js';
import { oclifFlags } from '../../cli/oclif-flags.js';

export default class JobsShow extends Command {
  static override summary = 'How a job used its GPUs: utilization, memory, energy, power, throttling, Xids, a plot and notes.';
  static override description = `The report a user or support engineer reads. From this node's store by default (the job's GPUs on this node);
with --source promql --url URL, from the metrics every node's daemon exported to Prometheus, VictoriaMetrics, Mimir or Last9:
the whole multi-node job, per node, with the same figures and notes.`;

  static override examples = ['<%= config.bin %> jobs show 4242', '<%= config.bin %> jobs show 4242_7 --json', '<%= config.bin %> jobs show 4242 --source promql --url http://victoria:8428'];

  static override args = { jobid: Args.string({ required: true, description: 'Job id, or ARRAYID_TASKID.' }) };

  static override flags = oclifFlags(JOBS_SHOW_FLAGS);

  async run(): Promise<void> {
    const { args, flags } = await this.parse(JobsShow);
    await reportingCliErrors((code) => this.exit(code), () => jobsShow(args.jobid, flags));
  }
}
