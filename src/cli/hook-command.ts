import { Command } from '@oclif/core';

const WHAT = {
  prolog: 'Slurm Prolog: record the job and its GPUs (by UUID) in the local store.',
  epilog: "Slurm Epilog: close the job's GPU bindings; idempotent.",
} as const;

/** The oclif face of a hook (help text); bin/run.js runs the hook bundle directly, without oclif. */
export function hookCommand(kind: 'prolog' | 'epilog'): typeof Command {
  return class extends Command {
    static override summary = WHAT[kind];
    static override description = `Run by slurmd as root with the job's environment (set ${kind === 'prolog' ? 'Prolog' : 'Epilog'}= in slurm.conf to slurm/${kind}, or to a wrapper that runs \`l9gpu slurm ${kind}\`).
Reads only the slurmd environment and [daemon]/[slurm] of the configuration; runs no Slurm command; loads neither OpenTelemetry nor this CLI framework (bin/run.js starts the hook bundle directly).
Always exits 0 (an error is logged to stderr and <state_dir>/hooks.log) unless [slurm] hook_strict = true, and ends within [slurm] hook_timeout: a failing or slow hook would drain the node.`;

    static override examples = [`<%= config.bin %> slurm ${kind}   # from slurm.conf: ${kind === 'prolog' ? 'Prolog' : 'Epilog'}=/opt/l9gpu/slurm/${kind}`];

    async run(): Promise<void> {
      const { main } = await import('../../slurm/hook.js');
      main(kind);
    }
  };
}
