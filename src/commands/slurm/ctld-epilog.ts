import { Command } from '@oclif/core';
import { reportingCliErrors } from '../../cli/errors.js';
import { ctldEpilog } from '../../cli/ctld-epilog-command.js';
import { CTLD_EPILOG_FLAGS } from '../../cli/ctld-epilog-flags.js';
import { oclifFlags } from '../../cli/oclif-flags.js';

export default class CtldEpilog extends Command {
  static override summary = 'EpilogSlurmctld: keep a finished job\'s GPU summary in its AdminComment, for `l9gpu jobs show` on any login node.';
  static override description = `slurm.conf: EpilogSlurmctld=/opt/l9gpu/slurm/ctld-epilog (runs this as SlurmUser on the controller).
It returns at once and leaves a worker that waits until every node's job-end figures have reached the PromQL backend ([jobs] promql_url), then stores them (scontrol while slurmctld holds the job, else sacctmgr) as "L9G1:" + hex(gzip(JSON)). A comment that is not l9gpu's is never replaced.`;

  static override examples = ['<%= config.bin %> slurm ctld-epilog --job 4242'];

  static override flags = oclifFlags(CTLD_EPILOG_FLAGS);

  async run(): Promise<void> {
    const { flags } = await this.parse(CtldEpilog);
    await reportingCliErrors((code) => this.exit(code), async () => {
      const code = await ctldEpilog(flags);
      if (code) this.exit(code);
    });
  }
}
