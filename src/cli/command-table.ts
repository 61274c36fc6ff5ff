/**
 * Every CLI command once: its words, how bin/run.js starts it, its help
 * (summary, description, examples, argument, flags as data) and its man
 * sections (EXIT STATUS, FILES, ENVIRONMENT, SEE ALSO), and the body the light
 * entry runs. Derived from it: the oclif commands (oclif-command.ts; the files
 * in src/commands/ only name their row), the light entry (light-main.ts), the
 * man sections of --help (help.ts), and the routes bin/run.js reads
 * (dist/commands.json, written at build by write-help.ts). Loading it loads no
 * plugin, sink or CLI framework: the bodies are imported when run.
 */
import { typedRun, type FlagSpec, type FlagValues } from './flag-spec.js';
import { DAEMON_FLAGS } from './daemon-flags.js';
import { CTLD_EPILOG_FLAGS, DOCTOR_FLAGS, GPUS_FLAGS, HEALTH_FLAGS, JOBS_FLAGS, JOBS_SHOW_FLAGS } from './command-flags.js';

export interface ManSections {
  exit: [string, string][];
  files?: [string, string][];
  env?: [string, string][];
  see: string[];
}

/**
 * How bin/run.js starts a command: `light` from the pre-bundled light entry
 * (dist/src/cli/light.cjs, no CLI framework), `daemon` from its own entry
 * (daemon-main.ts), `hook` from the hook bundle (dist/hook/hook.cjs); help and
 * what those do not take go to oclif.
 */
export type Entry = 'light' | 'daemon' | 'hook';

export interface CommandSpec {
  /** The words that name it, space-separated (oclif's id with its topic separator). */
  readonly id: string;
  readonly entry: Entry;
  readonly summary: string;
  readonly description: string;
  readonly examples: readonly string[];
  /** Its one positional argument, required. */
  readonly arg?: { readonly name: string; readonly description: string };
  readonly flags: readonly FlagSpec[];
  readonly man: ManSections;
  /** A light command's body: resolves to its exit code (undefined: 0). The daemon and the hooks have entries of their own. */
  readonly run?: (flags: FlagValues, args: string[]) => Promise<number | void>;
}

/** Arguments bin/run.js answers with the version line itself (their route in dist/commands.json: version). */
export const VERSION_ARGS = ['--version', '-v'] as const;

const CONFIG_FILE: [string, string] = [
  '/etc/l9gpu/l9gpu.ini',
  'the configuration (--config, $L9GPU_CONFIG); every key: docs/l9gpu.example.ini',
];
const STORE: [string, string] = ['/var/lib/l9gpu/l9gpu.db', "the node's job store ([daemon] state_dir), root only"];
const CONFIG_ENV: [string, string] = ['L9GPU_CONFIG', 'the configuration file when --config is not given'];
const NO_COLOR: [string, string] = ['NO_COLOR', 'no colour even on a terminal'];
const BAD_CONFIG: [string, string] = ['2', 'bad configuration or arguments: one line on stderr names the file, section and key'];

/** The bodies of jobs and pods (one list of runs, Slurm's or Kubernetes'), and of their show. */
const listRuns = typedRun(JOBS_FLAGS, async (f) => (await import('./jobs-commands.js')).jobsList(f));
const showRun = typedRun(JOBS_SHOW_FLAGS, async (f, a) => (await import('./jobs-commands.js')).jobsShow(a[0]!, f));

/** A hook's description: how slurmd runs it, and why it must not fail or be slow. */
function hookDescription(kind: 'prolog' | 'epilog'): string {
  return (
    `Run by slurmd as root with the job's environment (set ${kind === 'prolog' ? 'Prolog' : 'Epilog'}= in slurm.conf to ` +
    `slurm/${kind}, or to a wrapper that runs \`l9gpu slurm ${kind}\`).
Reads only the slurmd environment and [daemon]/[slurm] of the configuration; runs no Slurm command; loads neither OpenTelemetry nor ` +
    `this CLI framework (bin/run.js starts the hook bundle directly).
Always exits 0 (an error is logged to stderr and <state_dir>/hooks.log) unless [slurm] hook_strict = true, and ends within [slurm] ` +
    `hook_timeout: a failing or slow hook would drain the node.`
  );
}

export const COMMANDS: readonly CommandSpec[] = [
  {
    id: 'daemon',
    entry: 'daemon',
    summary: 'Run the telemetry agent: sample GPUs and the host, attribute to jobs, export.',
    description:
      `Runs every enabled plugin on its interval and sends the points to every enabled sink.
Configuration: /etc/l9gpu/l9gpu.ini (or --config / L9GPU_CONFIG), then environment, then these flags.
Signals: SIGTERM/SIGINT flush every sink and exit 0; SIGHUP reloads the configuration (a bad file is logged and the running ` +
      `configuration kept).
Exit codes: 0 normal, 1 --once found a problem (nothing delivered, a plugin named failed, GPUs the node must have not read), 2 bad ` +
      `configuration (one line on stderr naming file, section and key).`,
    examples: [
      '<%= config.bin %> daemon',
      '<%= config.bin %> daemon --once --sink stdout',
      '<%= config.bin %> daemon --plugin host --plugin sim --sink stdout --sink prometheus --interval 5',
      'OTEL_EXPORTER_OTLP_ENDPOINT=http://vm:8428/opentelemetry <%= config.bin %> daemon --sink otlp',
    ],
    flags: DAEMON_FLAGS,
    man: {
      exit: [
        ['0', 'stopped by SIGTERM/SIGINT after flushing every sink, or --once done'],
        [
          '1',
          '--once: every export failed (nothing delivered), a plugin named in --plugin or [daemon] ' +
            'plugins failed, or fewer GPUs were read than the node must have ([daemon] expect_gpus, a ' +
            'GPU driver installed)',
        ],
        BAD_CONFIG,
      ],
      files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/jobs.sock', "where users' l9gpu jobs is answered"]],
      env: [
        CONFIG_ENV,
        ['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT', '[otlp] endpoint'],
        ['L9GPU_NVML_LIBRARY', '[nvml] library'],
        ['L9GPU_STATE_DIR', '[daemon] state_dir'],
      ],
      see: ['l9gpu doctor', 'docs/install.md', 'docs/metrics.md', 'systemd/l9gpu.service'],
    },
  },
  {
    id: 'doctor',
    entry: 'light',
    summary: 'Report the environment: configuration and where each value came from, plugins and their sources, sinks, store.',
    description:
      `Reads the configuration exactly as the daemon would (same file, environment and precedence) and checks, without ` +
      `sending any data, whether each enabled plugin's source and each enabled sink's destination is usable.
Exit codes: 0 all enabled parts usable, 1 a problem was found, 2 bad configuration.`,
    examples: ['<%= config.bin %> doctor', '<%= config.bin %> doctor --config /etc/l9gpu/l9gpu.ini --json'],
    flags: DOCTOR_FLAGS,
    man: {
      exit: [
        ['0', 'every enabled part usable'],
        ['1', 'a problem was found (listed; GPUs the node must have but none read first)'],
        BAD_CONFIG,
      ],
      files: [CONFIG_FILE, STORE],
      env: [CONFIG_ENV],
      see: ['l9gpu daemon', 'docs/install.md'],
    },
    run: typedRun(DOCTOR_FLAGS, async (f) => (await import('./doctor-command.js')).doctor(f)),
  },
  {
    id: 'gpus',
    entry: 'light',
    summary: 'Show every GPU of this node now: identity, utilization, memory, temperature, power, energy, throttling, processes, MIG.',
    description:
      `Samples the GPU plugins once (the same code the daemon runs: nvml, amdsmi, hlsmi, and sim when it is configured) ` +
      `and prints one row per GPU, or stable JSON with --json.
GPUs are keyed by UUID; index is the vendor's enumeration order, which may differ from Slurm's GRES index and from /dev/nvidiaN.`,
    examples: ['<%= config.bin %> gpus', "<%= config.bin %> gpus --json | jq '.gpus[] | {uuid, utilization}'"],
    flags: GPUS_FLAGS,
    man: {
      exit: [
        ['0', 'the GPUs were listed (a vendor tool that failed is named on stderr)'],
        [
          '1',
          'no GPU could be read, or fewer than the node must have ([daemon] expect_gpus, a GPU driver ' +
            "installed, GPUs in the store's inventory): said first on stderr",
        ],
        BAD_CONFIG,
      ],
      files: [CONFIG_FILE],
      env: [CONFIG_ENV, NO_COLOR],
      see: ['l9gpu jobs', 'docs/metrics.md'],
    },
    run: typedRun(GPUS_FLAGS, async (f) => (await import('./gpus-command.js')).gpus(f)),
  },
  {
    id: 'health',
    entry: 'light',
    summary: "Health of this node's GPUs: each one ok, warning or failed, the reasons in words and what to do.",
    description:
      `As the daemon last judged them by the rules of docs/health.md (Xids by NVIDIA's catalog, uncorrected ECC and its ` +
      `trend, remapped rows, retired pages, PCIe replays, thermal and power-brake throttling, lost GPUs).
--nhc prints one line and exits 1 when a GPU failed: for NHC, or for slurm.conf HealthCheckProgram with --drain, so a failed GPU ` +
      `drains its node through Slurm (and a node l9gpu drained resumes once healthy).`,
    examples: [
      '<%= config.bin %> health',
      '<%= config.bin %> health --json',
      '<%= config.bin %> health --nhc --drain    # slurm.conf: HealthCheckProgram=/usr/local/sbin/l9gpu-healthcheck',
      '<%= config.bin %> health --clear GPU-5c1e4c8a    # after a GPU reset or repair',
    ],
    flags: HEALTH_FLAGS,
    man: {
      exit: [
        ['0', 'printed; with --nhc: no GPU failed (ok, warning, or unknown without --unknown-fails)'],
        ['1', '--nhc: a GPU failed (or the health is unknown, with --unknown-fails)'],
        BAD_CONFIG,
      ],
      files: [
        CONFIG_FILE,
        ['/var/lib/l9gpu/health.json', "the daemon's health facts ([daemon] state_dir)"],
        ['/var/lib/l9gpu/health-clears.json', 'what --clear wrote'],
      ],
      env: [CONFIG_ENV, ['SLURMD_NODENAME', 'the node --drain drains or resumes (set by slurmd for HealthCheckProgram)'], NO_COLOR],
      see: ['docs/health.md', 'slurm.conf(5) HealthCheckProgram', 'nhc(8)'],
    },
    run: typedRun(HEALTH_FLAGS, async (f) => (await import('./health-command.js')).health(f)),
  },
  {
    id: 'jobs',
    entry: 'light',
    summary: 'List jobs that used GPUs on this node: GPU-hours, utilization, peak memory, energy, cost, problems.',
    description: `One row per job run, newest first, from this node's l9gpu store (kept by the Slurm hooks and the daemon).
Users see their own jobs; root and members of [jobs] admin_group see everyone's (--user to pick one).
For one job in detail: l9gpu jobs show <jobid>.`,
    examples: [
      '<%= config.bin %> jobs',
      '<%= config.bin %> jobs --state running',
      '<%= config.bin %> jobs --since 7d --account physics --csv > gpu-usage.csv',
      '<%= config.bin %> jobs --by user --since 7d',
      '<%= config.bin %> jobs --waste --since 7d --csv',
      '<%= config.bin %> jobs --waste --source promql --url http://victoria:8428',
      "<%= config.bin %> jobs --user alice --json | jq '.[] | select(.problems | length > 0)'",
    ],
    flags: JOBS_FLAGS,
    man: {
      exit: [
        ['0', 'listed (possibly none)'],
        ['1', "the store or the daemon could not be read, or another user's jobs were asked for"],
        BAD_CONFIG,
      ],
      files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/jobs.sock', 'asked instead of the store by users other than root']],
      env: [CONFIG_ENV, NO_COLOR],
      see: ['l9gpu jobs show', 'docs/jobs.md'],
    },
    run: listRuns,
  },
  {
    id: 'jobs show',
    entry: 'light',
    summary: 'How a job used its GPUs: utilization, memory, energy, power, throttling, Xids, a plot and notes.',
    description: `The report a user or support engineer reads. From this node's store by default (the job's GPUs on this node);
with --source promql --url URL, from the metrics every node's daemon exported to Prometheus, VictoriaMetrics, Mimir or Last9:
the whole multi-node job, per node, with the same figures and notes.`,
    examples: [
      '<%= config.bin %> jobs show 4242',
      '<%= config.bin %> jobs show 4242_7 --json',
      '<%= config.bin %> jobs show 4242 --source promql --url http://victoria:8428',
    ],
    arg: { name: 'jobid', description: 'Job id, or ARRAYID_TASKID.' },
    flags: JOBS_SHOW_FLAGS,
    man: {
      exit: [
        ['0', 'the report was printed'],
        ['1', "no such job in this node's store, in Slurm accounting with an l9gpu summary, or at the PromQL URL; or it is another user's"],
        BAD_CONFIG,
      ],
      files: [CONFIG_FILE, STORE],
      env: [CONFIG_ENV, NO_COLOR],
      see: ['l9gpu jobs', 'docs/jobs.md'],
    },
    run: showRun,
  },
  {
    id: 'pods',
    entry: 'light',
    summary: 'List pods that used GPUs on this node (Kubernetes mode: l9gpu jobs under its other name).',
    description: `One row per pod run, newest first, from this node's l9gpu store (kept by the daemon's kubernetes attribution):
namespace, workload (deployment/..., statefulset/..., cronjob/...), GPU-hours, utilization, peak memory, energy, cost, problems.
--account filters by namespace. For one pod in detail: l9gpu pods show <namespace>/<pod>.`,
    examples: [
      '<%= config.bin %> pods',
      '<%= config.bin %> pods --state running',
      '<%= config.bin %> pods --account ml-train --since 7d --csv',
      '<%= config.bin %> pods --by account',
    ],
    flags: JOBS_FLAGS,
    man: {
      exit: [['0', 'listed (possibly none)'], ['1', 'the store or the daemon could not be read'], BAD_CONFIG],
      files: [CONFIG_FILE, STORE],
      env: [CONFIG_ENV, NO_COLOR],
      see: ['l9gpu pods show', 'docs/kubernetes.md'],
    },
    run: listRuns,
  },
  {
    id: 'pods show',
    entry: 'light',
    summary: 'How a pod used its GPUs: utilization, memory, energy, power, throttling, Xids, a plot and notes.',
    description:
      "The report of one pod run from this node's store: its namespace, uid, workload and " +
      "promoted labels, then the same figures as a Slurm job's report.",
    examples: ['<%= config.bin %> pods show ml-train/llama-ft-7d9f8c6b5-x2x9p', '<%= config.bin %> pods show ml-train/vllm-serve-0 --json'],
    arg: { name: 'pod', description: 'namespace/pod' },
    flags: JOBS_SHOW_FLAGS,
    man: {
      exit: [['0', 'the report was printed'], ['1', "no such pod in this node's store"], BAD_CONFIG],
      files: [CONFIG_FILE, STORE],
      env: [CONFIG_ENV, NO_COLOR],
      see: ['l9gpu pods', 'docs/kubernetes.md'],
    },
    run: showRun,
  },
  {
    id: 'slurm ctld-epilog',
    entry: 'light',
    summary: "EpilogSlurmctld: keep a finished job's GPU summary in its AdminComment, for `l9gpu jobs show` on any login node.",
    description:
      `slurm.conf: EpilogSlurmctld=/opt/l9gpu/slurm/ctld-epilog (runs this as SlurmUser on the controller).
It returns at once: a job that held GPUs is queued in <state_dir>/ctld-queue (10,000 jobs at most) and the one worker (--worker) ` +
      `started where none runs; the worker waits until every node's job-end figures have reached ` +
      `the PromQL backend ([jobs] promql_url), reading many jobs per query, then stores them ` +
      `(scontrol while slurmctld holds the job, else sacctmgr) as "L9G1:" + hex(gzip(JSON)). A ` +
      `comment that is not l9gpu's is never replaced.`,
    examples: ['<%= config.bin %> slurm ctld-epilog --job 4242'],
    flags: CTLD_EPILOG_FLAGS,
    man: {
      exit: [
        ['0', 'as EpilogSlurmctld always (the worker runs on); with --job: the summary was stored'],
        ['1', '--job: nothing stored (no metrics, no accounting record, a foreign AdminComment)'],
        BAD_CONFIG,
      ],
      files: [
        CONFIG_FILE,
        ['/var/lib/l9gpu/ctld-queue/', 'the ended jobs waiting for the worker ([daemon] state_dir)'],
        ['/var/lib/l9gpu/ctld-worker.lock', "the worker's lock, with its pid while it runs"],
        ['/var/lib/l9gpu/ctld-epilog.log', 'what the worker did (.1: the one before, past 1 MiB)'],
      ],
      env: [
        ['SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID', 'set by slurmctld'],
        ['L9GPU_CTLD_BACKLOG', "the queue's cap (default 10000): past it the ending job is dropped, said on stderr and counted in the log"],
        [
          'L9GPU_NODE',
          'in a checkout only, the node binary slurm/ctld-epilog runs (default /usr/bin/node); the ' +
            'package always runs its own, /opt/l9gpu/node/bin/node',
        ],
        CONFIG_ENV,
      ],
      see: ['l9gpu jobs show', 'docs/jobs.md'],
    },
    run: typedRun(CTLD_EPILOG_FLAGS, async (f) => (await import('./ctld-epilog-command.js')).ctldEpilog(f)),
  },
  {
    id: 'slurm prolog',
    entry: 'hook',
    summary: 'Slurm Prolog: record the job and its GPUs (by UUID) in the local store.',
    description: hookDescription('prolog'),
    examples: [`<%= config.bin %> slurm prolog   # from slurm.conf: Prolog=/opt/l9gpu/slurm/prolog`],
    flags: [],
    man: {
      exit: [['0', 'always, unless [slurm] hook_strict = true: a failing hook would drain the node']],
      files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/hooks.log', 'what the hooks could not do']],
      env: [
        ['SLURM_JOB_ID, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES, SLURM_JOB_USER, ...', 'set by slurmd'],
        [
          'L9GPU_NODE',
          'in a checkout only, the node binary slurm/prolog runs (default /usr/bin/node); the package ' +
            'always runs its own, /opt/l9gpu/node/bin/node',
        ],
      ],
      see: ['l9gpu slurm epilog', 'docs/slurm.md'],
    },
  },
  {
    id: 'slurm epilog',
    entry: 'hook',
    summary: "Slurm Epilog: close the job's GPU bindings; idempotent.",
    description: hookDescription('epilog'),
    examples: [`<%= config.bin %> slurm epilog   # from slurm.conf: Epilog=/opt/l9gpu/slurm/epilog`],
    flags: [],
    man: {
      exit: [['0', 'always, unless [slurm] hook_strict = true']],
      files: [CONFIG_FILE, STORE, ['/var/lib/l9gpu/hooks.log', 'what the hooks could not do']],
      env: [
        ['SLURM_JOB_ID, SLURM_JOB_EXIT_CODE, ...', 'set by slurmd'],
        [
          'L9GPU_NODE',
          'in a checkout only, the node binary slurm/epilog runs (default /usr/bin/node); the package ' +
            'always runs its own, /opt/l9gpu/node/bin/node',
        ],
      ],
      see: ['l9gpu slurm prolog', 'docs/slurm.md'],
    },
  },
];

/** A command's row; throws for an id not in the table (a file in src/commands/ naming a row that is gone). */
export function commandSpec(id: string): CommandSpec {
  const c = COMMANDS.find((x) => x.id === id);
  if (!c) throw new Error(`no command "${id}" in src/cli/command-table.ts`);
  return c;
}
