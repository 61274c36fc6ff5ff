/**
 * The readings a GPU answers with a call of their own (no field id carries
 * them): one row each, read by the sampler's one loop in the phase the row
 * names, so a new reading is a row and not another hand-written call and
 * check. Each row's call keeps the name it has in notes and in the GPU's
 * unsupported calls.
 */
import { CLOCK, ENUM } from './abi.js';
import type { OwnCall } from './fields.js';
import type { GpuSnapshot } from './snapshot.js';

/**
 * tick: every tick, after the sample buffers' utilization; pcie: every tick
 * GPM gave no PCIe traffic; state: every state interval (clocks that follow
 * the performance state, the state itself, the fan).
 */
export type ReadingPhase = 'tick' | 'pcie' | 'state';

export interface DeviceReading {
  /** The call's name in notes and in the GPU's unsupported calls. */
  readonly call: string;
  readonly phase: ReadingPhase;
  /** Read only when this holds of the snapshot so far. */
  readonly when?: (s: Partial<GpuSnapshot>) => boolean;
  /** Its calls, each answer checked; u1 is the sampler's one-value scratch, reused so that a tick allocates nothing for it. */
  readonly read: (c: OwnCall, s: Partial<GpuSnapshot>, u1: [number]) => Promise<void>;
}

/** In the order the calls are made within each phase. */
export const DEVICE_READINGS: readonly DeviceReading[] = [
  {
    // the instantaneous reading, only where the sample buffers gave no interval (first tick, nothing new, no buffers)
    call: 'utilization',
    phase: 'tick',
    when: (s) => s.utilGpuPct === undefined || s.utilMemPct === undefined,
    read: async (c, s) => {
      const u: { gpu?: number; memory?: number } = {};
      if (c.answered(await c.nvml.utilization(c.handle, u))) {
        s.utilGpuPct ??= u.gpu;
        s.utilMemPct ??= u.memory;
      }
    },
  },
  {
    call: 'memory',
    phase: 'tick',
    read: async (c, s) => {
      const m: { total?: number; used?: number; free?: number; reserved?: number } = {};
      if (c.answered(await c.nvml.memory(c.handle, m))) {
        s.memTotal = m.total;
        s.memUsed = m.used;
        s.memFree = m.free;
        if (c.nvml.memoryV2) s.memReserved = m.reserved;
      }
    },
  },
  {
    call: 'temperature',
    phase: 'tick',
    read: async (c, s, u1) => {
      if (c.answered(await c.nvml.temperature(c.handle, ENUM.TEMPERATURE_GPU, u1))) s.tempGpuC = u1[0];
    },
  },
  {
    // nvmlDeviceGetPcieThroughput counts 20 ms of traffic: GPM's mean over the interval is preferred where there is one
    call: 'pcie throughput',
    phase: 'pcie',
    read: async (c, s, u1) => {
      if (!c.answered(await c.nvml.pcieThroughput(c.handle, ENUM.PCIE_UTIL_TX_BYTES, u1))) return;
      s.pcieTxKBs = u1[0];
      if (c.answered(await c.nvml.pcieThroughput(c.handle, ENUM.PCIE_UTIL_RX_BYTES, u1))) s.pcieRxKBs = u1[0];
    },
  },
  {
    call: 'graphics clock',
    phase: 'state',
    read: async (c, s, u1) => {
      if (c.answered(await c.nvml.clock(c.handle, CLOCK.GRAPHICS, u1))) s.clockGraphicsMhz = u1[0];
    },
  },
  {
    call: 'memory clock',
    phase: 'state',
    read: async (c, s, u1) => {
      if (c.answered(await c.nvml.clock(c.handle, CLOCK.MEM, u1))) s.clockMemMhz = u1[0];
    },
  },
  {
    call: 'fan speed',
    phase: 'state',
    read: async (c, s, u1) => {
      if (c.answered(await c.nvml.fanSpeed(c.handle, u1))) s.fanPct = u1[0];
    },
  },
  {
    call: 'performance state',
    phase: 'state',
    read: async (c, s, u1) => {
      if (c.answered(await c.nvml.pstate(c.handle, u1))) s.pstate = u1[0];
    },
  },
];
