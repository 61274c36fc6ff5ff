/**
 * A row of the command table as an oclif command (help, error messages, and
 * the run of whatever bin/run.js does not start itself). Each file in
 * src/commands/ is one call of this: oclif finds commands by file.
 */
import { Args, Command } from '@oclif/core';
import { commandSpec } from './command-table.js';
import { DAEMON_FLAGS } from './daemon-flags.js';
import { typedFlags } from './flag-spec.js';
import { reportingCliErrors } from './errors.js';
import { oclifFlags } from './oclif-flags.js';

export function oclifCommand(id: string): typeof Command {
  const spec = commandSpec(id);
  const hook = spec.entry === 'hook' ? (spec.id.split(' ')[1] as 'prolog' | 'epilog') : undefined;
  return class extends Command {
    static override summary = spec.summary;
    static override description = spec.description;
    static override examples = [...spec.examples];
    static override args = spec.arg ? { [spec.arg.name]: Args.string({ required: true, description: spec.arg.description }) } : {};
    static override flags = oclifFlags(spec.flags);

    async run(): Promise<void> {
      const { args, flags } = await this.parse(this.constructor as typeof Command);
      if (spec.entry === 'daemon') {
        const { runDaemon } = await import('./run-daemon.js');
        await runDaemon(typedFlags(DAEMON_FLAGS, flags));
      } else if (hook) {
        const { main } = await import('../../slurm/hook.js');
        main(hook);
      } else {
        const positional = spec.arg ? [String(args[spec.arg.name])] : [];
        await reportingCliErrors(
          (code) => this.exit(code),
          async () => {
            const code = await spec.run!(flags, positional);
            if (code) this.exit(code);
          },
        );
      }
    }
  };
}
