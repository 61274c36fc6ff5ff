import { Command } from '@oclif/core';
import { reportingCliErrors } from '../cli/errors.js';
import { gpus } from '../cli/gpus-command.js';
import { GPUS_FLAGS } from '../cli/gpus-flags.js';
import { oclifFlags } from '../cli/oclif-flags.js';

export default class Gpus extends Command {
  static override summary = 'Show every GPU of this node now: identity, utilization, memory, temperature, power, energy, throttling, processes, MIG.';
  static override description = `Samples the GPU plugins once (the same code the daemon runs: nvml, amdsmi, hlsmi, and sim when it is configured) and prints one row per GPU, or stable JSON with --json.
GPUs are keyed by UUID; index is the vendor's enumeration order, which may differ from Slurm's GRES index and from /dev/nvidiaN.`;

  static override examples = ['<%= config.bin %> gpus', '<%= config.bin %> gpus --json | jq \'.gpus[] | {uuid, utilization}\''];

  static override flags = oclifFlags(GPUS_FLAGS);

  async run(): Promise<void> {
    const { flags } = await this.parse(Gpus);
    await reportingCliErrors((code) => this.exit(code), async () => {
      const code = await gpus(flags);
      if (code) this.exit(code);
    });
  }
}

