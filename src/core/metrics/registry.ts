/**
 * The one table of every metric l9gpu emits: name, UCUM unit, kind,
 * description, metric-specific attribute keys. docs/metrics.md is generated
 * from it (npm run docs:metrics) and a test fails when the doc is stale.
 *
 * Units are what the value *is* after conversion, for every vendor: ratios are
 * 0..1 with unit "1" (never percent), power W (NVML reports mW), energy J
 * (NVML reports mJ), memory By, temperature Cel, clocks Hz. A 0/1 state (lost,
 * pending) and an info metric (always 1) are not ratios: no unit, so that no
 * backend names them _ratio. Money is {currency} (UCUM has no currencies; the
 * cost.currency attribute names it), money per hour {currency}/h, CO2e g.
 */

/** histogram: a cumulative explicit-bucket histogram (an engine's latency), its buckets on the point (Point.hist). */
export type MetricKind = 'gauge' | 'sum' | 'updown' | 'histogram';

/** Which identity attributes a metric's points carry besides its own keys. */
export type MetricScope = 'gpu' | 'host' | 'agent' | 'engine' | 'nccl';

export interface MetricDef {
  readonly name: string;
  readonly unit: string;
  readonly kind: MetricKind;
  readonly scope: MetricScope;
  readonly description: string;
  /** Attribute keys specific to this metric (identity keys come from the scope). */
  readonly attributes: readonly string[];
  /** An engine metric's part in a job's inference figures (`l9gpu jobs show`): what it counts. */
  readonly inference?: InferenceRole;
}

/** requests: requests served; prompt/generation: tokens in and out; ttft, itl: the latency histograms the report takes quantiles of. */
export type InferenceRole = 'requests' | 'prompt_tokens' | 'generation_tokens' | 'ttft' | 'itl';

/** Identity carried by every point of a scope. */
export const SCOPE_ATTRIBUTES: Record<
  MetricScope,
  {
    required: readonly string[];
    optional: readonly string[];
    /**
     * The job hint: the attribute of the scope's points that names a job in the source's own words (the NCCL
     * Inspector's dump folder), declared here so that the attribution transform and the ledger read it by this
     * declaration, not by name. A hint is a user's word: attribution believes it only for the user's own jobs.
     */
    jobHint?: string;
  }
> = {
  gpu: {
    required: ['gpu.index', 'gpu.uuid', 'gpu.model', 'gpu.vendor', 'gpu.pci.bus_id'],
    optional: ['gpu.mig.instance_id', 'gpu.mig.compute_instance_id', 'gpu.mig.parent_uuid'],
  },
  host: { required: [], optional: [] },
  agent: { required: [], optional: [] },
  // an inference engine's /metrics endpoint; the model when the engine names it
  // process.pid: the process listening on a local endpoint; attribution adds its job's slurm.* and gpu.uuids
  // (the job's GPUs on this node, comma-separated: a point of one engine that serves on several GPUs);
  // process.owner: that process's user (OTel semconv), whose [limits] series_per_user its page counts against
  engine: {
    required: ['server.address', 'server.port', 'gen_ai.provider.name'],
    optional: ['gen_ai.request.model', 'process.pid', 'process.owner', 'gpu.uuids'],
  },
  // a communicator's operations as one NCCL process (a rank) recorded them (plugins/nccl); nccl.job.id: the job the
  // Inspector's dump folder or file names; process.owner: the file's owner; attribution adds the process's job (slurm.*) and GPU (gpu.uuid,
  // or gpu.uuids
  // for a process on several GPUs)
  nccl: {
    required: ['nccl.collective', 'nccl.ranks', 'nccl.nodes'],
    optional: [
      'nccl.comm.id',
      'nccl.comm.name',
      'nccl.rank',
      'nccl.message.size',
      'nccl.algo_proto',
      'nccl.job.id',
      'process.pid',
      'process.owner',
      'gpu.uuid',
      'gpu.uuids',
    ],
    jobHint: 'nccl.job.id',
  },
};

/** The attribute a metric's points name a job with, where its scope declares one (SCOPE_ATTRIBUTES jobHint). */
export const jobHintOf = (d: MetricDef): string | undefined => SCOPE_ATTRIBUTES[d.scope].jobHint;

/** Attributes the attribution step may add to GPU points. */
export const ATTRIBUTION_ATTRIBUTES = [
  'slurm.job.id',
  'slurm.user',
  'slurm.account',
  'slurm.partition',
  'slurm.job.name',
  'slurm.array.job.id',
  'slurm.array.task.id',
  'slurm.cluster.name',
  'k8s.pod.name',
  'k8s.namespace.name',
  'k8s.container.name',
  'k8s.pod.uid',
  'k8s.node.name',
  'k8s.deployment.name',
  'k8s.replicaset.name',
  'k8s.statefulset.name',
  'k8s.daemonset.name',
  'k8s.job.name',
  'k8s.cronjob.name',
  'k8s.owner.kind',
  'k8s.owner.name',
] as const;

/**
 * Attributes that name people or carry their text: a user, an account (often
 * a PI's or a group's name), a job's name (anything its user typed), a
 * process's owner, the user a [limits] event names. The pull page leaves
 * them off where anyone who reaches it can read it ([prometheus]
 * personal_labels, docs/security.md).
 */
export const PERSONAL_ATTRIBUTES: readonly string[] = ['slurm.user', 'slurm.account', 'slurm.job.name', 'process.owner', 'user.name'];

/** Attributes whose names a configuration adds: promoted pod labels, k8s.pod.label.<label>. */
export const ATTRIBUTION_ATTRIBUTE_PREFIXES = ['k8s.pod.label.'] as const;

/** How a job-end summary reads per node (src/figures/node-summary.ts). */
const PER_NODE =
  ' With [attribution] job_labels = info, once per job run and node instead: its GPUs there folded (summed; means ' +
  'weighted by the seconds read; the highest peak), gpu.count of them, no GPU identity.';
/** The attribute of a per-node job-end summary: how many of the node's GPUs the run held. */
export const GPU_COUNT_ATTRIBUTE = 'gpu.count';
const NODE_FOLDED = [GPU_COUNT_ATTRIBUTE];

const m = (
  name: string,
  unit: string,
  kind: MetricKind,
  scope: MetricScope,
  description: string,
  attributes: readonly string[] = [],
): MetricDef => Object.freeze({ name, unit, kind, scope, description, attributes: Object.freeze([...attributes]) });

type EngineRow = readonly [
  suffix: string,
  unit: string,
  kind: MetricKind | 'latency',
  description: string,
  attributes?: readonly string[],
  inference?: InferenceRole,
];

/**
 * One engine's metrics, <engine>.<suffix>: a 'latency' row is a histogram plus
 * its .quantile gauge (p50/p95/p99 of the last scrape window, attribute quantile).
 */
function engine(prefix: string, title: string, rows: readonly EngineRow[]): MetricDef[] {
  const out: MetricDef[] = [];
  for (const [suffix, unit, kind, description, attributes = [], inference] of rows) {
    const name = `${prefix}.${suffix}`;
    const role = (d: MetricDef): MetricDef => (inference ? Object.freeze({ ...d, inference }) : d);
    if (kind !== 'latency') {
      out.push(role(m(name, unit, kind, 'engine', `${title}: ${description}`, attributes)));
      continue;
    }
    out.push(role(m(name, unit, 'histogram', 'engine', `${title}: ${description}`, attributes)));
    out.push(
      m(
        `${name}.quantile`,
        unit,
        'gauge',
        'engine',
        `${title}: the p50, p95 and p99 of ${name} over the last scrape window, from the bucket ` +
          `counts added since the scrape before (linear inside a bucket, as histogram_quantile); none ` +
          `for a window without requests.`,
        [...attributes, 'quantile'],
      ),
    );
  }
  return out;
}

export const METRICS: readonly MetricDef[] = Object.freeze([
  // --- GPU (every vendor; the contract names of design.md) ---
  m(
    'gpu.utilization',
    '1',
    'gauge',
    'gpu',
    'Fraction of the time during which one or more kernels ran on the GPU (0..1): the mean of ' +
      'every sample the driver took over the collection interval where it keeps them (NVML), else ' +
      'one reading. A MIG instance has no such figure in NVML: its value is the graphics-engine ' +
      'activity of its GPU instance over the interval (gpu.engine.active, GPM, Hopper and later).',
  ),
  m(
    'gpu.utilization.max',
    '1',
    'gauge',
    'gpu',
    'Highest GPU utilization sample the driver took during the collection interval (0..1; NVML sample buffers).',
  ),
  m(
    'gpu.engine.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of the collection interval during which the graphics/compute engine was busy ' +
      '(0..1; NVML GPM GRAPHICS_UTIL, the counterpart of DCGM_FI_PROF_GR_ENGINE_ACTIVE). Hopper ' +
      "and later; per GPU instance on a MIG GPU. AMD: amd-smi usage.gfx_activity, the SMU's own " +
      "short running average of the graphics engine's busy time at the read.",
  ),
  m(
    'gpu.sm.active',
    '1',
    'gauge',
    'gpu',
    'Mean fraction of the SMs that had work resident over the collection interval (0..1; NVML ' +
      'GPM SM_UTIL, cf. DCGM_FI_PROF_SM_ACTIVE). Hopper and later.',
  ),
  m(
    'gpu.sm.occupancy',
    '1',
    'gauge',
    'gpu',
    "Resident warps as a fraction of the SMs' theoretical maximum, over the collection interval " +
      '(0..1; NVML GPM SM_OCCUPANCY, cf. DCGM_FI_PROF_SM_OCCUPANCY). Hopper and later.',
  ),
  m(
    'gpu.tensor.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of the collection interval during which any tensor pipe was busy (0..1; NVML GPM ' +
      'ANY_TENSOR_UTIL, cf. DCGM_FI_PROF_PIPE_TENSOR_ACTIVE). Hopper and later.',
  ),
  m(
    'gpu.dram.active',
    '1',
    'gauge',
    'gpu',
    'Device memory bandwidth used as a fraction of the theoretical maximum, over the collection ' +
      'interval (0..1; NVML GPM DRAM_BW_UTIL, cf. DCGM_FI_PROF_DRAM_ACTIVE). Hopper and later.',
  ),
  m(
    'gpu.tensor.pipe.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of the collection interval during which the SMs were doing tensor (matrix) ' +
      'operations of one kind, 0..1: gpu.tensor.pipe hmma (half-precision matrix), imma (integer ' +
      "matrix), dfma and dmma (double precision), NVIDIA's names (NVML GPM DFMA_TENSOR_UTIL, " +
      'HMMA_TENSOR_UTIL, IMMA_TENSOR_UTIL, DMMA_TENSOR_UTIL, cf. ' +
      'DCGM_FI_PROF_PIPE_TENSOR_DFMA/HMMA/IMMA_ACTIVE). Hopper and later; dmma from NVML v595 ' +
      '(driver 595).',
    ['gpu.tensor.pipe'],
  ),
  m(
    'gpu.pipe.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of the collection interval during which the SMs were doing non-tensor math of one ' +
      'kind, 0..1: gpu.pipe fp64, fp32, fp16 or integer (NVML GPM FP64_UTIL, FP32_UTIL, ' +
      'FP16_UTIL, INTEGER_UTIL, cf. DCGM_FI_PROF_PIPE_FP64/FP32/FP16/INT_ACTIVE). Hopper and ' +
      'later; per GPU instance on a MIG GPU.',
    ['gpu.pipe'],
  ),
  m(
    'gpu.nvlink.throughput',
    'By/s',
    'gauge',
    'gpu',
    'NVLink traffic over all links, the mean over the collection interval (NVML GPM ' +
      'NVLINK_TOTAL_RX/TX_PER_SEC, MiB/s converted; the source of ' +
      'DCGM_FI_PROF_NVLINK_RX/TX_BYTES, which DCGM documents as headers and payload). Hopper and ' +
      'later. gpu.interconnect.throughput counts the data payload from the NVLink field counters ' +
      'instead.',
    ['network.io.direction'],
  ),
  m(
    'gpu.sm.cycles.elapsed',
    '{cycle}',
    'sum',
    'gpu',
    "SM cycles elapsed since the GPU's last reset (NVML GPM SM_CYCLES_ELAPSED, cf. " +
      'DCGM_FI_PROF_SM_CYCLES_ELAPSED_TOTAL): the denominator of the cycle counters, so that any ' +
      "window's exact mean is the ratio of two counters' increases. NVML v595 (driver 595) and " +
      'later, Hopper and later.',
  ),
  m(
    'gpu.sm.cycles.active',
    '{cycle}',
    'sum',
    'gpu',
    "SM cycles with at least one warp resident since the GPU's last reset (NVML GPM " +
      'SM_CYCLES_ACTIVE, cf. DCGM_FI_PROF_SM_CYCLES_ACTIVE_TOTAL); its increase over ' +
      "gpu.sm.cycles.elapsed's is the SM activity of the window. NVML v595 and later.",
  ),
  m(
    'gpu.tensor.cycles.active',
    '{cycle}',
    'sum',
    'gpu',
    "SM cycles doing any tensor (MMA) operation since the GPU's last reset (NVML GPM " +
      'MMA_CYCLES_ACTIVE, cf. DCGM_FI_PROF_MMA_CYCLES_ACTIVE_TOTAL). NVML v595 and later.',
  ),
  m(
    'gpu.tensor.pipe.cycles.active',
    '{cycle}',
    'sum',
    'gpu',
    "SM cycles doing tensor operations of one kind since the GPU's last reset, gpu.tensor.pipe " +
      'dfma, hmma, imma or dmma (NVML GPM DFMA/HMMA/IMMA/DMMA_CYCLES_ACTIVE, cf. ' +
      'DCGM_FI_PROF_*_CYCLES_ACTIVE_TOTAL). NVML v595 and later.',
    ['gpu.tensor.pipe'],
  ),
  m(
    'gpu.pipe.cycles.active',
    '{cycle}',
    'sum',
    'gpu',
    "SM cycles doing non-tensor math of one kind since the GPU's last reset, gpu.pipe fp64, " +
      'fp32, fp16 or integer (NVML GPM FP64/FP32/FP16/INTEGER_CYCLES_ACTIVE, cf. ' +
      'DCGM_FI_PROF_FP64/FP32/FP16/INT_CYCLES_ACTIVE_TOTAL). NVML v595 and later.',
    ['gpu.pipe'],
  ),
  m(
    'gpu.pcie.io',
    'By',
    'sum',
    'gpu',
    "PCIe traffic since the GPU's last reset, by direction (NVML GPM PCIE_TX, PCIE_RX, cf. " +
      'DCGM_FI_PROF_PCIE_TX/RX_BYTES_TOTAL); the increase over a job is its PCIe bytes. NVML v595 ' +
      'and later.',
    ['network.io.direction'],
  ),
  m(
    'gpu.memory.controller.utilization',
    '1',
    'gauge',
    'gpu',
    'Fraction of the sample period during which device memory was read or written (memory controller busy, 0..1; ' +
      'NVML utilization.memory, amd-smi umc_activity, DCGM_FI_DEV_MEM_COPY_UTIL). Not how full the memory is: that is ' +
      'gpu.memory.capacity.utilization. Named gpu.memory.utilization before 0.2.',
  ),
  m(
    'gpu.memory.capacity.utilization',
    '1',
    'gauge',
    'gpu',
    "Fraction of the device memory in use (gpu.memory.used / gpu.memory.total, 0..1): the conventions' hw.gpu.memory.utilization.",
  ),
  m('gpu.memory.used', 'By', 'gauge', 'gpu', 'Device memory allocated by processes and the driver.'),
  m('gpu.memory.free', 'By', 'gauge', 'gpu', 'Device memory available for allocation.'),
  m('gpu.memory.total', 'By', 'gauge', 'gpu', 'Total device memory visible to the driver.'),
  m('gpu.temperature', 'Cel', 'gauge', 'gpu', 'Temperature of a GPU sensor.', ['gpu.temperature.sensor']),
  m(
    'gpu.power.draw',
    'W',
    'gauge',
    'gpu',
    "Board power draw: the mean of the driver's samples over the collection interval where it keeps them (NVML), else the current reading.",
  ),
  m(
    'gpu.power.draw.max',
    'W',
    'gauge',
    'gpu',
    'Highest board power sample the driver took during the collection interval (NVML sample buffers).',
  ),
  m('gpu.power.limit', 'W', 'gauge', 'gpu', 'Power limit currently enforced by the driver.'),
  m(
    'gpu.energy.consumption',
    'J',
    'sum',
    'gpu',
    'Energy consumed by the GPU since the driver (or the source) started counting; monotonic, resets on driver reload.',
  ),
  m('gpu.clock.frequency', 'Hz', 'gauge', 'gpu', 'Current clock frequency, in Hz (MHz before 0.2).', ['gpu.clock.type']),
  m('gpu.throttle.active', '1', 'gauge', 'gpu', '1 while clocks are reduced for the given cause, else 0 (idle is not throttling).', [
    'gpu.throttle.cause',
  ]),
  m('gpu.ecc.errors', '{error}', 'sum', 'gpu', 'ECC memory errors counted by the driver.', ['error.type', 'gpu.ecc.scope']),
  m('gpu.xid.errors', '{error}', 'sum', 'gpu', 'Xid error events seen by this agent since it started, by Xid code.', ['gpu.xid.code']),
  m('gpu.pcie.throughput', 'By/s', 'gauge', 'gpu', 'PCIe data rate.', ['network.io.direction']),
  m(
    'gpu.interconnect.throughput',
    'By/s',
    'gauge',
    'gpu',
    'GPU-to-GPU interconnect data rate, computed between two samples of the cumulative counter.',
    ['network.io.direction', 'gpu.interconnect.type'],
  ),
  m(
    'gpu.fan.speed_ratio',
    '1',
    'gauge',
    'gpu',
    "Fan speed as a fraction of the fan's rated maximum (may exceed 1, nvml.h); not rpm. Named gpu.fan.speed before 0.2.",
  ),
  m('gpu.performance_state', '{state}', 'gauge', 'gpu', 'Performance state (0 = maximum performance, 15 = minimum).'),
  m(
    'gpu.memory.reserved',
    'By',
    'gauge',
    'gpu',
    'Device memory reserved by the driver and firmware (not counted in used; NVML memory v2).',
  ),
  m(
    'gpu.memory.remapped_rows',
    '{row}',
    'gauge',
    'gpu',
    'Memory rows remapped by the GPU (Ampere and later), by the kind of error that caused it.',
    ['gpu.memory.remap.cause'],
  ),
  m('gpu.memory.remap.pending', '', 'gauge', 'gpu', '1 while a row remapping waits for a GPU reset, else 0.'),
  m('gpu.memory.remap.failed', '', 'gauge', 'gpu', '1 if a row remapping failed (the GPU needs service), else 0.'),
  m('gpu.memory.retired_pages', '{page}', 'gauge', 'gpu', 'Memory pages retired by the driver (pre-Ampere), by cause.', [
    'gpu.memory.retirement.cause',
  ]),
  m('gpu.memory.retirement.pending', '', 'gauge', 'gpu', '1 while a page retirement waits for a driver reload, else 0.'),
  m('gpu.ecc.block.errors', '{error}', 'sum', 'gpu', 'ECC errors per memory or logic block (AMD), since the driver started counting.', [
    'error.type',
    'gpu.ecc.block',
  ]),
  m(
    'gpu.pcie.replays',
    '{replay}',
    'sum',
    'gpu',
    'PCIe packet replays (link-level retransmissions); a rising count means a marginal link.',
  ),
  m('gpu.interconnect.io', 'By', 'sum', 'gpu', 'Data moved over the GPU-to-GPU interconnect, cumulative (all links).', [
    'network.io.direction',
    'gpu.interconnect.type',
  ]),
  m('gpu.process.count', '{process}', 'gauge', 'gpu', 'Compute processes running on the GPU.'),
  m('gpu.process.memory.used', 'By', 'gauge', 'gpu', 'Device memory used by one process.', ['process.pid']),
  m(
    'gpu.lost',
    '',
    'gauge',
    'gpu',
    '1 while the driver reports the GPU lost (fell off the bus, Xid 79), else 0; its other metrics stop meanwhile.',
  ),
  m(
    'gpu.info',
    '',
    'gauge',
    'gpu',
    'Always 1; carries slowly changing facts as attributes for joins: driver version, device minor number, the ' +
      "board's serial number and its VBIOS (NVIDIA, AMD) or firmware (Gaudi) version, where the vendor reports them.",
    ['gpu.driver.version', 'gpu.device.minor', 'gpu.serial_number', 'gpu.firmware.version'],
  ),

  m(
    'gpu.health',
    '',
    'gauge',
    'gpu',
    "The GPU's health by the rules of docs/health.md: 0 ok, 1 warning, 2 failed; " +
      'gpu.health.reason lists the codes of the rules that hold (comma-separated, empty when ' +
      'none). `l9gpu health` says each reason in words and what to do.',
    ['gpu.health.reason'],
  ),
  m(
    'gpu.health.score',
    '1',
    'gauge',
    'gpu',
    "The GPU's health score, 0..1 (1 healthy): the product of the score factors of the rules " +
      'that hold (docs/health.md); 0 when one of them is a failure.',
  ),

  m(
    'gpu.job.share',
    '1',
    'gauge',
    'gpu',
    'Share (0..1) of the GPU attributed to a job: 1 when the job holds it alone; on a shared ' +
      "GPU (shards, MPS) the job's part of the per-process memory, else 1/N. Multiply additive " +
      'values (power, energy) by it. One series per GPU and job run, with every attribute of the ' +
      'job; with [attribution] job_labels = info the only series of the GPU that names the job ' +
      '(queries join on host.name and gpu.uuid).',
  ),
  m(
    'gpu.job.energy',
    'J',
    'gauge',
    'gpu',
    "Energy a job used on the GPU over its whole binding (energy counter delta times the job's " +
      'share); exported once, when the binding closes.' +
      PER_NODE,
    NODE_FOLDED,
  ),
  m(
    'gpu.job.duration',
    's',
    'gauge',
    'gpu',
    "GPU time of a job on the GPU (sampled seconds times the job's share); exported once, when the binding closes." + PER_NODE,
    NODE_FOLDED,
  ),
  m(
    'gpu.job.utilization',
    '1',
    'gauge',
    'gpu',
    "Mean utilization (0..1) of the GPU over a job's binding; exported once, when the binding closes." + PER_NODE,
    NODE_FOLDED,
  ),
  m(
    'gpu.job.memory.peak',
    'By',
    'gauge',
    'gpu',
    "Peak device memory used on the GPU during a job's binding; exported once, when the binding closes." + PER_NODE,
    NODE_FOLDED,
  ),
  m(
    'gpu.job.sm.active',
    '1',
    'gauge',
    'gpu',
    "Mean SM activity (0..1, gpu.sm.active) of the GPU over a job's binding, each collection " +
      'window weighted by its length; exported once, when the binding closes, on GPUs with GPM ' +
      '(Hopper and later).' +
      PER_NODE,
    NODE_FOLDED,
  ),
  m(
    'gpu.job.sm.occupancy',
    '1',
    'gauge',
    'gpu',
    "Mean SM occupancy (0..1, gpu.sm.occupancy) of the GPU over a job's binding, time-weighted; " +
      'exported once, when the binding closes, on GPUs with GPM.',
  ),
  m(
    'gpu.job.tensor.active',
    '1',
    'gauge',
    'gpu',
    "Mean tensor-pipe activity (0..1, gpu.tensor.active) of the GPU over a job's binding, " +
      'time-weighted; exported once, when the binding closes, on GPUs with GPM.',
  ),
  m(
    'gpu.job.dram.active',
    '1',
    'gauge',
    'gpu',
    "Mean device-memory bandwidth use (0..1, gpu.dram.active) of the GPU over a job's binding, " +
      'time-weighted; exported once, when the binding closes, on GPUs with GPM.',
  ),
  m(
    'gpu.job.pipe.active',
    '1',
    'gauge',
    'gpu',
    "Mean non-tensor math activity (0..1, gpu.pipe.active) of the GPU over a job's binding by " +
      'gpu.pipe fp64, fp32 or fp16, time-weighted; exported once, when the binding closes, for ' +
      'the pipes the GPU counts.',
    ['gpu.pipe'],
  ),
  m(
    'gpu.job.nvlink.io',
    'By',
    'gauge',
    'gpu',
    "NVLink bytes of the GPU over a job's binding, both directions (gpu.nvlink.throughput " +
      'integrated over the collection windows); exported once, when the binding closes, on GPUs ' +
      'with GPM.',
  ),
  m(
    'gpu.job.pcie.io',
    'By',
    'gauge',
    'gpu',
    "PCIe bytes of the GPU over a job's binding, both directions (the GPM gpu.pcie.throughput " +
      'integrated over the collection windows; windows without GPM are not counted); exported ' +
      'once, when the binding closes, on GPUs with GPM.',
  ),
  m(
    'gpu.job.cost',
    '{currency}',
    'gauge',
    'gpu',
    "What a job's time on the GPU cost, in cost.currency: its GPU-hours (gpu.job.duration / " +
      "3600) at the GPU-hour price of [jobs] (the node's, else the job's partition's, else the " +
      "GPU model's, else the default), plus its energy (gpu.job.energy) in kWh times pue at " +
      'kwh_price; exported once, when the binding closes, and only with a price configured.' +
      PER_NODE,
    ['cost.currency', ...NODE_FOLDED],
  ),
  m(
    'gpu.job.co2e',
    'g',
    'gauge',
    'gpu',
    "Grams of CO2e of a job's energy on the GPU: gpu.job.energy in kWh times [jobs] pue times " +
      'carbon_intensity (gCO2e/kWh); exported once, when the binding closes, and only with ' +
      'carbon_intensity set.' +
      PER_NODE,
    NODE_FOLDED,
  ),
  m(
    'gpu.cost.rate',
    '{currency}/h',
    'gauge',
    'gpu',
    'What an hour of the GPU costs at this moment, in cost.currency: its GPU-hour price (the ' +
      "node's, else the partition's of the job holding it, else the GPU model's, else the default " +
      'of [jobs]) plus its power draw in kW times pue at kwh_price. A GPU held by several jobs ' +
      "has one point per job, its share of the rate (they add up to the GPU's). Only with a price " +
      'configured.',
    ['cost.currency'],
  ),
  m(
    'gpu.cost.idle.rate',
    '{currency}/h',
    'gauge',
    'gpu',
    'gpu.cost.rate while the GPU is unused, else 0: cost.idle.kind is allocated (held by a job, ' +
      'utilization below 0.01 in this collection) or unallocated (held by no job, whatever its ' +
      'utilization). None for a held GPU without a utilization reading. Only with a price ' +
      'configured.',
    ['cost.currency', 'cost.idle.kind'],
  ),
  m(
    'gpu.process.outside_allocation',
    '{process}',
    'gauge',
    'gpu',
    "Processes running on the GPU that belong to no job bound to it (another job's process, or none): a GPU used outside its allocation.",
  ),

  // --- dcgm-exporter's profiling fields (plugins/dcgm), their own metrics beside nvml's GPM ones ---
  m(
    'dcgm.prof.graphics_engine.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of time the graphics or compute engine was active, 0..1 (DCGM_FI_PROF_GR_ENGINE_ACTIVE; per GPU instance on MIG).',
  ),
  m(
    'dcgm.prof.sm.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of time at least one warp was resident on an SM, averaged over the SMs, 0..1 (DCGM_FI_PROF_SM_ACTIVE).',
  ),
  m(
    'dcgm.prof.sm.occupancy',
    '1',
    'gauge',
    'gpu',
    'Resident warps as a fraction of the maximum, averaged over the SMs, 0..1 (DCGM_FI_PROF_SM_OCCUPANCY).',
  ),
  m(
    'dcgm.prof.tensor.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of cycles the tensor pipes were active, 0..1 (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE).',
  ),
  m(
    'dcgm.prof.dram.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of cycles the device memory interface was sending or receiving data, 0..1 (DCGM_FI_PROF_DRAM_ACTIVE).',
  ),
  m(
    'dcgm.prof.pipe.active',
    '1',
    'gauge',
    'gpu',
    'Fraction of cycles a floating-point pipe was active, by precision, 0..1 (DCGM_FI_PROF_PIPE_FP64_ACTIVE, FP32, FP16).',
    ['dcgm.pipe'],
  ),
  m(
    'dcgm.prof.pcie.throughput',
    'By/s',
    'gauge',
    'gpu',
    'PCIe data rate, headers included (DCGM_FI_PROF_PCIE_TX_BYTES, RX: rates despite the name).',
    ['network.io.direction'],
  ),
  m('dcgm.prof.nvlink.throughput', 'By/s', 'gauge', 'gpu', 'NVLink data rate, headers included (DCGM_FI_PROF_NVLINK_TX_BYTES, RX).', [
    'network.io.direction',
  ]),

  // --- inference engines (plugins/vllm, sglang, tgi, triton, nim; src/scrape) ---
  // Histograms are the engines' own buckets, cumulative; each latency one has a .quantile gauge: p50/p95/p99 over
  // the last scrape window from the bucket deltas. Counters are monotonic sums from the engine's start.
  ...engine('vllm', 'vLLM', [
    ['requests.running', '{request}', 'gauge', 'Requests in model execution batches (vllm:num_requests_running).'],
    ['requests.waiting', '{request}', 'gauge', 'Requests waiting to be scheduled (vllm:num_requests_waiting).'],
    [
      'kv_cache.usage',
      '1',
      'gauge',
      'Fraction of the KV-cache blocks in use, 0..1 (vllm:kv_cache_usage_perc; before 0.9.2 vllm:gpu_cache_usage_perc).',
    ],
    ['tokens.prompt', '{token}', 'sum', 'Prefill (prompt) tokens processed (vllm:prompt_tokens_total).', [], 'prompt_tokens'],
    ['tokens.generation', '{token}', 'sum', 'Tokens generated (vllm:generation_tokens_total).', [], 'generation_tokens'],
    ['preemptions', '{preemption}', 'sum', 'Requests preempted by the scheduler (vllm:num_preemptions_total).'],
    [
      'requests.finished',
      '{request}',
      'sum',
      'Requests finished, by reason (vllm:request_success_total, label finished_reason).',
      ['vllm.finished_reason'],
      'requests',
    ],
    [
      'prefix_cache.queries',
      '{token}',
      'sum',
      'Tokens looked up in the prefix cache (vllm:prefix_cache_queries_total; before 0.9 gpu_prefix_cache_queries).',
    ],
    [
      'prefix_cache.hits',
      '{token}',
      'sum',
      'Tokens found in the prefix cache (vllm:prefix_cache_hits_total; before 0.9 gpu_prefix_cache_hits).',
    ],
    [
      'time_to_first_token',
      's',
      'latency',
      "Time from a request's arrival to its first token (vllm:time_to_first_token_seconds).",
      [],
      'ttft',
    ],
    [
      'inter_token_latency',
      's',
      'latency',
      'Time between two output tokens (vllm:inter_token_latency_seconds; before 0.11 vllm:time_per_output_token_seconds).',
      [],
      'itl',
    ],
    ['request.duration', 's', 'latency', 'End-to-end request latency (vllm:e2e_request_latency_seconds).'],
    ['request.queue_time', 's', 'latency', 'Time a request waited in the queue (vllm:request_queue_time_seconds).'],
    ['request.prefill_time', 's', 'latency', 'Time a request spent in prefill (vllm:request_prefill_time_seconds).'],
    ['request.decode_time', 's', 'latency', 'Time a request spent in decode (vllm:request_decode_time_seconds).'],
    ['request.prompt_tokens', '{token}', 'histogram', 'Prompt tokens per request (vllm:request_prompt_tokens).'],
    ['request.generation_tokens', '{token}', 'histogram', 'Generated tokens per request (vllm:request_generation_tokens).'],
    ['iteration.tokens', '{token}', 'histogram', 'Tokens per engine step (vllm:iteration_tokens_total, a histogram despite its name).'],
  ]),
  ...engine('sglang', 'SGLang', [
    ['requests.running', '{request}', 'gauge', 'Requests running (sglang:num_running_reqs).'],
    ['requests.waiting', '{request}', 'gauge', 'Requests in the queue (sglang:num_queue_reqs).'],
    ['tokens.used', '{token}', 'gauge', 'KV-cache tokens in use (sglang:num_used_tokens).'],
    ['token_usage', '1', 'gauge', 'Fraction of the KV-cache token pool in use, 0..1 (sglang:token_usage).'],
    ['generation.throughput', '{token}/s', 'gauge', 'Generation throughput the engine measured (sglang:gen_throughput).'],
    ['cache.hit_rate', '1', 'gauge', 'Prefix-cache hit rate, 0..1 (sglang:cache_hit_rate).'],
    ['tokens.prompt', '{token}', 'sum', 'Prefill tokens processed (sglang:prompt_tokens_total).', [], 'prompt_tokens'],
    ['tokens.generation', '{token}', 'sum', 'Tokens generated (sglang:generation_tokens_total).', [], 'generation_tokens'],
    ['tokens.cached', '{token}', 'sum', 'Prompt tokens served from the prefix cache (sglang:cached_tokens_total).'],
    ['requests', '{request}', 'sum', 'Requests received (sglang:num_requests_total).', [], 'requests'],
    ['time_to_first_token', 's', 'latency', 'Time to the first token (sglang:time_to_first_token_seconds).', [], 'ttft'],
    [
      'inter_token_latency',
      's',
      'latency',
      'Time between two output tokens (sglang:inter_token_latency_seconds; older sglang:time_per_output_token_seconds).',
      [],
      'itl',
    ],
    ['request.duration', 's', 'latency', 'End-to-end request latency (sglang:e2e_request_latency_seconds).'],
    ['request.queue_time', 's', 'latency', 'Time a request waited in the queue (sglang:queue_time_seconds).'],
  ]),
  ...engine('tgi', 'Hugging Face TGI', [
    ['queue.size', '{request}', 'gauge', 'Requests in the queue (tgi_queue_size).'],
    ['batch.size', '{request}', 'gauge', 'Requests in the current batch (tgi_batch_current_size).'],
    ['batch.max_tokens', '{token}', 'gauge', 'Token budget of the current batch (tgi_batch_current_max_tokens).'],
    ['requests', '{request}', 'sum', 'Requests received (tgi_request_count).', [], 'requests'],
    ['requests.succeeded', '{request}', 'sum', 'Requests that succeeded (tgi_request_success).'],
    ['requests.failed', '{request}', 'sum', 'Requests that failed, by error (tgi_request_failure, label err).', ['tgi.err']],
    ['request.duration', 's', 'latency', 'End-to-end request latency (tgi_request_duration).'],
    ['request.queue_duration', 's', 'latency', 'Time a request waited in the queue (tgi_request_queue_duration).'],
    ['request.inference_duration', 's', 'latency', 'Inference time of a request (tgi_request_inference_duration).'],
    [
      'request.time_per_token',
      's',
      'latency',
      'Mean time per generated token of a request (tgi_request_mean_time_per_token_duration).',
      [],
      'itl',
    ],
    [
      'request.generated_tokens',
      '{token}',
      'histogram',
      'Generated tokens per request (tgi_request_generated_tokens); its sum is the tokens generated.',
      [],
      'generation_tokens',
    ],
    [
      'request.input_length',
      '{token}',
      'histogram',
      'Input tokens per request (tgi_request_input_length); its sum is the prompt tokens.',
      [],
      'prompt_tokens',
    ],
  ]),
  ...engine('triton', 'NVIDIA Triton', [
    ['requests.succeeded', '{request}', 'sum', 'Inference requests that succeeded (nv_inference_request_success).', [], 'requests'],
    ['requests.failed', '{request}', 'sum', 'Inference requests that failed, by reason (nv_inference_request_failure).', ['triton.reason']],
    ['inferences', '{inference}', 'sum', 'Inferences performed; a batched request counts each item (nv_inference_count).'],
    ['executions', '{execution}', 'sum', 'Model executions (nv_inference_exec_count).'],
    ['requests.pending', '{request}', 'gauge', 'Requests waiting in the scheduler (nv_inference_pending_request_count).'],
    [
      'request.time',
      's',
      'sum',
      'Cumulative end-to-end time of the requests (nv_inference_request_duration_us, microseconds ' +
        'converted); its rate over requests.succeeded is the mean latency.',
    ],
    ['queue.time', 's', 'sum', 'Cumulative time requests waited in the queue (nv_inference_queue_duration_us).'],
    [
      'compute.time',
      's',
      'sum',
      'Cumulative compute time, by phase (nv_inference_compute_{input,infer,output}_duration_us).',
      ['triton.phase'],
    ],
  ]),
  ...engine('nim', 'NVIDIA NIM for LLMs', [
    ['requests.running', '{request}', 'gauge', 'Requests running (num_requests_running).'],
    ['requests.waiting', '{request}', 'gauge', 'Requests waiting (num_requests_waiting).'],
    ['requests.max', '{request}', 'gauge', 'Most requests the engine runs at once (num_request_max).'],
    ['kv_cache.usage', '1', 'gauge', 'Fraction of the KV cache in use, 0..1 (gpu_cache_usage_perc).'],
    ['tokens.prompt', '{token}', 'sum', 'Prefill tokens processed (prompt_tokens_total).', [], 'prompt_tokens'],
    ['tokens.generation', '{token}', 'sum', 'Tokens generated (generation_tokens_total).', [], 'generation_tokens'],
    ['requests.finished', '{request}', 'sum', 'Requests finished, by reason (request_finish_total).', ['nim.finished_reason'], 'requests'],
    ['requests.succeeded', '{request}', 'sum', 'Requests that succeeded (request_success_total).'],
    ['requests.failed', '{request}', 'sum', 'Requests that failed (request_failure_total).'],
    ['time_to_first_token', 's', 'latency', 'Time to the first token (time_to_first_token_seconds).', [], 'ttft'],
    ['time_per_output_token', 's', 'latency', 'Time per output token (time_per_output_token_seconds).', [], 'itl'],
    ['request.duration', 's', 'latency', 'End-to-end request latency (e2e_request_latency_seconds).'],
    ['request.prompt_tokens', '{token}', 'histogram', 'Prompt tokens per request (request_prompt_tokens).'],
    ['request.generation_tokens', '{token}', 'histogram', 'Generated tokens per request (request_generation_tokens).'],
  ]),
  // GenAI semantic conventions (semantic-conventions-genai; Development), emitted besides the engines' own with [daemon] emit_genai
  m(
    'gen_ai.server.time_to_first_token',
    's',
    'histogram',
    'engine',
    "Time to generate the first token (GenAI semantic conventions), the engine's own buckets.",
  ),
  m(
    'gen_ai.server.time_per_output_token',
    's',
    'histogram',
    'engine',
    "Time per output token after the first (GenAI semantic conventions), the engine's own buckets.",
  ),
  m(
    'gen_ai.server.request.duration',
    's',
    'histogram',
    'engine',
    "Server-side request duration (GenAI semantic conventions), the engine's own buckets.",
  ),

  // --- NCCL Inspector (plugins/nccl): collectives and point-to-point operations of distributed jobs ---
  m(
    'nccl.operations',
    '{operation}',
    'sum',
    'nccl',
    'Operations the NCCL Inspector recorded, per communicator, collective (or Send/Recv), message-size bucket and rank.',
  ),
  m(
    'nccl.bytes',
    'By',
    'sum',
    'nccl',
    'Message bytes of those operations, as NCCL counts a message (coll_msg_size_bytes: ' +
      'AllGather the bytes each rank sends, ReduceScatter those each receives).',
  ),
  m(
    'nccl.exec.time',
    's',
    'histogram',
    'nccl',
    "Execution time of each operation (the Inspector's kernel span on the GPU: it includes waiting for the other ranks).",
  ),
  m(
    'nccl.bandwidth.algorithm',
    'By/s',
    'gauge',
    'nccl',
    'Algorithm bandwidth of the operations recorded in the collection interval: their data ' +
      'moved over their execution time (AllGather and ReduceScatter move the message times the ' +
      'ranks), recomputed from size, time and ranks.',
  ),
  m(
    'nccl.bandwidth.bus',
    'By/s',
    'gauge',
    'nccl',
    'Bus bandwidth of the operations recorded in the collection interval: the algorithm ' +
      "bandwidth times nccl-tests' factor (AllReduce 2(n-1)/n, AllGather and ReduceScatter " +
      "(n-1)/n, others 1), comparable with the fabric's peak.",
  ),
  m(
    'nccl.interval.bandwidth.bus',
    'By/s',
    'gauge',
    'nccl',
    "Bus bandwidth over the Inspector's own dump interval, the geometric mean of its " +
      "operations' (Prometheus files of NCCL 2.30 and later, nccl_bus_bandwidth_gbs).",
  ),
  m(
    'nccl.interval.exec.time',
    's',
    'gauge',
    'nccl',
    "Mean execution time of an operation over the Inspector's own dump interval (Prometheus files of NCCL 2.30 and later).",
  ),
  m(
    'nccl.rank.slowdown',
    '1',
    'gauge',
    'nccl',
    "How much longer a rank takes than the communicator's typical rank on this node, on the " +
      "same operations (the median over the window of its time over each operation's median time, " +
      "over the ranks' median); 1 if typical, above 1 slower (a factor, not bounded by 1).",
  ),
  m(
    'nccl.rank.straggler',
    '',
    'gauge',
    'nccl',
    '1 while a rank is persistently slower than its peers on the same operations (its slowdown ' +
      "above the ranks' median by 5 median absolute deviations and by 20 % at least), else 0.",
  ),
  m(
    'l9gpu.nccl.lines.rejected',
    '{line}',
    'sum',
    'agent',
    'Lines of NCCL Inspector files that were not a record (not JSON, a field missing or out of ' +
      'range, longer than the line bound); the log names the first of each file.',
  ),

  // --- host (plugins/host, from /proc) ---
  m(
    'system.cpu.utilization',
    '1',
    'gauge',
    'host',
    'Fraction of CPU time spent in each cpu.mode over the sample period, all logical CPUs together (0..1; the modes ' +
      'of a sample add up to 1): user, nice, system, idle, iowait, interrupt (irq and softirq), steal. Busy is 1 minus ' +
      'idle and iowait. One value, not by mode, before 0.2.',
    ['cpu.mode'],
  ),
  m('system.cpu.logical.count', '{cpu}', 'updown', 'host', 'Logical CPUs online.'),
  m('system.cpu.load_average.1m', '{thread}', 'gauge', 'host', 'Load average over 1 minute.'),
  m('system.cpu.load_average.5m', '{thread}', 'gauge', 'host', 'Load average over 5 minutes.'),
  m('system.cpu.load_average.15m', '{thread}', 'gauge', 'host', 'Load average over 15 minutes.'),
  m(
    'system.memory.usage',
    'By',
    'updown',
    'host',
    'Host memory by state: used (excludes page cache and buffers), free, buffers, cached (page cache plus reclaimable slab).',
    ['system.memory.state'],
  ),
  m('system.memory.limit', 'By', 'updown', 'host', 'Total usable host memory.'),
  m(
    'system.memory.utilization',
    '1',
    'gauge',
    'host',
    'Fraction of host memory in each system.memory.state (system.memory.usage / system.memory.limit): used, free, ' +
      'buffers, cached. One value, 1 - MemAvailable/MemTotal, before 0.2.',
    ['system.memory.state'],
  ),

  // --- the agent itself ---
  m('l9gpu.collector.duration', 's', 'gauge', 'agent', 'Wall time of the last collection of a plugin.', ['l9gpu.plugin']),
  m('l9gpu.collector.points', '{point}', 'sum', 'agent', 'Data points produced by a plugin.', ['l9gpu.plugin']),
  m('l9gpu.collector.errors', '{error}', 'sum', 'agent', 'Collections of a plugin that threw or timed out.', ['l9gpu.plugin']),
  m('l9gpu.collector.skipped', '{tick}', 'sum', 'agent', 'Ticks of a plugin skipped because its previous collection was still running.', [
    'l9gpu.plugin',
  ]),
  m(
    'l9gpu.scrape.empty',
    '{page}',
    'sum',
    'agent',
    "Pages scraped from an engine or dcgm-exporter endpoint that declared the engine's metric " +
      'families (# TYPE, # HELP) and held no sample of any of them, so gave no points: an engine ' +
      'that has not filled them yet, or a server that renamed the samples and not their # TYPE ' +
      "lines (prometheus_client's escaping=underscores); the log says it once per endpoint, with " +
      'which.',
    ['l9gpu.plugin', 'server.address', 'server.port'],
  ),
  m(
    'l9gpu.scrape.errors',
    '{error}',
    'sum',
    'agent',
    'Failed scrapes of an engine or dcgm-exporter endpoint (down, too slow, too large, not the ' +
      'exposition grammar); the log says each failure once, and again when the endpoint answers.',
    ['l9gpu.plugin', 'server.address', 'server.port'],
  ),
  m(
    'l9gpu.sink.exported',
    '{point}',
    'sum',
    'agent',
    "Data points a sink delivered, each once: a push sink's when the destination took them; the " +
      "prometheus sink's when a GET scrape first served them (the same points served again, or to " +
      'HEAD, do not count again; points replaced before any scrape never count).',
    ['l9gpu.sink'],
  ),
  m(
    'l9gpu.sink.dropped',
    '{point}',
    'sum',
    'agent',
    'Data points a sink gave up on (queue full, rejected by the backend, output blocked).',
    ['l9gpu.sink'],
  ),
  m('l9gpu.sink.errors', '{error}', 'sum', 'agent', 'Failed delivery attempts of a sink (each retry counts).', ['l9gpu.sink']),
  m('l9gpu.sink.queue.size', 'By', 'updown', 'agent', "Encoded bytes waiting in a sink's retry queue.", ['l9gpu.sink']),
  m('l9gpu.process.memory.rss', 'By', 'gauge', 'agent', 'Resident set size of the agent process.'),
  m('l9gpu.slurm.bindings', '{binding}', 'gauge', 'agent', 'Open job-to-GPU bindings in the store.'),
  m('l9gpu.slurm.reconcile.age', 's', 'gauge', 'agent', 'Seconds since Slurm last answered the reconciler (grows while Slurm is down).'),
  m('l9gpu.kubernetes.bindings', '{binding}', 'gauge', 'agent', 'Open pod-to-GPU bindings in the store.'),
  m(
    'l9gpu.kubernetes.sync.age',
    's',
    'gauge',
    'agent',
    "Seconds since the kubelet's pod-resources API last answered (grows while the kubelet is down or its socket is missing).",
  ),
  m(
    'l9gpu.kubernetes.unmatched',
    '{device}',
    'gauge',
    'agent',
    'GPU device ids the kubelet allocated to pods that match no GPU of this node (see l9gpu doctor).',
  ),
  m(
    'l9gpu.budget.exceeded',
    '{event}',
    'sum',
    'agent',
    'Times a local user or source hit one of the [limits] bounds (files followed, bytes read, ' +
      'series per endpoint or communicator, label length, log lines, jobs socket connections and ' +
      "rows), or offered what is not theirs to give (a link or FIFO, a file of another user's " +
      'job): what was past the bound is left out and the first hit of each budget and user is ' +
      'logged.',
    ['l9gpu.budget', 'user.name'],
  ),
  m('l9gpu.process.cpu.time', 's', 'sum', 'agent', 'CPU time used by the agent process.', ['cpu.mode']),
  m('l9gpu.listener.connections', '{connection}', 'updown', 'agent', 'Connections the Prometheus pull endpoint holds open.'),
  m(
    'l9gpu.listener.refused',
    '{event}',
    'sum',
    'agent',
    'Connections or requests of the Prometheus pull endpoint closed or refused at one of its ' +
      'bounds, by reason: per_peer, connection_rate, total (max_connections reached, all busy), ' +
      'evicted (the connection idle longest closed for a new one), header_timeout, ' +
      'request_timeout, idle_timeout, header_too_large (431), body (413), bad_request (400), ' +
      'tls_handshake, plain_http (HTTP on the TLS port), client_cert, auth (401), auth_throttled ' +
      '(401 without a bcrypt comparison: a peer past its budget of them), rate_limited (429, ' +
      'web_config rate_limit), method (405).',
    ['l9gpu.listener.reason'],
  ),
]);

const byName = new Map(METRICS.map((d) => [d.name, d]));
if (byName.size !== METRICS.length) throw new Error('metric registry: duplicate metric name');

/**
 * Metrics renamed (or changed in unit or attributes) in a release, for docs/metrics.md: what a dashboard of the
 * release before must change.
 */
export interface Renamed {
  readonly release: string;
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

export const RENAMED: readonly Renamed[] = Object.freeze([
  {
    release: '0.2',
    from: 'gpu.memory.utilization (gpu_memory_utilization_ratio)',
    to: 'gpu.memory.controller.utilization (gpu_memory_controller_utilization_ratio)',
    why:
      "the memory controller's busy time; the conventions' hw.gpu.memory.utilization is the fraction of memory used, here " +
      'the new gpu.memory.capacity.utilization',
  },
  {
    release: '0.2',
    from: 'gpu.fan.speed',
    to: 'gpu.fan.speed_ratio (Prometheus name unchanged: gpu_fan_speed_ratio)',
    why: "a fraction of the rated speed: the conventions' hw.fan.speed is rpm, the ratio hw.fan.speed_ratio",
  },
  {
    release: '0.2',
    from: 'gpu.clock.frequency in MHz (gpu_clock_frequency_MHz)',
    to: 'gpu.clock.frequency in Hz (gpu_clock_frequency_hertz)',
    why: 'base units, as Prometheus and the conventions use them (values x 1e6)',
  },
  {
    release: '0.2',
    from: 'system.cpu.utilization, one series (not idle or iowait)',
    to: 'system.cpu.utilization by cpu.mode (user, nice, system, idle, iowait, interrupt, steal)',
    why: "as the conventions and the Collector's hostmetrics receiver carry it; busy = 1 - idle - iowait",
  },
  {
    release: '0.2',
    from: 'system.memory.utilization, one series (1 - MemAvailable/MemTotal)',
    to: 'system.memory.utilization by system.memory.state (used, free, buffers, cached)',
    why: "as the conventions and the hostmetrics receiver carry it: each state's system.memory.usage over system.memory.limit",
  },
  {
    release: '0.2',
    from: 'engine points with gen_ai.provider.name where known',
    to: 'every engine point with gen_ai.provider.name (vllm, sglang, tgi, triton, nim)',
    why: 'the GenAI conventions require it',
  },
]);

/** Looks a metric up; throws at module load for a typo rather than at the first sample. */
export function metric(name: string): MetricDef {
  const def = byName.get(name);
  if (!def) throw new Error(`metric registry: unknown metric "${name}"`);
  return def;
}

export function findMetric(name: string): MetricDef | undefined {
  return byName.get(name);
}

/**
 * OTel unit -> the word a Prometheus name carries ("Prometheus and OpenMetrics
 * compatibility" of the OpenTelemetry specification, as the Collector's
 * translator and VictoriaMetrics' -opentelemetry.usePrometheusNaming apply it).
 */
const UNIT_WORDS: Record<string, string> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  TiBy: 'tibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  TBy: 'terabytes',
  m: 'meters',
  V: 'volts',
  A: 'amperes',
  J: 'joules',
  W: 'watts',
  g: 'grams',
  Cel: 'celsius',
  Hz: 'hertz',
  '1': '',
  '%': 'percent',
};
const PER_UNIT_WORDS: Record<string, string> = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week', mo: 'month', y: 'year' };
const promNames = new Map<MetricDef, string>();

/**
 * The metric's Prometheus name, the same on the pull endpoint and in a
 * backend that turns OTLP into Prometheus names: name tokens, then the unit's
 * word unless the name has it already (annotations like {error} add none,
 * By/s adds bytes_per_second), then _total for a monotonic sum or _ratio for
 * a gauge of unit 1, moved to the end. gpu.power.draw (W) -> gpu_power_draw_watts,
 * gpu.energy.consumption (J, sum) -> gpu_energy_consumption_joules_total.
 */
export function prometheusName(def: MetricDef): string {
  let name = promNames.get(def);
  if (name !== undefined) return name;
  const tokens = def.name.split(/[/_.\-: ]/).filter(Boolean);
  const slash = def.unit.indexOf('/');
  const main = (slash < 0 ? def.unit : def.unit.slice(0, slash)).trim();
  const per = slash < 0 ? '' : def.unit.slice(slash + 1).trim();
  if (main && !main.includes('{')) {
    const w = UNIT_WORDS[main] ?? main;
    if (w && !tokens.includes(w)) tokens.push(w);
  }
  if (per && !per.includes('{')) {
    const w = PER_UNIT_WORDS[per] ?? per;
    if (w && !tokens.includes(w)) tokens.push('per', w);
  }
  // a ratio is a gauge's word: a histogram or an up-down sum of unit 1 gets none (VictoriaMetrics' naming agrees)
  const suffix = def.kind === 'sum' ? 'total' : def.unit === '1' && def.kind === 'gauge' ? 'ratio' : '';
  if (suffix) {
    const at = tokens.indexOf(suffix);
    if (at >= 0) tokens.splice(at, 1);
    tokens.push(suffix);
  }
  promNames.set(def, (name = tokens.join('_')));
  return name;
}

/** Ratios a source may report above 1: NVML's fan speed is a percentage of the fan's rated speed and "may exceed 100%" (nvml.h); a rank's
 * slowdown is a factor. */
const RATIOS_ABOVE_ONE = new Set(['gpu.fan.speed_ratio', 'nccl.rank.slowdown']);

/**
 * The values a metric can take: every l9gpu metric is a count, size, rate,
 * duration or ratio (>= 0; ratios <= 1), except temperature (above absolute
 * zero). A value outside is a source's error (a negative memory size, a
 * utilization of 5), never passed on as a right one.
 */
export function validRange(def: MetricDef): readonly [number, number] {
  // asked for every point: worked out once per metric
  let r = ranges.get(def);
  if (!r)
    ranges.set(
      def,
      (r = def.unit === 'Cel' ? [-273.15, 1000] : def.unit === '1' && !RATIOS_ABOVE_ONE.has(def.name) ? [0, 1] : [0, Infinity]),
    );
  return r;
}
const ranges = new Map<MetricDef, readonly [number, number]>();
