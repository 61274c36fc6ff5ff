import { Command } from '@oclif/core';
import { reportingCliErrors } from '../cli/errors.js';
import { health } from '../cli/health-command.js';
import { HEALTH_FLAGS } from '../cli/health-flags.js';
import { oclifFlags } from '../cli/oclif-flags.js';

export default class Health extends Command {
  static override summary = 'Health of this node\'s GPUs: each one ok, warning or failed, the reasons in words and what to do.';
  static override description = `As the daemon last judged them by the rules of docs/health.md (Xids by NVIDIA's catalog, uncorrected ECC and its trend, remapped rows, retired pages, PCIe replays, thermal and power-brake throttling, lost GPUs).
--nhc prints one line and exits 1 when a GPU failed: for NHC, or for slurm.conf HealthCheckProgram with --drain, so a failed GPU drains its node through Slurm (and a node l9gpu drained resumes once healthy).`;

  static override examples = [
    '<%= config.bin %> health',
    '<%= config.bin %> health --json',
    '<%= config.bin %> health --nhc --drain    # slurm.conf: HealthCheckProgram=/usr/local/sbin/l9gpu-healthcheck',
    '<%= config.bin %> health --clear GPU-5c1e4c8a    # after a GPU reset or repair',
  ];

  static override flags = oclifFlags(HEALTH_FLAGS);

  async run(): Promise<void> {
    const { flags } = await this.parse(Health);
    await reportingCliErrors((code) => this.exit(code), async () => {
      const code = await health(flags);
      if (code) this.exit(code);
    });
  }
}
