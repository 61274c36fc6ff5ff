/**
 * GPU health as a table of rules over what the daemon last knew of a GPU
 * (HealthFacts, kept by tracker.ts): each rule that holds is a finding with a
 * severity (1 warning, 2 failed), a score factor, the reason in words and what
 * to do. The daemon's gpu.health metrics and `l9gpu health` both call assess():
 * one verdict whichever asks. docs/health.md is rendered from RULES.
 *
 * Thresholds not set by NVIDIA's Xid catalog come from DCGM's health watches
 * (dcgmlib DcgmGpuHardwareLimits.h): at most 8 PCIe replays a minute ("the
 * maximum recommended by RM"), 60 retired pages a failure and 15 a warning.
 */
import { xidEntry } from './xid-catalog.js';

/** An Xid the daemon saw (a rise of the gpu.xid.errors count), kept until it is cleared, the node reboots or the window passes. */
export interface XidEvent {
  code: number;
  /** ms since the epoch: the collection that saw it. */
  time: number;
  n: number;
}

/** What the daemon last knew of one physical GPU (a MIG instance is judged with its GPU). */
export interface HealthFacts {
  uuid: string;
  index: number | null;
  model: string | null;
  /** Normalised PCI bus id (its slot): another UUID in the same slot replaced it. Absent in files of before. */
  pci?: string;
  /** ms: the last collection that carried the GPU. */
  seen: number;
  lost: boolean;
  xids: XidEvent[];
  /** Uncorrected ECC errors since the driver loaded (volatile); null: not reported. */
  eccUncorrectedVolatile: number | null;
  /** Rise of the lifetime (aggregate) uncorrected ECC count within the trend window; null: not reported. */
  eccUncorrectedRise: number | null;
  remapPending: boolean | null;
  remapFailed: boolean | null;
  /** Pages retired for any cause (pre-Ampere). */
  retiredPages: number | null;
  retirePending: boolean | null;
  /** PCIe replays per minute over the replay window; null: fewer than two readings. */
  pcieReplaysPerMin: number | null;
  /** Share (0..1) of the throttle window spent in thermal slowdown, and with the hardware power brake engaged. */
  thermalShare: number | null;
  powerBrakeShare: number | null;
  /** Readings of the lifetime uncorrected ECC count, [ms, count], over the trend window: kept across daemon restarts. */
  eccAggregate?: [number, number][];
}

export type HealthState = 0 | 1 | 2;
export const STATE_NAMES = ['ok', 'warning', 'failed'] as const;

export interface Finding {
  /** Stable code, also the gpu.health.reason value: lost, xid-79, remap-pending... */
  code: string;
  /** 0: information only (an application's Xid), 1 warning, 2 failed. */
  severity: HealthState;
  /** What was seen. */
  text: string;
  /** What to do. */
  action: string;
}

export interface GpuHealth {
  uuid: string;
  index: number | null;
  model: string | null;
  state: HealthState;
  /** 0..1: 1 healthy; the product of the findings' factors (a failure is 0). */
  score: number;
  findings: Finding[];
}

export interface RuleContext {
  now: number;
  /** Xid events at or before this time are no longer current (boot, window, an admin's clear). */
  xidSince: number;
  /** A GPU last seen before this time is missing: other GPUs were collected since, it was not (null: no such check). */
  missingBefore: number | null;
}

interface Rule {
  code: string;
  severity: 1 | 2;
  /** Score factor while the rule holds (failed rules: 0). */
  factor: number;
  /** The condition, as docs/health.md states it. */
  when: string;
  action: string;
  check(f: HealthFacts): string | undefined;
}

export const PCIE_REPLAYS_PER_MIN = 8;
export const RETIRED_PAGES_FAIL = 60;
export const RETIRED_PAGES_WARN = 15;
export const THERMAL_SHARE = 0.1;
export const POWER_BRAKE_SHARE = 0.01;
/** Score factor of each current warning-level Xid code. */
export const XID_WARNING_FACTOR = 0.7;

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** Every rule but the Xids (one per catalog entry, below). */
export const RULES: readonly Rule[] = [
  {
    code: 'lost',
    severity: 2,
    factor: 0,
    when: 'the driver reports the GPU lost (NVML_ERROR_GPU_IS_LOST: it fell off the bus)',
    action: 'drain the node and reboot it; if the GPU is lost again, open a hardware ticket (Xid 79, GPU fell off the bus)',
    check: (f) => (f.lost ? 'the driver reports the GPU lost: it fell off the bus' : undefined),
  },
  {
    code: 'remap-failed',
    severity: 2,
    factor: 0,
    when: 'a row remapping failed (NVML remapped rows: failure)',
    action: 'open a hardware ticket (RMA): the GPU has no spare rows left for its memory errors',
    check: (f) => (f.remapFailed ? 'a memory row remapping failed' : undefined),
  },
  {
    code: 'retired-pages',
    severity: 2,
    factor: 0,
    when: `${RETIRED_PAGES_FAIL} or more retired memory pages (DCGM's limit)`,
    action: 'open a hardware ticket (RMA): too many memory pages retired',
    check: (f) => (f.retiredPages !== null && f.retiredPages >= RETIRED_PAGES_FAIL ? `${f.retiredPages} memory pages retired` : undefined),
  },
  {
    code: 'remap-pending',
    severity: 1,
    factor: 0.8,
    when: 'a row remapping waits for a GPU reset',
    action: 'reset the GPU (nvidia-smi -r) once its jobs end, to apply the row remapping',
    check: (f) => (f.remapPending ? 'a memory row remapping is pending' : undefined),
  },
  {
    code: 'retirement-pending',
    severity: 1,
    factor: 0.8,
    when: 'a page retirement waits for a driver reload',
    action: 'reset the GPU or reboot the node once its jobs end, to retire the pages',
    check: (f) => (f.retirePending ? 'a memory page retirement is pending' : undefined),
  },
  {
    code: 'ecc-uncorrected',
    severity: 1,
    factor: 0.7,
    when: 'uncorrected ECC errors since the driver loaded (volatile count above 0)',
    action: 'reset the GPU once its jobs end; if uncorrected errors come back, open a hardware ticket',
    check: (f) => (f.eccUncorrectedVolatile ? `${f.eccUncorrectedVolatile} uncorrected ECC error(s) since the driver loaded` : undefined),
  },
  {
    code: 'ecc-uncorrected-rising',
    severity: 1,
    factor: 0.7,
    when: 'the lifetime uncorrected ECC count rose within the trend window (24 h by default)',
    action: 'watch the GPU: a rising uncorrected count is a failing memory; open a hardware ticket if it keeps rising',
    check: (f) =>
      f.eccUncorrectedRise ? `lifetime uncorrected ECC errors rose by ${f.eccUncorrectedRise} in the trend window` : undefined,
  },
  {
    code: 'retired-pages-many',
    severity: 1,
    factor: 0.8,
    when: `${RETIRED_PAGES_WARN} to ${RETIRED_PAGES_FAIL - 1} retired memory pages (DCGM's soft limit)`,
    action: 'plan a replacement: the GPU is retiring memory pages',
    check: (f) =>
      f.retiredPages !== null && f.retiredPages >= RETIRED_PAGES_WARN && f.retiredPages < RETIRED_PAGES_FAIL
        ? `${f.retiredPages} memory pages retired`
        : undefined,
  },
  {
    code: 'pcie-replays',
    severity: 1,
    factor: 0.9,
    when: `more than ${PCIE_REPLAYS_PER_MIN} PCIe replays a minute over the replay window (DCGM's limit)`,
    action: 'reseat the GPU or check its riser and slot: the PCIe link is marginal',
    check: (f) =>
      f.pcieReplaysPerMin !== null && f.pcieReplaysPerMin > PCIE_REPLAYS_PER_MIN
        ? `${Math.round(f.pcieReplaysPerMin)} PCIe replays a minute`
        : undefined,
  },
  {
    code: 'thermal-throttle',
    severity: 1,
    factor: 0.9,
    when: `thermal slowdown for ${pct(THERMAL_SHARE)} or more of the throttle window`,
    action: "check the node's cooling: fans, airflow, inlet temperature",
    check: (f) =>
      f.thermalShare !== null && f.thermalShare >= THERMAL_SHARE ? `thermally throttled ${pct(f.thermalShare)} of the time` : undefined,
  },
  {
    code: 'power-brake',
    severity: 1,
    factor: 0.9,
    when: `the hardware power brake engaged for ${pct(POWER_BRAKE_SHARE)} or more of the throttle window`,
    action: "check the node's power supplies: the chassis asked the GPU to slow down",
    check: (f) =>
      f.powerBrakeShare !== null && f.powerBrakeShare >= POWER_BRAKE_SHARE
        ? `hardware power brake engaged ${pct(f.powerBrakeShare)} of the time`
        : undefined,
  },
];

/** A GPU the plugins stopped reporting (not even as lost), while others go on: checked by assess() with the file's times. */
export const MISSING = {
  code: 'missing',
  severity: 2,
  factor: 0,
  when: "the GPU was not in the last three collections that carried the node's other GPUs",
  action:
    'check `dmesg` for Xid 79 and PCIe errors and `nvidia-smi -L`; reboot the node; open a ' +
    'hardware ticket if the GPU stays gone; if it was removed or is no longer monitored on ' +
    'purpose, `l9gpu health --clear <uuid>` forgets it',
} as const;

/** Current Xid events by code: count and last time. */
function currentXids(f: HealthFacts, since: number): Map<number, { n: number; last: number }> {
  const by = new Map<number, { n: number; last: number }>();
  for (const e of f.xids) {
    if (e.time <= since) continue;
    const c = by.get(e.code) ?? { n: 0, last: 0 };
    c.n += e.n;
    c.last = Math.max(c.last, e.time);
    by.set(e.code, c);
  }
  return by;
}

export function assess(f: HealthFacts, ctx: RuleContext): GpuHealth {
  const findings: Finding[] = [];
  let score = 1;
  for (const [code, c] of currentXids(f, ctx.xidSince)) {
    const x = xidEntry(code);
    findings.push({
      code: `xid-${code}`,
      severity: x.severity,
      text: `Xid ${code} (${x.name}) x${c.n}, last at ${new Date(c.last).toISOString()}`,
      action: x.advice,
    });
    if (x.severity === 2) score = 0;
    else if (x.severity === 1) score *= XID_WARNING_FACTOR;
  }
  if (ctx.missingBefore !== null && f.seen < ctx.missingBefore) {
    findings.push({
      code: MISSING.code,
      severity: 2,
      text: `not collected since ${new Date(f.seen).toISOString()} while the node's other GPUs were`,
      action: MISSING.action,
    });
    score = 0;
  }
  for (const r of RULES) {
    const text = r.check(f);
    if (text === undefined) continue;
    findings.push({ code: r.code, severity: r.severity, text, action: r.action });
    score *= r.factor;
  }
  findings.sort((a, b) => b.severity - a.severity);
  const state = (findings.length ? Math.max(...findings.map((x) => x.severity)) : 0) as HealthState;
  return { uuid: f.uuid, index: f.index, model: f.model, state, score: Math.round(score * 1000) / 1000, findings };
}
