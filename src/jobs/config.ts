/** The [jobs] section: the job ledger's retention, who sees what in reports, and the prices and grid carbon intensity behind costs and
 * CO2e.
 * */
import { checkRequestHeaders, defineSection } from '../core/config/schema.js';
import { secretFileKeys, tlsClientKeys } from '../core/config/client-keys.js';

export const JOBS_SECTION = defineSection({
  name: 'jobs',
  description:
    'The job ledger (per job x GPU figures kept in the store under any attribution) and `l9gpu ' +
    'jobs` reports: retention, visibility and prices.',
  keys: [
    {
      key: 'admin_group',
      type: 'string',
      default: null,
      example: 'hpcadmin',
      description: "Members of this Unix group see every user's jobs (root always does; others see their own).",
    },
    {
      key: 'gpu_hour_price',
      type: 'number',
      default: null,
      min: 0,
      example: '2.50',
      description:
        'Price of one GPU-hour, for the cost column (unset: no cost shown). The most specific price ' +
        'wins: node_gpu_hour_prices, then partition_gpu_hour_prices, then gpu_hour_prices, then ' +
        'this one.',
    },
    {
      key: 'gpu_hour_prices',
      type: 'map',
      mapValues: 'number',
      min: 0,
      default: {},
      example: 'H100=3.20,A100=1.80',
      description: 'Per-model GPU-hour prices: the first key contained in the GPU model wins over gpu_hour_price.',
    },
    {
      key: 'partition_gpu_hour_prices',
      type: 'map',
      mapValues: 'number',
      min: 0,
      default: {},
      example: 'gpu=2.90,debug=0.50',
      description: "Per-partition GPU-hour prices (the job's Slurm partition, exact name), over gpu_hour_prices and gpu_hour_price.",
    },
    {
      key: 'node_gpu_hour_prices',
      type: 'map',
      mapValues: 'number',
      min: 0,
      default: {},
      example: 'gpu017=4.10,dgx*=3.60',
      description:
        "Per-node GPU-hour prices (the node's name in the scheduler; * matches any characters; an " +
        'exact name before a pattern, patterns in file order), over every other price.',
    },
    {
      key: 'kwh_price',
      type: 'number',
      default: null,
      min: 0,
      example: '0.25',
      description: "Price of one kWh of facility energy: the GPUs' energy times pue, added to the cost.",
    },
    {
      key: 'carbon_intensity',
      type: 'number',
      default: null,
      min: 0,
      example: '350',
      description: "Grid carbon intensity in gCO2e per kWh: a job's CO2e is its GPUs' energy times pue times this (unset: no CO2e).",
    },
    {
      key: 'pue',
      type: 'number',
      default: 1,
      min: 1,
      example: '1.3',
      description:
        'Power usage effectiveness of the site (facility energy over IT energy, >= 1): GPU energy ' +
        'is multiplied by it for the energy cost and CO2e.',
    },
    { key: 'currency', type: 'string', default: 'USD', description: 'Currency shown with costs.' },
    {
      key: 'nccl_peak_bus_bandwidth',
      type: 'number',
      default: null,
      min: 0,
      example: '400',
      description:
        "The fabric's peak NCCL bus bandwidth per GPU, in GB/s (1e9 bytes/s, nccl-tests' unit): the " +
        'communication section of `l9gpu jobs show` compares each collective with it and notes one ' +
        'far below (unset: no comparison).',
    },
    {
      key: 'nccl_peak_bus_bandwidths',
      type: 'map',
      default: {},
      example: 'h100=450,a100=230',
      description: 'Per-partition peak bus bandwidths in GB/s, over nccl_peak_bus_bandwidth for jobs of that partition.',
    },
    {
      key: 'efficiency_idle_sm_active',
      type: 'number',
      default: 0.05,
      min: 0,
      max: 1,
      description:
        'The Efficiency section of `l9gpu jobs show` (docs/jobs.md): a GPU (or the job) whose mean ' +
        'SM activity (GPM) is below this is idle; without GPM, its utilization below this.',
    },
    {
      key: 'efficiency_input_bound_utilization',
      type: 'number',
      default: 0.5,
      min: 0,
      max: 1,
      description:
        'Input-bound: utilization (the share of time a kernel ran) at least this while the mean SM ' +
        'activity stays below efficiency_input_bound_sm_active: the engine busy, the SMs mostly ' +
        'idle.',
    },
    {
      key: 'efficiency_input_bound_sm_active',
      type: 'number',
      default: 0.3,
      min: 0,
      max: 1,
      description:
        'Input-bound: mean SM activity below this while utilization is at least ' +
        'efficiency_input_bound_utilization (small kernels, a GPU waiting on the host).',
    },
    {
      key: 'efficiency_memory_bound_dram',
      type: 'number',
      default: 0.5,
      min: 0,
      max: 1,
      description: 'Memory-bound: mean DRAM bandwidth use at least this, and above every pipe that passes efficiency_compute_bound_pipe.',
    },
    {
      key: 'efficiency_compute_bound_pipe',
      type: 'number',
      default: 0.5,
      min: 0,
      max: 1,
      description:
        "Tensor-, FP64- or FP32-compute-bound: that pipe's mean activity at least this (the highest such, DRAM included, names the class).",
    },
    {
      key: 'efficiency_low_occupancy',
      type: 'number',
      default: 0.2,
      min: 0,
      max: 1,
      description:
        'Low occupancy: SMs busy, no pipe or DRAM at its threshold, and mean SM occupancy (resident warps of the maximum) below this.',
    },
    {
      key: 'efficiency_imbalance',
      type: 'number',
      default: 1.5,
      min: 1,
      example: '2',
      description: "A note when the job's GPUs' mean SM activity differs by this factor or more (the busiest over the least busy).",
    },
    {
      key: 'waste_low_activity',
      type: 'number',
      default: 0.25,
      min: 0,
      max: 1,
      description:
        "`l9gpu jobs --waste` (docs/jobs.md): a job whose used GPUs' mean SM activity (GPM; " +
        'utilization without it) is below this is in the low-activity class.',
    },
    {
      key: 'waste_time_limit_factor',
      type: 'number',
      default: 3,
      min: 1,
      example: '4',
      description:
        '`l9gpu jobs --waste`: an ended job whose Slurm time limit is at least this many times its ' +
        'run time (and an hour or more above it) is in the time-limit class.',
    },
    {
      key: 'promql_url',
      type: 'url',
      default: null,
      example: 'http://victoria:8428',
      description:
        'PromQL API base URL of the metrics backend the daemons export to (Prometheus, ' +
        'VictoriaMetrics, Mimir, Last9): where the slurmctld epilog (`l9gpu slurm ctld-epilog`) ' +
        "reads a finished job's figures, and the default of `l9gpu jobs show --source promql`.",
    },
    {
      key: 'promql_headers',
      type: 'map',
      default: {},
      secret: true,
      check: checkRequestHeaders,
      example: 'X-Scope-OrgID=hpc',
      description:
        'HTTP headers sent with every PromQL query to promql_url (Authorization=Bearer ..., ' +
        'X-Scope-OrgID=...); never to a URL given with --url at another origin. Prefer ' +
        "promql_headers_file for a secret: l9gpu.ini is read by every user's l9gpu.",
    },
    ...secretFileKeys('promql_', 'promql_url'),
    ...tlsClientKeys('promql_', 'the PromQL backend'),
    {
      key: 'summary_wait',
      type: 'duration',
      default: 600,
      min: 1,
      max: 86400,
      example: '10m',
      description:
        "How long the slurmctld epilog waits for every node's job-end figures to reach the backend " +
        "before it stores the job's summary in AdminComment (it stores what it has then, and says " +
        'which GPUs are missing).',
    },
    {
      key: 'series_retention',
      type: 'duration',
      default: 30 * 86400,
      min: 3600,
      example: '30d',
      description: 'How long the per-minute utilization/memory/power series of ended jobs are kept (for `l9gpu jobs show` plots).',
    },
    {
      key: 'job_retention',
      type: 'duration',
      default: 365 * 86400,
      min: 86400,
      example: '365d',
      description: 'How long ended jobs and their figures are kept in the store.',
    },
    {
      key: 'site_notes',
      type: 'path',
      default: null,
      example: '/etc/l9gpu/site-notes.ini',
      description:
        'A file of site-defined notes for `l9gpu jobs show`: one [name] section per note with when ' +
        "= a condition over the report's figures (util_mean < 0.2 and gpus >= 4), text = what to " +
        'tell the user ({field} placeholders), and optional level = info|warn and link = a URL ' +
        '(docs/jobs.md lists the fields). Checked when read; an error names the file and line.',
    },
  ],
});
