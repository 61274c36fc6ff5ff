/** The [nccl] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const NCCL_SECTION = pluginSection(
  'nccl',
  'NCCL Inspector profiler output (NCCL 2.28.3 and later): the JSON lines of each rank ' +
    'process and the Prometheus files of 2.29 and later, from the dump folders of the jobs on ' +
    'this node.',
  [
    {
      key: 'paths',
      type: 'list',
      default: ['/tmp/nccl-inspector-*'],
      example: '/tmp/nccl-inspector-*,/scratch/*/nccl-inspector-*',
      description:
        "Inspector dump folders to read, as paths whose parts may hold * and ? (the Inspector's " +
        "default folder is nccl-inspector-<job id> in the job's working directory; set " +
        'NCCL_INSPECTOR_DUMP_DIR in jobs to a place listed here, or leave discover on).',
    },
    {
      key: 'discover',
      type: 'bool',
      default: true,
      description:
        'Also read the dump folder of every running process whose environment has ' +
        'NCCL_INSPECTOR_ENABLE=1 (NCCL_INSPECTOR_DUMP_DIR, else nccl-inspector-<SLURM_JOB_ID> in ' +
        'its working directory), looked for every 10 s (a process is read once). Needs the daemon ' +
        'to read /proc/<pid>/environ (root).',
    },
    {
      key: 'max_file_age',
      type: 'duration',
      default: 3600,
      min: 1,
      example: '1h',
      description:
        "A file first seen when it was last written longer ago than this is not read: an ended job's output, not the node's activity.",
    },
    {
      key: 'max_series',
      type: 'int',
      default: 20000,
      min: 1,
      description: 'Most series (rank x communicator x collective x size bucket) kept; records of new series past it are dropped and said.',
    },
    {
      key: 'window',
      type: 'int',
      default: 256,
      min: 10,
      max: 100000,
      description:
        "Collectives per communicator that a rank's slowdown is worked out over (the latest ones, lined up across the ranks on this node).",
    },
  ],
);
