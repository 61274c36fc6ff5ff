/**
 * `l9gpu gpus`: points of one collection -> one record per GPU (keyed by
 * UUID, MIG instances under their parent), and a table for people.
 */
import type { Point } from '../core/metrics/model.js';
import { alignColumns, byText, style } from '../core/text-table.js';

export interface GpuRecord {
  index: number;
  uuid: string;
  model: string;
  vendor: string;
  pci_bus_id: string;
  lost: boolean;
  utilization: number | null;
  /** Memory-controller busy time (0..1), not how full the memory is. */
  memory_controller_utilization: number | null;
  memory_used_bytes: number | null;
  memory_total_bytes: number | null;
  temperature_celsius: Record<string, number>;
  power_watts: number | null;
  power_limit_watts: number | null;
  energy_joules: number | null;
  throttle_causes: string[];
  processes: { pid: number; memory_bytes: number }[];
  mig: {
    uuid: string;
    model: string;
    gpu_instance_id: number;
    compute_instance_id: number;
    memory_used_bytes: number | null;
    memory_total_bytes: number | null;
  }[];
  /** Filled by attribution (Slurm, Kubernetes) when it exists. */
  jobs: Record<string, string | number | boolean>[];
  /** What is missing from this record and why. */
  notes: string[];
}

const MIG_UTILIZATION =
  'no utilization: NVML has none for a GPU in MIG mode. The daemon reports each MIG ' +
  "instance's utilization as its GPU instance's engine activity (GPM, Hopper and later; an " +
  'instance alone in its GPU instance) over a collection interval, which one sample here ' +
  'cannot measure.';

export function gpuView(points: readonly Point[]): GpuRecord[] {
  const gpus = new Map<string, GpuRecord>();
  const migs = new Map<string, GpuRecord['mig'][number] & { parent: string }>();
  for (const p of points) {
    const a = p.attributes;
    const uuid = a['gpu.uuid'];
    if (typeof uuid !== 'string') continue;
    const parent = a['gpu.mig.parent_uuid'];
    if (typeof parent === 'string') {
      let m = migs.get(uuid);
      if (!m) {
        m = {
          parent,
          uuid,
          model: String(a['gpu.model']),
          gpu_instance_id: Number(a['gpu.mig.instance_id']),
          compute_instance_id: Number(a['gpu.mig.compute_instance_id']),
          memory_used_bytes: null,
          memory_total_bytes: null,
        };
        migs.set(uuid, m);
      }
      if (p.metric.name === 'gpu.memory.used') m.memory_used_bytes = p.value;
      if (p.metric.name === 'gpu.memory.total') m.memory_total_bytes = p.value;
      continue;
    }
    let g = gpus.get(uuid);
    if (!g) {
      g = {
        index: Number(a['gpu.index']),
        uuid,
        model: String(a['gpu.model']),
        vendor: String(a['gpu.vendor']),
        pci_bus_id: String(a['gpu.pci.bus_id']),
        lost: false,
        utilization: null,
        memory_controller_utilization: null,
        memory_used_bytes: null,
        memory_total_bytes: null,
        temperature_celsius: {},
        power_watts: null,
        power_limit_watts: null,
        energy_joules: null,
        throttle_causes: [],
        processes: [],
        mig: [],
        jobs: [],
        notes: [],
      };
      gpus.set(uuid, g);
    }
    switch (p.metric.name) {
      case 'gpu.lost':
        g.lost = p.value === 1;
        break;
      case 'gpu.utilization':
        g.utilization = p.value;
        break;
      case 'gpu.memory.controller.utilization':
        g.memory_controller_utilization = p.value;
        break;
      case 'gpu.memory.used':
        g.memory_used_bytes = p.value;
        break;
      case 'gpu.memory.total':
        g.memory_total_bytes = p.value;
        break;
      case 'gpu.temperature':
        g.temperature_celsius[String(a['gpu.temperature.sensor'])] = p.value;
        break;
      case 'gpu.power.draw':
        g.power_watts = p.value;
        break;
      case 'gpu.power.limit':
        g.power_limit_watts = p.value;
        break;
      case 'gpu.energy.consumption':
        g.energy_joules = p.value;
        break;
      case 'gpu.throttle.active':
        if (p.value === 1) g.throttle_causes.push(String(a['gpu.throttle.cause']));
        break;
      case 'gpu.process.memory.used':
        g.processes.push({ pid: Number(a['process.pid']), memory_bytes: p.value });
        break;
    }
  }
  for (const m of migs.values()) {
    const { parent, ...rest } = m;
    gpus.get(parent)?.mig.push(rest);
  }
  for (const g of gpus.values()) if (g.mig.length && g.utilization === null && !g.lost) g.notes.push(MIG_UTILIZATION);
  return [...gpus.values()].sort((x, y) => byText(x.vendor, y.vendor) || x.index - y.index);
}

const GiB = 1024 ** 3;
const pct = (v: number | null) => (v === null ? '-' : `${Math.round(v * 100)}%`);
const gib = (v: number | null) => (v === null ? '-' : (v / GiB).toFixed(1));

export function renderGpuTable(gpus: readonly GpuRecord[], color: boolean): string {
  const { bold, warn } = style(color);
  const anyJobs = gpus.some((g) => g.jobs.length > 0);
  const rows: string[][] = [
    ['IDX', 'UUID', 'MODEL', 'UTIL', 'MEM GiB', 'TEMP', 'POWER', 'ENERGY kWh', 'THROTTLE', 'PROCS', ...(anyJobs ? ['JOBS'] : [])],
  ];
  for (const g of gpus) {
    const temp = g.temperature_celsius.edge ?? g.temperature_celsius.hotspot;
    rows.push([
      `${g.vendor === 'nvidia' ? '' : `${g.vendor}:`}${g.index}`,
      g.uuid,
      g.model,
      g.lost ? 'LOST' : pct(g.utilization),
      `${gib(g.memory_used_bytes)}/${gib(g.memory_total_bytes)}`,
      temp === undefined ? '-' : `${temp}C`,
      g.power_watts === null
        ? '-'
        : `${Math.round(g.power_watts)}/${g.power_limit_watts === null ? '-' : Math.round(g.power_limit_watts)}W`,
      g.energy_joules === null ? '-' : (g.energy_joules / 3.6e6).toFixed(2),
      g.throttle_causes.join(',') || '-',
      g.processes.map((p) => `${p.pid}(${gib(p.memory_bytes)})`).join(' ') || '-',
      ...(anyJobs ? [g.jobs.map((j) => `${j['slurm.job.id']}(${j['slurm.user'] ?? '?'})`).join(' ') || '-'] : []),
    ]);
    for (const m of g.mig)
      rows.push([
        ' └',
        m.uuid,
        m.model,
        '',
        `${gib(m.memory_used_bytes)}/${gib(m.memory_total_bytes)}`,
        '',
        '',
        '',
        '',
        '',
        ...(anyJobs ? [''] : []),
      ]);
  }
  const out = alignColumns(rows).map((line, n) =>
    n === 0 ? bold(line) : rows[n]![3] === 'LOST' || rows[n]![8] !== '-' ? warn(line) : line,
  );
  if (gpus.length === 0) out.push('(no GPUs found)');
  for (const g of gpus) for (const n of g.notes) out.push(`${g.vendor === 'nvidia' ? 'GPU' : g.vendor} ${g.index}: ${n}`);
  return out.join('\n') + '\n';
}
