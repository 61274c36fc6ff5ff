/** The [slurm] section: hooks, reconciliation and the node's identity in Slurm. */
import { defineSection } from '../src/core/config/schema.js';

export const SLURM_SECTION = defineSection({
  name: 'slurm',
  description: 'Slurm attribution: prolog/epilog hooks, reconciliation with squeue/scontrol/sacct.',
  keys: [
    {
      key: 'node_name',
      type: 'string',
      default: null,
      example: 'gpu017',
      description: "This node's name in Slurm (default: $SLURMD_NODENAME, else the short host name).",
    },
    {
      key: 'slurm_conf',
      type: 'path',
      default: null,
      example: '/etc/slurm/slurm.conf',
      env: [{ name: 'SLURM_CONF' }],
      description:
        'slurm.conf (default: $SLURM_CONF, /etc/slurm/slurm.conf, /etc/slurm-llnl/slurm.conf, then ' +
        'the configless cache /run/slurm/conf/slurm.conf); gres.conf is read next to it.',
    },
    {
      key: 'gres_conf',
      type: 'path',
      default: null,
      example: '/etc/slurm/gres.conf',
      description: 'gres.conf, when it is not next to slurm.conf.',
    },
    {
      key: 'bin_dir',
      type: 'path',
      default: null,
      example: '/opt/slurm/bin',
      description: 'Folder of squeue, scontrol and sacct (default: PATH, /usr/bin, /usr/local/bin, /opt/slurm/bin).',
    },
    {
      key: 'reconcile_interval',
      type: 'duration',
      default: 60,
      min: 1,
      max: 3600,
      description:
        'How often running jobs are reconciled with Slurm (opens bindings a prolog missed, closes ' +
        'those whose epilog never ran); each wait is jittered by up to 10 % so that nodes do not ' +
        'ask slurmctld in step.',
    },
    {
      key: 'reconcile_source',
      type: 'enum',
      values: ['local', 'squeue'],
      default: 'local',
      description:
        "local: the jobs running here come from this node's step daemons (scontrol listjobs, or " +
        'listpids before 24.05) and slurmctld is asked about single jobs only (new, ending, ' +
        'unconfirmed): its load does not grow with the queue. squeue: the whole queue every ' +
        'reconcile (squeue --json), for nodes where the step daemons cannot be asked.',
    },
    {
      key: 'reconcile_grace',
      type: 'duration',
      default: 30,
      min: 1,
      max: 3600,
      description:
        'A binding younger than this is never closed by polling, and a job the step daemons do not ' +
        "list is asked about at most once per this long: Slurm's answers may lag a prolog that just " +
        'ran.',
    },
    {
      key: 'job_recheck',
      type: 'duration',
      default: 300,
      min: 1,
      max: 86400,
      description:
        'local source: a job run Slurm confirmed running here is asked about again after this long ' +
        '(catches a job slurmctld ended while a step daemon lingers, e.g. after slurmd died).',
    },
    {
      key: 'command_timeout',
      type: 'duration',
      default: 10,
      min: 0.5,
      max: 300,
      description: 'Longest one squeue/scontrol/sacct run may take.',
    },
    {
      key: 'hook_timeout',
      type: 'duration',
      default: 5,
      min: 0.5,
      max: 60,
      description: 'Hard deadline of a prolog/epilog run; keep it far below slurm.conf MessageTimeout.',
    },
    {
      key: 'hook_strict',
      type: 'bool',
      default: false,
      description:
        'false: hooks always exit 0 (an error is logged; the job runs). true: a hook error exits 1, which makes Slurm drain the node.',
    },
  ],
});
