import { Command } from '@oclif/core';

export default class SlurmProlog extends Command {
  static override summary = 'Slurm Prolog: record the job and its GPUs (by UUID) in the local store.';
  static override description = `Run by slurmd as root with the job's environment (set Prolog=/Epilog= in slurm.conf to slurm/prolog, or to a wrapper that runs \`l9gpu slurm prolog\`).
Reads only the slurmd environment and [daemon]/[slurm] of the configuration; runs no Slurm command; loads neither OpenTelemetry nor this CLI framework (bin/run.js starts it directly).
Always exits 0 (an error is logged to stderr and <state_dir>/hooks.log) unless [slurm] hook_strict = true, and ends within [slurm] hook_timeout: a failing or slow hook would drain the node.`;

  static override examples = ['<%= config.bin %> slurm prolog   # from slurm.conf: Prolog=/opt/l9gpu/slurm/prolog'];

  async run(): Promise<void> {
    // reached only through oclif (bin/run.js runs the hook directly); same code either way
    const { main } = await import('../../../slurm/hook.js');
    main('prolog');
  }
}
