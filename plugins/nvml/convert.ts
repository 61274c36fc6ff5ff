/**
 * NVML snapshot -> registry points, with NVML's units converted in this one
 * place: percent -> ratio, mW -> W, mJ -> J, KB/s -> By/s (NVML's KB is KiB),
 * KiB counters -> By. Also keeps what needs two samples: NVLink rates, energy
 * counter resets, and the Xid counts from the event set.
 */
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { GPU } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Emitter } from '../../src/core/metrics/model.js';
import type { MetricDef } from '../../src/core/metrics/registry.js';
import { CLOCK_REASON, ENUM, EVENT_TYPE } from './abi.js';
import { GPM_READ, type GpmKind, type GpmValues } from './gpm.js';
import type { GpuSnapshot, Snapshot, XidEvent } from './snapshot.js';

/**
 * Clock event reason bits -> throttle causes. Idle is not throttling.
 * power: SW power cap and HW power brake; thermal: SW and HW thermal
 * slowdown; hw: any hardware-initiated slowdown (HW slowdown, HW thermal,
 * HW power brake); sw: clocks held by a software setting (applications
 * clocks, sync boost, display clock); power_brake: the HW power brake alone,
 * the chassis asking the GPU to slow down, which health rules tell apart
 * from a GPU merely at its power cap.
 */
const R = CLOCK_REASON;
export const THROTTLE_CAUSES: readonly [string, number][] = [
  ['power', R.SwPowerCap | R.HwPowerBrakeSlowdown],
  ['thermal', R.SwThermalSlowdown | R.HwThermalSlowdown],
  ['hw', R.HwSlowdown | R.HwThermalSlowdown | R.HwPowerBrakeSlowdown],
  ['sw', R.ApplicationsClocksSetting | R.SyncBoost | R.DisplayClockSetting],
  ['power_brake', R.HwPowerBrakeSlowdown],
];

/** NVML reports clocks in MHz; the registry's unit is Hz. */
const MHZ = 1e6;
const KIB = 1024;

interface LinkPrev {
  tx: number;
  rx: number;
  tsUs: number;
}

export class NvmlConverter {
  private readonly identity = new Map<string, Attributes>();
  private readonly variants = new Map<string, Map<string, Attributes>>();
  private readonly link = new Map<string, LinkPrev>();
  private readonly energy = new Map<string, { last: number; start: number }>();
  private readonly xid = new Map<string, Map<number, number>>();
  private readonly xidStart = Date.now();

  /** Identity attributes of a GPU, built once and reused by every point. */
  private ident(g: GpuSnapshot): Attributes {
    let a = this.identity.get(g.uuid);
    if (!a || a['gpu.index'] !== g.index || (g.name && a['gpu.model'] !== g.name)) {
      a = gpuAttributes({ index: g.index, uuid: g.uuid, model: g.name, vendor: 'nvidia', pciBusId: g.pciBusId });
      this.identity.set(g.uuid, a);
      this.variants.delete(g.uuid);
    }
    return a;
  }

  /** Identity plus one extra attribute, cached: a tick allocates no attribute objects once warm. */
  private with(g: GpuSnapshot, key: string, value: string): Attributes {
    const base = this.ident(g);
    let v = this.variants.get(g.uuid);
    if (!v) this.variants.set(g.uuid, (v = new Map()));
    const k = `${key}\u0000${value}`;
    let a = v.get(k);
    if (!a) v.set(k, (a = { ...base, [key]: value }));
    return a;
  }

  /**
   * gpu.info attributes: the driver version, the /dev/nvidiaN minor (what Slurm's gres.conf File= names), and the
   * board's serial number and VBIOS version where NVML has them. Cached by all four with the GPU's other variants,
   * so a warm tick allocates no object, and a fact that changes (a VBIOS flashed, then a re-init) makes a new
   * object rather than changing one a sink may still hold.
   */
  private info(g: GpuSnapshot, driver: string): Attributes {
    const base = this.ident(g);
    let v = this.variants.get(g.uuid);
    if (!v) this.variants.set(g.uuid, (v = new Map()));
    // 'gpu.info' is no attribute key: no with() entry has this key
    const k = `gpu.info\u0000${driver}\u0000${g.minor ?? ''}\u0000${g.serial ?? ''}\u0000${g.vbiosVersion ?? ''}`;
    let a = v.get(k);
    if (!a) {
      a = { ...base, 'gpu.driver.version': driver };
      if (g.minor !== undefined) a['gpu.device.minor'] = g.minor;
      if (g.serial !== undefined) a['gpu.serial_number'] = g.serial;
      if (g.vbiosVersion !== undefined) a['gpu.firmware.version'] = g.vbiosVersion;
      v.set(k, a);
    }
    return a;
  }

  addEvent(e: XidEvent): void {
    // Xid errors arrive as XidCriticalError events; ECC events are counted by the ECC counters
    if ((e.eventType & EVENT_TYPE.XidCriticalError) === 0) return;
    let m = this.xid.get(e.uuid);
    if (!m) this.xid.set(e.uuid, (m = new Map()));
    m.set(e.data, (m.get(e.data) ?? 0) + 1);
  }

  convert(s: Snapshot, out: Emitter): void {
    for (const g of s.gpus) {
      const a = this.ident(g);
      out.add(GPU.lost, g.lost ? 1 : 0, a);
      // a lost GPU's Xids too: the one that took it off the bus (79) is the one that matters
      const xids = this.xid.get(g.uuid);
      if (xids) for (const [code, n] of xids) out.add(GPU.xid, n, this.with(g, 'gpu.xid.code', String(code)), this.xidStart);
      if (g.lost) continue;
      out.add(GPU.info, 1, this.info(g, s.driverVersion));
      if (g.utilGpuPct !== undefined) out.add(GPU.util, g.utilGpuPct / 100, a);
      if (g.utilGpuMaxPct !== undefined) out.add(GPU.utilMax, g.utilGpuMaxPct / 100, a);
      if (g.utilMemPct !== undefined) out.add(GPU.memUtil, g.utilMemPct / 100, a);
      if (g.gpm) addGpm(g.gpm, a, (k, v) => this.with(g, k, v), out);
      if (g.memUsed !== undefined) out.add(GPU.memUsed, g.memUsed, a);
      if (g.memFree !== undefined) out.add(GPU.memFree, g.memFree, a);
      if (g.memTotal !== undefined) out.add(GPU.memTotal, g.memTotal, a);
      if (g.memUsed !== undefined && g.memTotal) out.add(GPU.memCapacity, g.memUsed / g.memTotal, a);
      if (g.memReserved !== undefined) out.add(GPU.memReserved, g.memReserved, a);
      if (g.tempGpuC !== undefined) out.add(GPU.temp, g.tempGpuC, this.with(g, 'gpu.temperature.sensor', 'edge'));
      if (g.tempMemC !== undefined) out.add(GPU.temp, g.tempMemC, this.with(g, 'gpu.temperature.sensor', 'memory'));
      if (g.powerMw !== undefined) out.add(GPU.power, g.powerMw / 1000, a);
      if (g.powerMaxMw !== undefined) out.add(GPU.powerMax, g.powerMaxMw / 1000, a);
      if (g.powerLimitMw !== undefined) out.add(GPU.powerLimit, g.powerLimitMw / 1000, a);
      if (g.energyMj !== undefined) this.addEnergy(g, a, s.time, out);
      if (g.clockGraphicsMhz !== undefined) out.add(GPU.clock, g.clockGraphicsMhz * MHZ, this.with(g, 'gpu.clock.type', 'graphics'));
      if (g.clockSmMhz !== undefined) out.add(GPU.clock, g.clockSmMhz * MHZ, this.with(g, 'gpu.clock.type', 'sm'));
      if (g.clockMemMhz !== undefined) out.add(GPU.clock, g.clockMemMhz * MHZ, this.with(g, 'gpu.clock.type', 'memory'));
      if (g.clockReasons !== undefined) {
        for (const [cause, mask] of THROTTLE_CAUSES)
          out.add(GPU.throttle, g.clockReasons & mask ? 1 : 0, this.with(g, 'gpu.throttle.cause', cause));
      }
      if (g.ecc) {
        const e = g.ecc;
        const add = (v: number | undefined, type: string, scope: string): void => {
          if (v !== undefined) out.add(GPU.ecc, v, { ...this.with(g, 'error.type', type), 'gpu.ecc.scope': scope });
        };
        add(e.correctedVolatile, 'corrected', 'volatile');
        add(e.uncorrectedVolatile, 'uncorrected', 'volatile');
        add(e.correctedAggregate, 'corrected', 'aggregate');
        add(e.uncorrectedAggregate, 'uncorrected', 'aggregate');
      }
      if (g.remapped) {
        out.add(GPU.remapped, g.remapped.corrected, this.with(g, 'gpu.memory.remap.cause', 'corrected'));
        out.add(GPU.remapped, g.remapped.uncorrected, this.with(g, 'gpu.memory.remap.cause', 'uncorrected'));
        out.add(GPU.remapPending, g.remapped.pending ? 1 : 0, a);
        out.add(GPU.remapFailed, g.remapped.failure ? 1 : 0, a);
      }
      if (g.retiredSbe !== undefined)
        out.add(GPU.retired, g.retiredSbe, this.with(g, 'gpu.memory.retirement.cause', 'multiple_single_bit_ecc'));
      if (g.retiredDbe !== undefined) out.add(GPU.retired, g.retiredDbe, this.with(g, 'gpu.memory.retirement.cause', 'double_bit_ecc'));
      if (g.retiredPending !== undefined) out.add(GPU.retirePending, g.retiredPending ? 1 : 0, a);
      if (g.pcieTxKBs !== undefined) out.add(GPU.pcie, g.pcieTxKBs * KIB, this.with(g, 'network.io.direction', 'transmit'));
      if (g.pcieRxKBs !== undefined) out.add(GPU.pcie, g.pcieRxKBs * KIB, this.with(g, 'network.io.direction', 'receive'));
      if (g.pcieReplay !== undefined) out.add(GPU.replays, g.pcieReplay, a);
      if (g.fanPct !== undefined) out.add(GPU.fan, g.fanPct / 100, a);
      if (g.pstate !== undefined && g.pstate !== ENUM.PSTATE_UNKNOWN) out.add(GPU.pstate, g.pstate, a);
      if (g.nvlinkTxKiB !== undefined && g.nvlinkRxKiB !== undefined) this.addLinks(g, out);
      if (g.processes) {
        out.add(GPU.procCount, g.processes.length, a);
        for (const p of g.processes) {
          const pa: Attributes = { ...a, 'process.pid': p.pid };
          if (p.gi !== undefined) pa['gpu.mig.instance_id'] = p.gi;
          if (p.ci !== undefined) pa['gpu.mig.compute_instance_id'] = p.ci;
          if (p.usedBytes !== undefined) out.add(GPU.procMem, p.usedBytes, pa);
        }
      }
      for (const mig of g.mig ?? []) {
        const ma = gpuAttributes(
          { index: g.index, uuid: mig.uuid, model: mig.name, vendor: 'nvidia', pciBusId: g.pciBusId },
          { parentUuid: g.uuid, gpuInstance: mig.gi, computeInstance: mig.ci },
        );
        if (mig.memUsed !== undefined) out.add(GPU.memUsed, mig.memUsed, ma);
        if (mig.memFree !== undefined) out.add(GPU.memFree, mig.memFree, ma);
        if (mig.memTotal !== undefined) out.add(GPU.memTotal, mig.memTotal, ma);
        if (mig.gpm) {
          addGpm(mig.gpm, ma, (k, v) => ({ ...ma, [k]: v }), out);
          // NVML has no utilization of a MIG instance: its GPU instance's engine activity is the figure (as jobstats takes
          // DCGM's GR_ENGINE_ACTIVE), so a MIG job's report and rollups have one. Only an instance alone in its GPU
          // instance gets figures (sampler.readGpm): a shared GI's activity is no one job's
          if (mig.gpm.graphics !== undefined) out.add(GPU.util, mig.gpm.graphics / 100, ma);
        }
      }
    }
  }

  /** mJ -> J; a counter that went down (driver reload) starts a new series start time. */
  private addEnergy(g: GpuSnapshot, a: Attributes, time: number, out: Emitter): void {
    const mj = g.energyMj!;
    let e = this.energy.get(g.uuid);
    // the counter runs since the driver loaded, which NVML does not tell: the series starts when first seen
    if (!e || mj < e.last) this.energy.set(g.uuid, (e = { last: mj, start: time - 1 }));
    e.last = mj;
    out.add(GPU.energy, mj / 1000, a, e.start);
  }

  /** NVLink: cumulative KiB -> By (sum) and By/s between two samples (NVML's own timestamps). */
  private addLinks(g: GpuSnapshot, out: Emitter): void {
    const tx = g.nvlinkTxKiB!;
    const rx = g.nvlinkRxKiB!;
    const ts = g.nvlinkTimestampUs ?? 0;
    const txA = this.with(g, 'network.io.direction', 'transmit');
    const rxA = this.with(g, 'network.io.direction', 'receive');
    const lt = { ...txA, 'gpu.interconnect.type': 'nvlink' };
    const lr = { ...rxA, 'gpu.interconnect.type': 'nvlink' };
    out.add(GPU.linkIo, tx * KIB, lt);
    out.add(GPU.linkIo, rx * KIB, lr);
    const prev = this.link.get(g.uuid);
    this.link.set(g.uuid, { tx, rx, tsUs: ts });
    if (!prev || ts <= prev.tsUs || tx < prev.tx || rx < prev.rx) return; // first sample or a reset: no rate
    const dt = (ts - prev.tsUs) / 1e6;
    out.add(GPU.link, ((tx - prev.tx) * KIB) / dt, lt);
    out.add(GPU.link, ((rx - prev.rx) * KIB) / dt, lr);
  }
}

const MIB = 1024 * 1024;
type Variant = (key: string, value: string) => Attributes;

/**
 * GPM values -> points: [value, metric, attribute key and value] (gpm.ts's kinds: percent -> ratio, MiB/s -> By/s,
 * counts as they are). PCIe MiB/s is not here: it feeds gpu.pcie.throughput (the sampler prefers it to the 20 ms reading).
 */
const GPM_POINTS: readonly (readonly [keyof GpmValues, MetricDef, string?, string?])[] = [
  ['graphics', GPU.engineActive],
  ['sm', GPU.smActive],
  ['smOccupancy', GPU.smOccupancy],
  ['tensor', GPU.tensorActive],
  ['dram', GPU.dramActive],
  ['dfma', GPU.tensorPipeActive, 'gpu.tensor.pipe', 'dfma'],
  ['hmma', GPU.tensorPipeActive, 'gpu.tensor.pipe', 'hmma'],
  ['imma', GPU.tensorPipeActive, 'gpu.tensor.pipe', 'imma'],
  ['dmma', GPU.tensorPipeActive, 'gpu.tensor.pipe', 'dmma'],
  ['fp64', GPU.pipeActive, 'gpu.pipe', 'fp64'],
  ['fp32', GPU.pipeActive, 'gpu.pipe', 'fp32'],
  ['fp16', GPU.pipeActive, 'gpu.pipe', 'fp16'],
  ['integer', GPU.pipeActive, 'gpu.pipe', 'integer'],
  ['nvlinkTxMiBs', GPU.nvlink, 'network.io.direction', 'transmit'],
  ['nvlinkRxMiBs', GPU.nvlink, 'network.io.direction', 'receive'],
  ['smCyclesElapsed', GPU.smCyclesElapsed],
  ['smCyclesActive', GPU.smCyclesActive],
  ['mmaCyclesActive', GPU.tensorCycles],
  ['dfmaCyclesActive', GPU.tensorPipeCycles, 'gpu.tensor.pipe', 'dfma'],
  ['hmmaCyclesActive', GPU.tensorPipeCycles, 'gpu.tensor.pipe', 'hmma'],
  ['immaCyclesActive', GPU.tensorPipeCycles, 'gpu.tensor.pipe', 'imma'],
  ['dmmaCyclesActive', GPU.tensorPipeCycles, 'gpu.tensor.pipe', 'dmma'],
  ['fp64CyclesActive', GPU.pipeCycles, 'gpu.pipe', 'fp64'],
  ['fp32CyclesActive', GPU.pipeCycles, 'gpu.pipe', 'fp32'],
  ['fp16CyclesActive', GPU.pipeCycles, 'gpu.pipe', 'fp16'],
  ['integerCyclesActive', GPU.pipeCycles, 'gpu.pipe', 'integer'],
  ['pcieTxBytes', GPU.pcieIo, 'network.io.direction', 'transmit'],
  ['pcieRxBytes', GPU.pcieIo, 'network.io.direction', 'receive'],
];
const GPM_SCALE: Record<GpmKind, (v: number) => number> = { percent: (v) => v / 100, 'MiB/s': (v) => v * MIB, count: (v) => v };
const GPM_KIND = new Map(GPM_READ.map(([key, , kind]) => [key, GPM_SCALE[kind]]));

/** GPM values -> registry points; variant(key, value): the attributes plus one (cached for a whole GPU). */
function addGpm(v: GpmValues, a: Attributes, variant: Variant, out: Emitter): void {
  for (const [key, def, attr, value] of GPM_POINTS) {
    const x = v[key];
    if (x !== undefined) out.add(def, GPM_KIND.get(key)!(x), attr ? variant(attr, value!) : a);
  }
}
