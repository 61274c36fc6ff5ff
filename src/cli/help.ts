/**
 * `--help` in the shape of a man page: oclif's USAGE, ARGUMENTS, FLAGS,
 * DESCRIPTION and EXAMPLES, then EXIT STATUS, FILES, ENVIRONMENT and SEE
 * ALSO for each command, from one table. (package.json oclif.helpClass)
 */
import { Help, type Command } from '@oclif/core';

interface ManSections {
  exit: [string, string][];
  files?: [string, string][];
  env?: [string, string][];
  see: string[];
}

const CONFIG_FILE: [string, string] = ['/etc/l9gpu/l9gpu.ini', 'the configuration (--config, $L9GPU_CONFIG); every key: docs/l9gpu.example.ini'];
const STORE: [string, string] = ['/var/lib/l9gpu/l9gpu.db', 'the node\'s job store ([daemon] state_dir), root only'];
const CONFIG_ENV: [string, string] = ['L9GPU_CONFIG', 'the configuration file when --config is not given'];
const BAD_CONFIG: [string, string] = ['2', 'bad configuration or arguments: one line on stderr names the file, section and key'];

const MAN: Record<string, ManSections> = {
  daemon: {
    exit: [['0', 'stopped by SIGTERM/SIGINT after flushing every sink, or --once done'], ['1', '--once: every export failed (nothing delivered), a plugin named in --plugin or [daemon] plugins failed, or fewer GPUs were read than the node must have ([daemon] expect_gpus, a GPU driver installed)'], BAD_CONFIG],
    files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/jobs.sock', 'where users\' l9gpu jobs is answered']],
    env: [CONFIG_ENV, ['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT', '[otlp] endpoint'], ['L9GPU_NVML_LIBRARY', '[nvml] library'], ['L9GPU_STATE_DIR', '[daemon] state_dir']],
    see: ['l9gpu doctor', 'docs/install.md', 'docs/metrics.md', 'systemd/l9gpu.service'],
  },
  doctor: {
    exit: [['0', 'every enabled part usable'], ['1', 'a problem was found (listed; GPUs the node must have but none read first)'], BAD_CONFIG],
    files: [CONFIG_FILE, STORE],
    env: [CONFIG_ENV],
    see: ['l9gpu daemon', 'docs/install.md'],
  },
  gpus: {
    exit: [['0', 'the GPUs were listed (a vendor tool that failed is named on stderr)'], ['1', 'no GPU could be read, or fewer than the node must have ([daemon] expect_gpus, a GPU driver installed, GPUs in the store\'s inventory): said first on stderr'], BAD_CONFIG],
    files: [CONFIG_FILE],
    env: [CONFIG_ENV, ['NO_COLOR', 'no colour even on a terminal']],
    see: ['l9gpu jobs', 'docs/metrics.md'],
  },
  jobs: {
    exit: [['0', 'listed (possibly none)'], ['1', 'the store or the daemon could not be read, or another user\'s jobs were asked for'], BAD_CONFIG],
    files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/jobs.sock', 'asked instead of the store by users other than root']],
    env: [CONFIG_ENV, ['NO_COLOR', 'no colour even on a terminal']],
    see: ['l9gpu jobs show', 'docs/jobs.md'],
  },
  'jobs show': {
    exit: [['0', 'the report was printed'], ['1', 'no such job in this node\'s store, in Slurm accounting with an l9gpu summary, or at the PromQL URL; or it is another user\'s'], BAD_CONFIG],
    files: [CONFIG_FILE, STORE],
    env: [CONFIG_ENV, ['NO_COLOR', 'no colour even on a terminal']],
    see: ['l9gpu jobs', 'docs/jobs.md'],
  },
  pods: {
    exit: [['0', 'listed (possibly none)'], ['1', 'the store or the daemon could not be read'], BAD_CONFIG],
    files: [CONFIG_FILE, STORE],
    env: [CONFIG_ENV, ['NO_COLOR', 'no colour even on a terminal']],
    see: ['l9gpu pods show', 'docs/kubernetes.md'],
  },
  'pods show': {
    exit: [['0', 'the report was printed'], ['1', 'no such pod in this node\'s store'], BAD_CONFIG],
    files: [CONFIG_FILE, STORE],
    env: [CONFIG_ENV, ['NO_COLOR', 'no colour even on a terminal']],
    see: ['l9gpu pods', 'docs/kubernetes.md'],
  },
  health: {
    exit: [['0', 'printed; with --nhc: no GPU failed (ok, warning, or unknown without --unknown-fails)'], ['1', '--nhc: a GPU failed (or the health is unknown, with --unknown-fails)'], BAD_CONFIG],
    files: [CONFIG_FILE, ['/var/lib/l9gpu/health.json', 'the daemon\'s health facts ([daemon] state_dir)'], ['/var/lib/l9gpu/health-clears.json', 'what --clear wrote']],
    env: [CONFIG_ENV, ['SLURMD_NODENAME', 'the node --drain drains or resumes (set by slurmd for HealthCheckProgram)'], ['NO_COLOR', 'no colour even on a terminal']],
    see: ['docs/health.md', 'slurm.conf(5) HealthCheckProgram', 'nhc(8)'],
  },
  'slurm ctld-epilog': {
    exit: [['0', 'as EpilogSlurmctld always (the worker runs on); with --job: the summary was stored'], ['1', '--job: nothing stored (no metrics, no accounting record, a foreign AdminComment)'], BAD_CONFIG],
    files: [CONFIG_FILE, ['/var/lib/l9gpu/ctld-epilog.log', 'what the workers did ([daemon] state_dir)']],
    env: [['SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID', 'set by slurmctld'], ['L9GPU_NODE', 'in a checkout only, the node binary slurm/ctld-epilog runs (default /usr/bin/node); the package always runs its own, /opt/l9gpu/node/bin/node'], CONFIG_ENV],
    see: ['l9gpu jobs show', 'docs/jobs.md'],
  },
  'slurm prolog': {
    exit: [['0', 'always, unless [slurm] hook_strict = true: a failing hook would drain the node']],
    files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/hooks.log', 'what the hooks could not do']],
    env: [['SLURM_JOB_ID, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES, SLURM_JOB_USER, ...', 'set by slurmd'], ['L9GPU_NODE', 'in a checkout only, the node binary slurm/prolog runs (default /usr/bin/node); the package always runs its own, /opt/l9gpu/node/bin/node']],
    see: ['l9gpu slurm epilog', 'docs/slurm.md'],
  },
  'slurm epilog': {
    exit: [['0', 'always, unless [slurm] hook_strict = true']],
    files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/hooks.log', 'what the hooks could not do']],
    env: [['SLURM_JOB_ID, SLURM_JOB_EXIT_CODE, ...', 'set by slurmd'], ['L9GPU_NODE', 'in a checkout only, the node binary slurm/epilog runs (default /usr/bin/node); the package always runs its own, /opt/l9gpu/node/bin/node']],
    see: ['l9gpu slurm prolog', 'docs/slurm.md'],
  },
};

export default class ManHelp extends Help {
  protected override formatCommand(command: Command.Loadable): string {
    const base = super.formatCommand(command);
    const m = MAN[command.id.replace(/:/g, ' ')];
    if (!m) return base;
    const parts = [base, this.section('EXIT STATUS', m.exit)];
    if (m.files) parts.push(this.section('FILES', m.files));
    if (m.env) parts.push(this.section('ENVIRONMENT', m.env));
    parts.push(this.section('SEE ALSO', m.see.join(', ')));
    return parts.join('\n\n');
  }
}

/** Command ids with a man table (a test holds every command to having one). */
export const MAN_COMMANDS = Object.keys(MAN);
