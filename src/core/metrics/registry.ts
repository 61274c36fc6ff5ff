/**
 * The one table of every metric l9gpu emits: name, UCUM unit, kind,
 * description, metric-specific attribute keys. docs/metrics.md is generated
 * from it (npm run docs:metrics) and a test fails when the doc is stale.
 *
 * Units are what the value *is* after conversion, for every vendor: ratios are
 * 0..1 with unit "1" (never percent), power W (NVML reports mW), energy J
 * (NVML reports mJ), memory By, temperature Cel, clocks MHz. A 0/1 state (lost,
 * pending) and an info metric (always 1) are not ratios: no unit, so that no
 * backend names them _ratio.
 */

/** histogram: a cumulative explicit-bucket histogram (an engine's latency), its buckets on the point (Point.hist). */
export type MetricKind = 'gauge' | 'sum' | 'updown' | 'histogram';

/** Which identity attributes a metric's points carry besides its own keys. */
export type MetricScope = 'gpu' | 'host' | 'agent';

export interface MetricDef {
  readonly name: string;
  readonly unit: string;
  readonly kind: MetricKind;
  readonly scope: MetricScope;
  readonly description: string;
  /** Attribute keys specific to this metric (identity keys come from the scope). */
  readonly attributes: readonly string[];
}

/** Identity carried by every point of a scope. */
export const SCOPE_ATTRIBUTES: Record<MetricScope, { required: readonly string[]; optional: readonly string[] }> = {
  gpu: {
    required: ['gpu.index', 'gpu.uuid', 'gpu.model', 'gpu.vendor', 'gpu.pci.bus_id'],
    optional: ['gpu.mig.instance_id', 'gpu.mig.compute_instance_id', 'gpu.mig.parent_uuid'],
  },
  host: { required: [], optional: [] },
  agent: { required: [], optional: [] },
};

/** Attributes the attribution step may add to GPU points. */
export const ATTRIBUTION_ATTRIBUTES = [
  'slurm.job.id', 'slurm.user', 'slurm.account', 'slurm.partition', 'slurm.job.name',
  'slurm.array.job.id', 'slurm.array.task.id', 'slurm.cluster.name',
  'k8s.pod.name', 'k8s.namespace.name', 'k8s.container.name',
] as const;

const m = (
  name: string, unit: string, kind: MetricKind, scope: MetricScope,
  description: string, attributes: readonly string[] = [],
): MetricDef => Object.freeze({ name, unit, kind, scope, description, attributes: Object.freeze([...attributes]) });

export const METRICS: readonly MetricDef[] = Object.freeze([
  // --- GPU (every vendor; the contract names of design.md) ---
  m('gpu.utilization', '1', 'gauge', 'gpu', 'Fraction of the time during which one or more kernels ran on the GPU (0..1): the mean of every sample the driver took over the collection interval where it keeps them (NVML), else one reading. A MIG instance has no such figure in NVML: its value is the graphics-engine activity of its GPU instance over the interval (gpu.engine.active, GPM, Hopper and later).'),
  m('gpu.utilization.max', '1', 'gauge', 'gpu', 'Highest GPU utilization sample the driver took during the collection interval (0..1; NVML sample buffers).'),
  m('gpu.engine.active', '1', 'gauge', 'gpu', 'Fraction of the collection interval during which the graphics/compute engine was busy (0..1; NVML GPM GRAPHICS_UTIL, the counterpart of DCGM_FI_PROF_GR_ENGINE_ACTIVE). Hopper and later; per GPU instance on a MIG GPU.'),
  m('gpu.sm.active', '1', 'gauge', 'gpu', 'Mean fraction of the SMs that had work resident over the collection interval (0..1; NVML GPM SM_UTIL, cf. DCGM_FI_PROF_SM_ACTIVE). Hopper and later.'),
  m('gpu.sm.occupancy', '1', 'gauge', 'gpu', 'Resident warps as a fraction of the SMs\' theoretical maximum, over the collection interval (0..1; NVML GPM SM_OCCUPANCY, cf. DCGM_FI_PROF_SM_OCCUPANCY). Hopper and later.'),
  m('gpu.tensor.active', '1', 'gauge', 'gpu', 'Fraction of the collection interval during which any tensor pipe was busy (0..1; NVML GPM ANY_TENSOR_UTIL, cf. DCGM_FI_PROF_PIPE_TENSOR_ACTIVE). Hopper and later.'),
  m('gpu.dram.active', '1', 'gauge', 'gpu', 'Device memory bandwidth used as a fraction of the theoretical maximum, over the collection interval (0..1; NVML GPM DRAM_BW_UTIL, cf. DCGM_FI_PROF_DRAM_ACTIVE). Hopper and later.'),
  m('gpu.memory.utilization', '1', 'gauge', 'gpu', 'Fraction of the sample period during which device memory was read or written (memory controller busy, 0..1).'),
  m('gpu.memory.used', 'By', 'gauge', 'gpu', 'Device memory allocated by processes and the driver.'),
  m('gpu.memory.free', 'By', 'gauge', 'gpu', 'Device memory available for allocation.'),
  m('gpu.memory.total', 'By', 'gauge', 'gpu', 'Total device memory visible to the driver.'),
  m('gpu.temperature', 'Cel', 'gauge', 'gpu', 'Temperature of a GPU sensor.', ['gpu.temperature.sensor']),
  m('gpu.power.draw', 'W', 'gauge', 'gpu', 'Board power draw: the mean of the driver\'s samples over the collection interval where it keeps them (NVML), else the current reading.'),
  m('gpu.power.draw.max', 'W', 'gauge', 'gpu', 'Highest board power sample the driver took during the collection interval (NVML sample buffers).'),
  m('gpu.power.limit', 'W', 'gauge', 'gpu', 'Power limit currently enforced by the driver.'),
  m('gpu.energy.consumption', 'J', 'sum', 'gpu', 'Energy consumed by the GPU since the driver (or the source) started counting; monotonic, resets on driver reload.'),
  m('gpu.clock.frequency', 'MHz', 'gauge', 'gpu', 'Current clock frequency.', ['gpu.clock.type']),
  m('gpu.throttle.active', '1', 'gauge', 'gpu', '1 while clocks are reduced for the given cause, else 0 (idle is not throttling).', ['gpu.throttle.cause']),
  m('gpu.ecc.errors', '{error}', 'sum', 'gpu', 'ECC memory errors counted by the driver.', ['error.type', 'gpu.ecc.scope']),
  m('gpu.xid.errors', '{error}', 'sum', 'gpu', 'Xid error events seen by this agent since it started, by Xid code.', ['gpu.xid.code']),
  m('gpu.pcie.throughput', 'By/s', 'gauge', 'gpu', 'PCIe data rate.', ['network.io.direction']),
  m('gpu.interconnect.throughput', 'By/s', 'gauge', 'gpu', 'GPU-to-GPU interconnect data rate, computed between two samples of the cumulative counter.', ['network.io.direction', 'gpu.interconnect.type']),
  m('gpu.fan.speed', '1', 'gauge', 'gpu', 'Fan speed as a fraction of its maximum (0..1).'),
  m('gpu.performance_state', '{state}', 'gauge', 'gpu', 'Performance state (0 = maximum performance, 15 = minimum).'),
  m('gpu.memory.reserved', 'By', 'gauge', 'gpu', 'Device memory reserved by the driver and firmware (not counted in used; NVML memory v2).'),
  m('gpu.memory.remapped_rows', '{row}', 'gauge', 'gpu', 'Memory rows remapped by the GPU (Ampere and later), by the kind of error that caused it.', ['gpu.memory.remap.cause']),
  m('gpu.memory.remap.pending', '', 'gauge', 'gpu', '1 while a row remapping waits for a GPU reset, else 0.'),
  m('gpu.memory.remap.failed', '', 'gauge', 'gpu', '1 if a row remapping failed (the GPU needs service), else 0.'),
  m('gpu.memory.retired_pages', '{page}', 'gauge', 'gpu', 'Memory pages retired by the driver (pre-Ampere), by cause.', ['gpu.memory.retirement.cause']),
  m('gpu.memory.retirement.pending', '', 'gauge', 'gpu', '1 while a page retirement waits for a driver reload, else 0.'),
  m('gpu.ecc.block.errors', '{error}', 'sum', 'gpu', 'ECC errors per memory or logic block (AMD), since the driver started counting.', ['error.type', 'gpu.ecc.block']),
  m('gpu.pcie.replays', '{replay}', 'sum', 'gpu', 'PCIe packet replays (link-level retransmissions); a rising count means a marginal link.'),
  m('gpu.interconnect.io', 'By', 'sum', 'gpu', 'Data moved over the GPU-to-GPU interconnect, cumulative (all links).', ['network.io.direction', 'gpu.interconnect.type']),
  m('gpu.process.count', '{process}', 'gauge', 'gpu', 'Compute processes running on the GPU.'),
  m('gpu.process.memory.used', 'By', 'gauge', 'gpu', 'Device memory used by one process.', ['process.pid']),
  m('gpu.lost', '', 'gauge', 'gpu', '1 while the driver reports the GPU lost (fell off the bus, Xid 79), else 0; its other metrics stop meanwhile.'),
  m('gpu.info', '', 'gauge', 'gpu', 'Always 1; carries slowly changing facts as attributes (driver version, device minor number) for joins.', ['gpu.driver.version', 'gpu.device.minor']),

  m('gpu.job.share', '1', 'gauge', 'gpu', 'Share (0..1) of the GPU attributed to a job: 1 when the job holds it alone; on a shared GPU (shards, MPS) the job\'s part of the per-process memory, else 1/N. Multiply additive values (power, energy) by it.'),
  m('gpu.job.energy', 'J', 'gauge', 'gpu', 'Energy a job used on the GPU over its whole binding (energy counter delta times the job\'s share); exported once, when the binding closes.'),
  m('gpu.job.duration', 's', 'gauge', 'gpu', 'GPU time of a job on the GPU (sampled seconds times the job\'s share); exported once, when the binding closes.'),
  m('gpu.job.utilization', '1', 'gauge', 'gpu', 'Mean utilization (0..1) of the GPU over a job\'s binding; exported once, when the binding closes.'),
  m('gpu.job.memory.peak', 'By', 'gauge', 'gpu', 'Peak device memory used on the GPU during a job\'s binding; exported once, when the binding closes.'),
  m('gpu.process.outside_allocation', '{process}', 'gauge', 'gpu', 'Processes running on the GPU that belong to no job bound to it (another job\'s process, or none): a GPU used outside its allocation.'),

  // --- host (plugins/host, from /proc) ---
  m('system.cpu.utilization', '1', 'gauge', 'host', 'Fraction of CPU time not idle or iowait over the sample period, all logical CPUs together (0..1).'),
  m('system.cpu.logical.count', '{cpu}', 'updown', 'host', 'Logical CPUs online.'),
  m('system.cpu.load_average.1m', '{thread}', 'gauge', 'host', 'Load average over 1 minute.'),
  m('system.cpu.load_average.5m', '{thread}', 'gauge', 'host', 'Load average over 5 minutes.'),
  m('system.cpu.load_average.15m', '{thread}', 'gauge', 'host', 'Load average over 15 minutes.'),
  m('system.memory.usage', 'By', 'updown', 'host', 'Host memory by state: used (excludes page cache and buffers), free, buffers, cached (page cache plus reclaimable slab).', ['system.memory.state']),
  m('system.memory.limit', 'By', 'updown', 'host', 'Total usable host memory.'),
  m('system.memory.utilization', '1', 'gauge', 'host', 'Fraction of host memory not available for allocation (1 - MemAvailable/MemTotal).'),

  // --- the agent itself ---
  m('l9gpu.collector.duration', 's', 'gauge', 'agent', 'Wall time of the last collection of a plugin.', ['l9gpu.plugin']),
  m('l9gpu.collector.points', '{point}', 'sum', 'agent', 'Data points produced by a plugin.', ['l9gpu.plugin']),
  m('l9gpu.collector.errors', '{error}', 'sum', 'agent', 'Collections of a plugin that threw or timed out.', ['l9gpu.plugin']),
  m('l9gpu.collector.skipped', '{tick}', 'sum', 'agent', 'Ticks of a plugin skipped because its previous collection was still running.', ['l9gpu.plugin']),
  m('l9gpu.sink.exported', '{point}', 'sum', 'agent', 'Data points a sink delivered.', ['l9gpu.sink']),
  m('l9gpu.sink.dropped', '{point}', 'sum', 'agent', 'Data points a sink gave up on (queue full, rejected by the backend, output blocked).', ['l9gpu.sink']),
  m('l9gpu.sink.errors', '{error}', 'sum', 'agent', 'Failed delivery attempts of a sink (each retry counts).', ['l9gpu.sink']),
  m('l9gpu.sink.queue.size', 'By', 'updown', 'agent', 'Encoded bytes waiting in a sink\'s retry queue.', ['l9gpu.sink']),
  m('l9gpu.process.memory.rss', 'By', 'gauge', 'agent', 'Resident set size of the agent process.'),
  m('l9gpu.slurm.bindings', '{binding}', 'gauge', 'agent', 'Open job-to-GPU bindings in the store.'),
  m('l9gpu.slurm.reconcile.age', 's', 'gauge', 'agent', 'Seconds since Slurm last answered the reconciler (grows while Slurm is down).'),
  m('l9gpu.process.cpu.time', 's', 'sum', 'agent', 'CPU time used by the agent process.', ['cpu.mode']),
]);

const byName = new Map(METRICS.map((d) => [d.name, d]));
if (byName.size !== METRICS.length) throw new Error('metric registry: duplicate metric name');

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
  d: 'days', h: 'hours', min: 'minutes', s: 'seconds', ms: 'milliseconds', us: 'microseconds', ns: 'nanoseconds',
  By: 'bytes', KiBy: 'kibibytes', MiBy: 'mebibytes', GiBy: 'gibibytes', TiBy: 'tibibytes', KBy: 'kilobytes', MBy: 'megabytes', GBy: 'gigabytes', TBy: 'terabytes',
  m: 'meters', V: 'volts', A: 'amperes', J: 'joules', W: 'watts', g: 'grams', Cel: 'celsius', Hz: 'hertz', '1': '', '%': 'percent',
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
  const suffix = def.kind === 'sum' ? 'total' : def.unit === '1' ? 'ratio' : '';
  if (suffix) {
    const at = tokens.indexOf(suffix);
    if (at >= 0) tokens.splice(at, 1);
    tokens.push(suffix);
  }
  promNames.set(def, (name = tokens.join('_')));
  return name;
}

/** Ratios a source may report above 1: NVML's fan speed is a percentage of the fan's rated speed and "may exceed 100%" (nvml.h). */
const RATIOS_ABOVE_ONE = new Set(['gpu.fan.speed']);

/**
 * The values a metric can take: every l9gpu metric is a count, size, rate,
 * duration or ratio (>= 0; ratios <= 1), except temperature (above absolute
 * zero). A value outside is a source's error (a negative memory size, a
 * utilization of 5), never passed on as a right one.
 */
export function validRange(def: MetricDef): readonly [number, number] {
  // asked for every point: worked out once per metric
  let r = ranges.get(def);
  if (!r) ranges.set(def, (r = def.unit === 'Cel' ? [-273.15, 1000] : def.unit === '1' && !RATIOS_ABOVE_ONE.has(def.name) ? [0, 1] : [0, Infinity]));
  return r;
}
const ranges = new Map<MetricDef, readonly [number, number]>();
