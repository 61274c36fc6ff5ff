import { Args, Command } from '@oclif/core';
import { reportingCliErrors } from '../../cli/errors.js';
import { JOBS_SHOW_FLAGS, jobsShow } from '../../cli/jobs-commands.js';
import { oclifFlags } from '../../cli/oclif-flags.js';

/** `l9gpu jobs show` under its Kubernetes name. */
export default class PodsShow extends Command {
  static override summary = 'How a pod used its GPUs: utilization, memory, energy, power, throttling, Xids, a plot and notes.';
  static override description = 'The report of one pod run from this node\'s store: its namespace, uid, workload and promoted labels, then the same figures as a Slurm job\'s report.';
  static override examples = ['<%= config.bin %> pods show ml-train/llama-ft-7d9f8c6b5-x2x9p', '<%= config.bin %> pods show ml-train/vllm-serve-0 --json'];
  static override args = { pod: Args.string({ required: true, description: 'namespace/pod' }) };
  static override flags = oclifFlags(JOBS_SHOW_FLAGS);

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PodsShow);
    await reportingCliErrors((code) => this.exit(code), () => jobsShow(args.pod, flags));
  }
}
