/**
 * dcgm-exporter's /metrics onto l9gpu's metrics, keyed like the nvml
 * plugin's: gpu.uuid from UUID (uuid before 2.x), gpu.mig.instance_id from
 * GPU_I_ID, so a MIG instance is (UUID, GPU_I_ID) and never collides with its
 * GPU or its siblings. Units fixed on the way: MiB -> By, mJ -> J, % -> 0..1.
 *
 * Which wins when both run: nvml. Its gpu.* fields are what the nvml plugin
 * already reads from the same driver, so with nvml in [daemon] plugins (or
 * plugins = auto, which runs nvml wherever dcgm-exporter can run) they are
 * left out ([dcgm] gpu_fields); the profiling fields (DCGM_FI_PROF_*) are
 * dcgm.prof.* metrics of their own and always go out.
 */
import type { Attributes } from '../../src/core/metrics/model.js';
import { metric } from '../../src/core/metrics/registry.js';
import type { PluginContext, PluginManifest } from '../../src/core/plugin.js';
import { normalizePciBusId } from '../../src/core/pci.js';
import { tableMetrics, type EngineTable, type SeriesRule } from '../../src/scrape/convert.js';
import { scrapedPlugin } from '../../src/scrape/engine-plugin.js';
import type { Labels } from '../../src/scrape/exposition.js';
import { DCGM_SECTION, DCGM_SPEC } from './config.js';
import { readSection } from '../../src/core/config/read.js';
import { DAEMON_SECTION } from '../../src/core/config/sections.js';

const MIB = 1024 * 1024;
const PCT = 0.01;

/** A series' GPU: the identity the nvml plugin gives the same GPU. */
export function dcgmIdentity(labels: Labels): Attributes | string {
  const uuid = labels.UUID ?? labels.uuid;
  if (!uuid) return 'no UUID label: the GPU cannot be keyed';
  const a: Attributes = {
    'gpu.index': Number(labels.gpu ?? NaN),
    'gpu.uuid': uuid,
    'gpu.model': labels.modelName ?? '',
    'gpu.vendor': 'nvidia',
    'gpu.pci.bus_id': labels.pci_bus_id ? normalizePciBusId(labels.pci_bus_id) : '',
  };
  if (!Number.isInteger(a['gpu.index'])) return `gpu label "${labels.gpu ?? ''}" is no GPU index`;
  const gi = labels.GPU_I_ID;
  if (gi !== undefined && gi !== '') {
    if (!/^\d+$/.test(gi)) return `GPU_I_ID "${gi}" is no GPU instance id`;
    a['gpu.mig.instance_id'] = Number(gi);
    a['gpu.mig.parent_uuid'] = uuid;
  }
  return a;
}

/** DCGM's "no data" values (dcgm_structs.h DCGM_INT32_BLANK, DCGM_INT64_BLANK, DCGM_FP64_BLANK and the ones just above them). */
export function isDcgmBlank(v: number): boolean {
  return (v >= 0x7ffffff0 && v <= 0x7fffffff) || v >= 9223372036854775792 - 2048 || (v >= 140737488355328 && v < 140737488355328 + 16);
}

type Row = readonly [metric: string, names: readonly string[], scale?: number, attributes?: Attributes];
const rule = ([name, names, scale, attributes]: Row): SeriesRule => ({
  metric: metric(name),
  names,
  ...(scale !== undefined ? { scale } : {}),
  ...(attributes ? { attributes } : {}),
});

/** The gpu.* fields: nvml's too. */
const GPU_RULES = (
  [
    ['gpu.utilization', ['DCGM_FI_DEV_GPU_UTIL'], PCT],
    ['gpu.memory.controller.utilization', ['DCGM_FI_DEV_MEM_COPY_UTIL'], PCT],
    ['gpu.memory.used', ['DCGM_FI_DEV_FB_USED'], MIB],
    ['gpu.memory.free', ['DCGM_FI_DEV_FB_FREE'], MIB],
    ['gpu.memory.reserved', ['DCGM_FI_DEV_FB_RESERVED'], MIB],
    ['gpu.temperature', ['DCGM_FI_DEV_GPU_TEMP'], 1, { 'gpu.temperature.sensor': 'edge' }],
    ['gpu.temperature', ['DCGM_FI_DEV_MEMORY_TEMP'], 1, { 'gpu.temperature.sensor': 'memory' }],
    ['gpu.power.draw', ['DCGM_FI_DEV_POWER_USAGE']],
    ['gpu.energy.consumption', ['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'], 1e-3],
    ['gpu.clock.frequency', ['DCGM_FI_DEV_SM_CLOCK'], 1e6, { 'gpu.clock.type': 'sm' }],
    ['gpu.clock.frequency', ['DCGM_FI_DEV_MEM_CLOCK'], 1e6, { 'gpu.clock.type': 'memory' }],
    ['gpu.pcie.replays', ['DCGM_FI_DEV_PCIE_REPLAY_COUNTER']],
    ['gpu.memory.remapped_rows', ['DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS'], 1, { 'gpu.memory.remap.cause': 'corrected' }],
    ['gpu.memory.remapped_rows', ['DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS'], 1, { 'gpu.memory.remap.cause': 'uncorrected' }],
  ] as const satisfies readonly Row[]
).map(rule);

const PROF_RULES = (
  [
    ['dcgm.prof.graphics_engine.active', ['DCGM_FI_PROF_GR_ENGINE_ACTIVE']],
    ['dcgm.prof.sm.active', ['DCGM_FI_PROF_SM_ACTIVE']],
    ['dcgm.prof.sm.occupancy', ['DCGM_FI_PROF_SM_OCCUPANCY']],
    ['dcgm.prof.tensor.active', ['DCGM_FI_PROF_PIPE_TENSOR_ACTIVE']],
    ['dcgm.prof.dram.active', ['DCGM_FI_PROF_DRAM_ACTIVE']],
    ['dcgm.prof.pipe.active', ['DCGM_FI_PROF_PIPE_FP64_ACTIVE'], 1, { 'dcgm.pipe': 'fp64' }],
    ['dcgm.prof.pipe.active', ['DCGM_FI_PROF_PIPE_FP32_ACTIVE'], 1, { 'dcgm.pipe': 'fp32' }],
    ['dcgm.prof.pipe.active', ['DCGM_FI_PROF_PIPE_FP16_ACTIVE'], 1, { 'dcgm.pipe': 'fp16' }],
    ['dcgm.prof.pcie.throughput', ['DCGM_FI_PROF_PCIE_TX_BYTES'], 1, { 'network.io.direction': 'transmit' }],
    ['dcgm.prof.pcie.throughput', ['DCGM_FI_PROF_PCIE_RX_BYTES'], 1, { 'network.io.direction': 'receive' }],
    ['dcgm.prof.nvlink.throughput', ['DCGM_FI_PROF_NVLINK_TX_BYTES'], 1, { 'network.io.direction': 'transmit' }],
    ['dcgm.prof.nvlink.throughput', ['DCGM_FI_PROF_NVLINK_RX_BYTES'], 1, { 'network.io.direction': 'receive' }],
  ] as const satisfies readonly Row[]
).map(rule);

const gpuRules = new Set(GPU_RULES);

/** The table; gpuFields: whether the gpu.* fields go out (not while nvml runs). */
export function dcgmTable(gpuFields: boolean): EngineTable {
  return {
    engine: 'dcgm',
    labels: {},
    rules: [...GPU_RULES, ...PROF_RULES],
    identity: dcgmIdentity,
    isBlank: isDcgmBlank,
    enabled: (r) => gpuFields || !gpuRules.has(r),
  };
}

/** [dcgm] gpu_fields: auto = off when [daemon] plugins runs nvml (named, or auto). */
export function dcgmGpuFields(ctx: PluginContext): boolean {
  const v = readSection(ctx.config, DCGM_SECTION).gpu_fields;
  if (v !== 'auto') return v === 'always';
  const plugins = readSection(ctx.config, DAEMON_SECTION).plugins;
  return !plugins.includes('nvml') && !plugins.includes('auto');
}

const base = scrapedPlugin(DCGM_SPEC, DCGM_SECTION, dcgmTable(true), tableMetrics(dcgmTable(true)));
export const dcgmPlugin: PluginManifest = {
  ...base,
  reportsGpus: false,
  create: (ctx) => scrapedPlugin(DCGM_SPEC, DCGM_SECTION, dcgmTable(dcgmGpuFields(ctx)), []).create(ctx),
};
