/**
 * The flag tables of the light commands, as data (`as const`): the command
 * table (command-table.ts) lists them, and each command's body reads its
 * flags typed from its table (FlagsOf, flag-spec.ts), as readSection types a
 * config section from its keys: no cast at a read, and a misspelt flag does
 * not compile. Kept apart from the command table, which imports the bodies.
 */
import { CONFIG_FLAG, type FlagSpec } from './flag-spec.js';
import { GROUP_BY } from '../jobs/by.js';

/** The flags of jobs and pods (and of their show). */
export const JOBS_FLAGS = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON.', exclusive: ['csv'] },
  { name: 'csv', type: 'boolean', description: 'Print CSV.', exclusive: ['json'] },
  {
    name: 'user',
    type: 'string',
    char: 'u',
    helpValue: 'USER',
    description: "Only this user's jobs (others' need root or [jobs] admin_group).",
  },
  {
    name: 'state',
    type: 'string',
    options: ['running', 'completed', 'all'],
    default: 'all',
    description: 'Running jobs, ended ones, or all.',
  },
  {
    name: 'since',
    type: 'string',
    helpValue: 'TIME',
    description: 'Jobs started at or after TIME: 2026-11-01, 2026-11-01T08:00, 24h, 7d.',
  },
  { name: 'account', type: 'string', char: 'A', helpValue: 'ACCOUNT', description: 'Only this Slurm account.' },
  { name: 'partition', type: 'string', char: 'p', helpValue: 'PARTITION', description: 'Only this partition.' },
  { name: 'limit', type: 'integer', default: 100, min: 0, description: 'At most this many jobs, or groups with --by (0: all).' },
  {
    name: 'by',
    type: 'string',
    options: GROUP_BY,
    helpValue: 'user|account|partition|name',
    description:
      'One row per user, account, partition or job name (in Kubernetes mode: namespace = account, ' +
      'workload = name) over every matching job (--limit caps the groups): jobs, GPU-hours, idle ' +
      "GPU-hours (each GPU's GPU-hours x (1 - its mean utilization)), mean utilization, GPU-hours " +
      'by SM activity where GPM exists, energy, cost, CO2e.',
  },
  {
    name: 'waste',
    type: 'boolean',
    exclusive: ['by'],
    description:
      "The jobs that wasted GPU-hours, one row per job and class (Princeton Job Defense Shield's: " +
      'unused-gpus, low-activity, fewer-gpus, mig-slice, time-limit; docs/jobs.md), most wasted ' +
      'first, with the GPU-hours wasted; time limits from Slurm accounting where sacct answers.',
  },
  {
    name: 'source',
    type: 'string',
    options: ['store', 'promql'],
    default: 'store',
    description:
      "With --waste: this node's store, or the cluster's ended jobs from their job-end summary " +
      'metrics in the PromQL backend (--url or [jobs] promql_url; --since is the window, default ' +
      '7d).',
  },
  {
    name: 'url',
    type: 'string',
    helpValue: 'URL',
    description: 'With --waste --source promql: the PromQL API base URL (default: [jobs] promql_url).',
  },
] as const satisfies readonly FlagSpec[];

export const JOBS_SHOW_FLAGS = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON.' },
  {
    name: 'source',
    type: 'string',
    options: ['auto', 'store', 'sacct', 'promql'],
    default: 'auto',
    description:
      "Where the figures come from. auto: this node's store if the job ran here, else the summary " +
      "the slurmctld epilog left in the job's AdminComment (sacct), else the PromQL backend " +
      '(--url or [jobs] promql_url).',
  },
  {
    name: 'url',
    type: 'string',
    helpValue: 'URL',
    description: 'PromQL API base URL, e.g. http://victoria:8428 or http://prometheus:9090 (default: [jobs] promql_url).',
  },
  {
    name: 'window',
    type: 'string',
    default: '30d',
    helpValue: 'RANGE',
    description: 'With --source promql: how far back to look for the job (a PromQL range: 7d, 30d).',
  },
  {
    name: 'header',
    type: 'string',
    multiple: true,
    whole: true,
    helpValue: 'K=V',
    description: 'With --source promql: an HTTP header (Authorization=Bearer ..., X-Scope-OrgID=...).',
  },
  {
    name: 'cluster',
    type: 'string',
    char: 'M',
    helpValue: 'CLUSTER',
    description: "The Slurm cluster whose accounting holds the job (sacct -M, as in Slurm's own commands); default: the local cluster.",
  },
] as const satisfies readonly FlagSpec[];

export const DOCTOR_FLAGS = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print the report as JSON.' },
  { name: 'all', type: 'boolean', description: 'List the settings of disabled plugins and sinks too.' },
] as const satisfies readonly FlagSpec[];

export const GPUS_FLAGS = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON (stable field names, registry units: ratios 0..1, bytes, W, J, Cel).' },
  {
    name: 'plugin',
    type: 'string',
    multiple: true,
    helpValue: 'NAME',
    description: 'GPU plugin to sample (default: the configured ones, auto-detected).',
  },
] as const satisfies readonly FlagSpec[];

export const HEALTH_FLAGS = [
  CONFIG_FLAG,
  { name: 'json', type: 'boolean', description: 'Print JSON.', exclusive: ['nhc'] },
  {
    name: 'nhc',
    type: 'boolean',
    description: "One line and an exit status for Slurm's HealthCheckProgram or NHC: exit 1 when a GPU failed, else 0.",
    exclusive: ['json'],
  },
  {
    name: 'drain',
    type: 'boolean',
    description:
      'With --nhc, as HealthCheckProgram: drain this node through scontrol when a GPU failed ' +
      '(reason "l9gpu: ..."), and resume it when healthy again if l9gpu drained it.',
  },
  {
    name: 'unknown-fails',
    type: 'boolean',
    description: 'With --nhc: an unknown health (no daemon writing it) fails too, instead of passing with a warning.',
  },
  {
    name: 'clear',
    type: 'string',
    multiple: true,
    helpValue: 'GPU',
    description:
      'Clear the Xid events recorded so far for a GPU (UUID, a prefix of one UUID, index, or ' +
      'all), once it has been reset or repaired; a GPU named that is missing (removed, no longer ' +
      'monitored) is forgotten. Root only.',
  },
] as const satisfies readonly FlagSpec[];

export const CTLD_EPILOG_FLAGS = [
  CONFIG_FLAG,
  {
    name: 'job',
    type: 'string',
    helpValue: 'ID',
    description:
      'Store the summary of this finished job now, in the foreground (a job that ended before the ' +
      'epilog was set up, or again); exit 1 when it could not be stored.',
  },
  {
    name: 'raw-id',
    type: 'string',
    helpValue: 'ID',
    description: 'With --job: the raw job id its metrics carry, when --job is ARRAYID_TASKID (default: asked of sacct).',
  },
  {
    name: 'worker',
    type: 'boolean',
    description: 'Set by the epilog on the worker it starts: drain the queue of ended jobs, then exit (with --job: log with timestamps).',
  },
] as const satisfies readonly FlagSpec[];
