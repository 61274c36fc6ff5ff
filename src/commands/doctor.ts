import { Command } from '@oclif/core';
import { doctor } from '../cli/doctor-command.js';
import { DOCTOR_FLAGS } from '../cli/doctor-flags.js';
import { reportingCliErrors } from '../cli/errors.js';
import { oclifFlags } from '../cli/oclif-flags.js';

export default class Doctor extends Command {
  static override summary = 'Report the environment: configuration and where each value came from, plugins and their sources, sinks, store.';
  static override description = `Reads the configuration exactly as the daemon would (same file, environment and precedence) and checks, without sending any data, whether each enabled plugin's source and each enabled sink's destination is usable.
Exit codes: 0 all enabled parts usable, 1 a problem was found, 2 bad configuration.`;

  static override examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --config /etc/l9gpu/l9gpu.ini --json'];

  static override flags = oclifFlags(DOCTOR_FLAGS);

  async run(): Promise<void> {
    const { flags } = await this.parse(Doctor);
    await reportingCliErrors((code) => this.exit(code), async () => {
      const code = await doctor(flags);
      if (code) this.exit(code);
    });
  }
}

