/**
 * The OpenTelemetry semantic conventions' hardware names (1.44, model/hardware/: Development stability), as a
 * sink's `semantic_conventions = hw` emits them: one row per l9gpu metric the conventions define. A row renames the
 * metric and adds the conventions' attributes beside the product's own; it never takes one away, so that
 * attribution's keys (gpu.uuid, slurm.*), `l9gpu jobs --source promql` and the dashboards join the same way in
 * both namings. Metrics the conventions do not define keep their l9gpu names. docs/metrics.md prints this table.
 */
import type { Attributes, Batch, Point } from './model.js';
import { metric, type MetricDef, type MetricKind } from './registry.js';

export const NAMINGS = ['l9gpu', 'hw'] as const;
export type Naming = (typeof NAMINGS)[number];

export interface ConventionRow {
  /** The l9gpu metric. */
  readonly from: MetricDef;
  /** The conventions' metric it is sent as. */
  readonly to: MetricDef;
  /** Attributes the conventions fix for it (hw.type, hw.gpu.task). */
  readonly set: Attributes;
  /** l9gpu attribute -> the conventions' key its value is copied to. */
  readonly copy: Readonly<Record<string, string>>;
  /** One l9gpu point as several of the conventions' (hw.status: one per state, 1 for the state that holds). */
  readonly expand?: (value: number) => readonly (readonly [number, Attributes])[];
  /** For docs/metrics.md: what differs beyond the name. */
  readonly note: string;
}

const hw = (name: string, unit: string, kind: MetricKind, description: string, attributes: readonly string[] = []): MetricDef =>
  Object.freeze({ name, unit, kind, scope: 'gpu', description, attributes });

/** hw.errors, hw.power, ... are one metric for every component: one definition each, however many rows send to it. */
const HW = {
  gpuUtilization: hw('hw.gpu.utilization', '1', 'gauge', 'Fraction of time spent in a specific task.', ['hw.gpu.task']),
  gpuMemoryUsage: hw('hw.gpu.memory.usage', 'By', 'updown', 'GPU memory used.'),
  gpuMemoryLimit: hw('hw.gpu.memory.limit', 'By', 'updown', 'Size of the GPU memory.'),
  gpuMemoryUtilization: hw('hw.gpu.memory.utilization', '1', 'gauge', 'Fraction of GPU memory used.'),
  gpuIo: hw('hw.gpu.io', 'By', 'sum', 'Received and transmitted bytes by the GPU.', ['network.io.direction']),
  power: hw('hw.power', 'W', 'gauge', 'Instantaneous power consumed by the component.', ['hw.type']),
  energy: hw('hw.energy', 'J', 'sum', 'Energy consumed by the component.', ['hw.type']),
  temperature: hw('hw.temperature', 'Cel', 'gauge', 'Temperature in degrees Celsius.', ['hw.type', 'hw.sensor_location']),
  errors: hw('hw.errors', '{error}', 'sum', 'Number of errors encountered by the component.', ['hw.type', 'error.type']),
  fanSpeedRatio: hw('hw.fan.speed_ratio', '1', 'gauge', 'Fan speed expressed as a fraction of its maximum speed.', ['hw.type']),
  status: hw('hw.status', '1', 'updown', 'Operational status: 1 (true) or 0 (false) for each of the possible states.', [
    'hw.type',
    'hw.state',
  ]),
} as const;

const row = (from: string, to: MetricDef, note: string, set: Attributes = {}, copy: Record<string, string> = {}): ConventionRow =>
  Object.freeze({ from: metric(from), to, set, copy, note });

/** gpu.health's 0 ok, 1 warning, 2 failed as the conventions' states. */
const HEALTH_STATES = [
  [0, 'ok'],
  [1, 'degraded'],
  [2, 'failed'],
] as const;

export const CONVENTION_ROWS: readonly ConventionRow[] = Object.freeze([
  row('gpu.utilization', HW.gpuUtilization, 'hw.gpu.task = general', { 'hw.gpu.task': 'general' }),
  row('gpu.memory.used', HW.gpuMemoryUsage, 'an up-down counter (a gauge in Prometheus)'),
  row('gpu.memory.total', HW.gpuMemoryLimit, 'an up-down counter (a gauge in Prometheus)'),
  row('gpu.memory.capacity.utilization', HW.gpuMemoryUtilization, 'the fraction of memory used, not the memory controller'),
  row('gpu.pcie.io', HW.gpuIo, "the GPU's PCIe traffic: its I/O with the host"),
  row('gpu.power.draw', HW.power, 'hw.type = gpu', { 'hw.type': 'gpu' }),
  row('gpu.energy.consumption', HW.energy, 'hw.type = gpu', { 'hw.type': 'gpu' }),
  row(
    'gpu.temperature',
    HW.temperature,
    'hw.type = gpu; gpu.temperature.sensor also as hw.sensor_location',
    { 'hw.type': 'gpu' },
    {
      'gpu.temperature.sensor': 'hw.sensor_location',
    },
  ),
  row('gpu.ecc.errors', HW.errors, 'hw.type = gpu; error.type corrected or uncorrected', { 'hw.type': 'gpu' }),
  row('gpu.fan.speed_ratio', HW.fanSpeedRatio, "hw.type = fan, hw.id = <GPU UUID>/fan, hw.parent = the GPU's hw.id", {
    'hw.type': 'fan',
  }),
  Object.freeze({
    ...row('gpu.health', HW.status, 'hw.type = gpu; one point per hw.state: ok (health 0), degraded (1), failed (2)', {
      'hw.type': 'gpu',
    }),
    expand: (v: number) => HEALTH_STATES.map(([code, state]) => [v === code ? 1 : 0, { 'hw.state': state }] as const),
  }),
]);

const byFrom = new Map(CONVENTION_ROWS.map((r) => [r.from, r]));

/** l9gpu metrics whose name is already the conventions' (system.*, gen_ai.*): sent as they are in either naming. */
export const SAME_IN_CONVENTIONS: ReadonlySet<string> = new Set([
  'system.cpu.utilization',
  'system.cpu.logical.count',
  'system.memory.usage',
  'system.memory.limit',
  'system.memory.utilization',
  'gen_ai.server.time_to_first_token',
  'gen_ai.server.time_per_output_token',
  'gen_ai.server.request.duration',
]);

/** The conventions' row of a metric, if they define it under another name. */
export const conventionRowOf = (name: string): ConventionRow | undefined => CONVENTION_ROWS.find((r) => r.from.name === name);

const INFO = metric('gpu.info');
/** gpu.info's attributes -> the conventions' identity keys every hw point of the GPU carries. */
const INFO_KEYS = [
  ['gpu.driver.version', 'hw.driver_version'],
  ['gpu.serial_number', 'hw.serial_number'],
  ['gpu.firmware.version', 'hw.firmware_version'],
] as const;

/**
 * Renames a sink's batches into the conventions' names. It keeps what each GPU's gpu.info last said (driver,
 * serial, firmware) to put on that GPU's hw points, as the conventions recommend, whichever batch they come in.
 */
export class ConventionsNaming {
  private readonly identity = new Map<string, Attributes>();

  map(batch: Batch): Batch {
    let mapped = false;
    for (const p of batch.points) {
      if (p.metric === INFO) this.learn(p);
      else if (byFrom.has(p.metric)) mapped = true;
    }
    if (!mapped) return batch;
    const points: Point[] = [];
    for (const p of batch.points) {
      const r = byFrom.get(p.metric);
      if (!r) {
        points.push(p);
        continue;
      }
      const a = this.attributes(p, r);
      if (r.expand)
        for (const [value, extra] of r.expand(p.value)) points.push({ ...p, metric: r.to, value, attributes: { ...a, ...extra } });
      else points.push({ ...p, metric: r.to, attributes: a });
    }
    return { ...batch, points };
  }

  private learn(p: Point): void {
    const uuid = p.attributes['gpu.uuid'];
    if (typeof uuid !== 'string') return;
    const id: Attributes = {};
    for (const [ours, theirs] of INFO_KEYS) {
      const v = p.attributes[ours];
      if (v !== undefined && v !== '') id[theirs] = v;
    }
    this.identity.set(uuid, id);
  }

  private attributes(p: Point, r: ConventionRow): Attributes {
    const a = p.attributes;
    const uuid = a['gpu.uuid'];
    const out: Attributes = { ...a };
    if (typeof uuid === 'string') {
      out['hw.id'] = uuid;
      const learnt = this.identity.get(uuid);
      if (learnt) Object.assign(out, learnt);
    }
    if (a['gpu.model'] !== undefined) out['hw.model'] = a['gpu.model'];
    if (a['gpu.vendor'] !== undefined) out['hw.vendor'] = a['gpu.vendor'];
    out['hw.type'] = 'gpu';
    Object.assign(out, r.set);
    for (const [ours, theirs] of Object.entries(r.copy)) if (a[ours] !== undefined) out[theirs] = a[ours];
    // the fan is a component of its own: its id is the GPU's, the GPU its parent
    if (r.set['hw.type'] === 'fan' && typeof uuid === 'string') {
      out['hw.id'] = `${uuid}/fan`;
      out['hw.parent'] = uuid;
    }
    return out;
  }
}

/** The batch mapping a sink configured with this naming applies before it encodes (the identity for l9gpu). */
export function namingOf(naming: Naming): (batch: Batch) => Batch {
  if (naming === 'l9gpu') return (b) => b;
  const n = new ConventionsNaming();
  return (b) => n.map(b);
}
