/**
 * What the nvml worker sends to the main thread each tick: raw NVML values in
 * NVML's own units (mW, mJ, KB/s, percent, KiB counters). Conversion to the
 * registry's units happens in convert.ts, in one place.
 */
import type { GpmValues } from './gpm.js';

export interface ProcessSnapshot {
  pid: number;
  /** Absent when NVML says NVML_VALUE_NOT_AVAILABLE. */
  usedBytes?: number;
  /** GPU / compute instance ids; absent without MIG (NVML gives 0xFFFFFFFF). */
  gi?: number;
  ci?: number;
}

export interface MigSnapshot {
  uuid: string;
  name: string;
  gi: number;
  ci: number;
  memTotal?: number;
  memUsed?: number;
  memFree?: number;
  /** GPM figures of the instance's GPU instance since the last tick (as NVML gives them: GpmValues). */
  gpm?: GpmValues;
}

export interface GpuSnapshot {
  index: number;
  uuid: string;
  name: string;
  pciBusId: string;
  minor?: number;
  /** The board's serial number and VBIOS version, printable and bounded (sampler.ts); absent where NVML has none. */
  serial?: string;
  vbiosVersion?: string;
  lost?: boolean;
  /** Interval means from NVML's sample buffers (since the last tick), else the instantaneous reading. */
  utilGpuPct?: number;
  utilMemPct?: number;
  /** Highest GPU utilization sample of the interval (sample buffers only). */
  utilGpuMaxPct?: number;
  memTotal?: number;
  memUsed?: number;
  memFree?: number;
  memReserved?: number;
  tempGpuC?: number;
  tempMemC?: number;
  /** Interval mean from the sample buffer where NVML has one, else the instantaneous reading. */
  powerMw?: number;
  /** Highest power sample of the interval (sample buffers only). */
  powerMaxMw?: number;
  powerLimitMw?: number;
  energyMj?: number;
  clockGraphicsMhz?: number;
  clockSmMhz?: number;
  clockMemMhz?: number;
  clockReasons?: number;
  ecc?: { correctedVolatile?: number; uncorrectedVolatile?: number; correctedAggregate?: number; uncorrectedAggregate?: number };
  remapped?: { corrected: number; uncorrected: number; pending: number; failure: number };
  retiredSbe?: number;
  retiredDbe?: number;
  retiredPending?: number;
  pcieTxKBs?: number;
  pcieRxKBs?: number;
  pcieReplay?: number;
  fanPct?: number;
  pstate?: number;
  /** Cumulative NVLink data counters over all links, KiB, and NVML's timestamp of them (us). */
  nvlinkTxKiB?: number;
  nvlinkRxKiB?: number;
  nvlinkTimestampUs?: number;
  processes?: ProcessSnapshot[];
  migMode?: number;
  mig?: MigSnapshot[];
  /** GPM figures since the last tick (as NVML gives them: GpmValues; Hopper and later, not in MIG mode). */
  gpm?: GpmValues;
}

export interface Snapshot {
  driverVersion: string;
  /** Optional entry points this NVML library lacks (binding variants), for doctor: what is not measured and why. */
  missing?: string[];
  /** ms since epoch when the sampling started. */
  time: number;
  gpus: GpuSnapshot[];
  /** Log lines worth saying once (NOT_SUPPORTED, lost GPU, re-init). */
  notes: { level: 'info' | 'warn' | 'error'; msg: string }[];
}

export interface XidEvent {
  uuid: string;
  eventType: number;
  data: number;
  gi?: number;
  ci?: number;
  time: number;
}
