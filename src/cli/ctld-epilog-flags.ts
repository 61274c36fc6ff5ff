/** The `l9gpu slurm ctld-epilog` flags as data: oclif's command and the light entry build on them. */
import { CONFIG_FLAG, type FlagSpec } from './flag-spec.js';

export const CTLD_EPILOG_FLAGS: readonly FlagSpec[] = [
  CONFIG_FLAG,
  { name: 'job', type: 'string', helpValue: 'ID', description: 'Store the summary of this finished job now, in the foreground (a job that ended before the epilog was set up, or again); exit 1 when it could not be stored.' },
  { name: 'raw-id', type: 'string', helpValue: 'ID', description: 'With --job: the raw job id its metrics carry, when --job is ARRAYID_TASKID (default: asked of sacct).' },
  { name: 'worker', type: 'boolean', description: 'Set by the epilog on the worker it starts: logs with timestamps.' },
];
