/**
 * amd-smi JSON -> points. Pure functions over the tool's text, so the real
 * recorded outputs in testdata/ test them exactly.
 *
 * Both top-level shapes are accepted: a bare list (amd-smi 24.x and `process`)
 * and {"gpu_data": [...]} (25.x and later). A leaf is {"value", "unit"} or
 * "N/A"; N/A is skipped, never zero.
 */
import { boundLabel } from '../../src/core/bound-label.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { GPU, memoryFraction } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Emitter } from '../../src/core/metrics/model.js';
import { normalizePciBusId } from '../../src/core/pci.js';
import { printable } from '../../src/core/printable.js';
import { toBase, type BaseUnit } from '../../src/core/units.js';

type Json = Record<string, unknown>;

export interface AmdGpuIdentity {
  index: number;
  uuid: string;
  bdf: string;
  model: string;
  powerLimitW?: number;
  /** gpu.info's facts from `static --json` (infoFacts), where amd-smi has them. */
  info?: Attributes;
}

/** The per-GPU entries of an amd-smi --json output, whichever top-level shape it has. */
export function gpuEntries(text: string, where: string): Json[] {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new Error(`${where}: not JSON (${(e as Error).message}): ${text.slice(0, 80).replace(/\s+/g, ' ')}`);
  }
  const list = Array.isArray(j)
    ? j
    : j && typeof j === 'object' && Array.isArray((j as Json).gpu_data)
      ? ((j as Json).gpu_data as unknown[])
      : undefined;
  if (!list) throw new Error(`${where}: neither a list nor {"gpu_data": [...]}`);
  // a GPU index is a small whole number: 1e308 or -1 is no index
  return list.filter(
    (x): x is Json => !!x && typeof x === 'object' && Number.isSafeInteger((x as Json).gpu) && ((x as Json).gpu as number) >= 0,
  );
}

/** A name from the JSON: a string as it is, else the fallback (String() of an object is "[object Object]", or throws). */
function text(v: unknown, fallback: string): string {
  return typeof v === 'string' ? v : fallback;
}

function at(o: unknown, ...path: string[]): unknown {
  let v = o;
  for (const k of path) v = v && typeof v === 'object' ? (v as Json)[k] : undefined;
  return v;
}

/** A {value, unit} leaf (or a bare number) in the base unit; undefined for N/A or absent. */
export function leaf(v: unknown, expect: BaseUnit, where: string): number | undefined {
  if (v === undefined || v === null || v === 'N/A') return undefined;
  // JSON's 1e999 parses to Infinity: no reading
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`${where}: value ${v} is not a number`);
    return v;
  }
  if (typeof v === 'object' && 'value' in (v as Json)) {
    const { value, unit } = v as { value: unknown; unit?: unknown };
    if (value === 'N/A' || value === null) return undefined;
    const n = typeof value === 'number' ? value : Number(value);
    if (!Number.isFinite(n)) throw new Error(`${where}: value ${JSON.stringify(value)} is not a number`);
    return typeof unit === 'string' && unit !== '' ? toBase(n, unit, expect, where) : n;
  }
  if (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v)) return leaf(Number(v), expect, where);
  throw new Error(`${where}: unexpected ${JSON.stringify(v).slice(0, 60)}`);
}

/** leaf(), a field that cannot be read left out and said through unreadable() (the rest of the GPU goes on). */
function readable(unreadable: Emitter['unreadable']): (v: unknown, expect: BaseUnit, where: string) => number | undefined {
  return (v, expect, where) => {
    try {
      return leaf(v, expect, where);
    } catch (e) {
      unreadable(where, (e as Error).message.replace(`${where}: `, ''));
      return undefined;
    }
  };
}

/** Longer than any serial number or version amd-smi prints; a longer value is cut, marked "...". */
const MAX_FACT = 64;

/**
 * A fact for gpu.info from the static JSON: a string that is not "N/A" or blank, trimmed, bounded, and with control
 * and invisible format characters made "?" (the tool prints what the board's FRU and VBIOS hold).
 */
function fact(v: unknown): string | undefined {
  const s = typeof v === 'string' ? v.trim() : '';
  return s && s !== 'N/A' ? boundLabel(printable(s), MAX_FACT) : undefined;
}

/**
 * gpu.info's attributes of one GPU from `amd-smi static --json`, undefined when it has none of them:
 * `driver.version`; the board's serial number, `board.product_serial` (the FRU's, what the board's label says),
 * else `asic.asic_serial` (the chip's, for an output without a board serial, as testdata's MI300X); the VBIOS
 * version, `vbios.version`, or `ifwi.version` (the same section renamed in newer amd-smi releases).
 */
export function infoFacts(s: unknown): Attributes | undefined {
  const facts: [string, string | undefined][] = [
    ['gpu.driver.version', fact(at(s, 'driver', 'version'))],
    ['gpu.serial_number', fact(at(s, 'board', 'product_serial')) ?? fact(at(s, 'asic', 'asic_serial'))],
    ['gpu.firmware.version', fact(at(s, 'vbios', 'version')) ?? fact(at(s, 'ifwi', 'version'))],
  ];
  const known = facts.filter((f): f is [string, string] => f[1] !== undefined);
  return known.length ? Object.fromEntries(known) : undefined;
}

/** Identity from `amd-smi list --json` (uuid, bdf) and `amd-smi static --json` (model, power cap, gpu.info's facts). */
export function parseIdentity(listText: string, staticText: string, unreadable: Emitter['unreadable']): AmdGpuIdentity[] {
  const read = readable(unreadable);
  const stat = new Map(gpuEntries(staticText, 'amd-smi static --json').map((e) => [e.gpu as number, e]));
  return gpuEntries(listText, 'amd-smi list --json').map((e) => {
    const s = stat.get(e.gpu as number);
    const id: AmdGpuIdentity = {
      index: e.gpu as number,
      uuid: text(e.uuid, ''),
      bdf: normalizePciBusId(text(e.bdf, '') || text(at(s, 'bus', 'bdf'), '')),
      model: text(at(s, 'asic', 'market_name'), 'AMD GPU'),
    };
    const where = `amd-smi static --json gpu ${id.index} limit`;
    const cap = read(at(s, 'limit', 'socket_power'), 'W', where) ?? read(at(s, 'limit', 'max_power'), 'W', where);
    if (cap !== undefined) id.powerLimitW = cap;
    const info = infoFacts(s);
    if (info) id.info = info;
    return id;
  });
}

export function identityAttributes(id: AmdGpuIdentity): Attributes {
  return gpuAttributes({ index: id.index, uuid: id.uuid, model: id.model, vendor: 'amd', pciBusId: id.bdf });
}

/** `amd-smi metric --json` -> points, for the GPUs in ids (others are skipped: no UUID, no point). */
export function emitMetrics(text: string, ids: ReadonlyMap<number, AmdGpuIdentity>, out: Emitter, energyStart: number): void {
  const read = readable((f, why) => out.unreadable(f, why));
  for (const e of gpuEntries(text, 'amd-smi metric --json')) {
    const id = ids.get(e.gpu as number);
    if (!id) continue;
    const a = identityAttributes(id);
    const w = `amd-smi metric --json gpu ${id.index}`;
    const put = (def: (typeof GPU)[keyof typeof GPU], v: number | undefined, extra?: Attributes, start?: number): void => {
      if (v !== undefined) out.add(def, v, extra ? { ...a, ...extra } : a, start);
    };
    // the graphics engine's busy share: NVML's device utilization and GPM GRAPHICS_UTIL alike (README: per field)
    const gfx = read(at(e, 'usage', 'gfx_activity'), '1', `${w} usage.gfx_activity`);
    put(GPU.util, gfx);
    put(GPU.engineActive, gfx);
    put(GPU.memUtil, read(at(e, 'usage', 'umc_activity'), '1', `${w} usage.umc_activity`));
    const total = read(at(e, 'mem_usage', 'total_vram'), 'By', `${w} mem_usage.total_vram`);
    const used = read(at(e, 'mem_usage', 'used_vram'), 'By', `${w} mem_usage.used_vram`);
    put(GPU.memTotal, total);
    put(GPU.memUsed, used);
    put(GPU.memCapacity, memoryFraction(used, total));
    put(GPU.memFree, read(at(e, 'mem_usage', 'free_vram'), 'By', `${w} mem_usage.free_vram`));
    for (const [key, sensor] of [
      ['edge', 'edge'],
      ['hotspot', 'hotspot'],
      ['mem', 'memory'],
    ] as const) {
      put(GPU.temp, read(at(e, 'temperature', key), 'Cel', `${w} temperature.${key}`), { 'gpu.temperature.sensor': sensor });
    }
    // older releases call it average_socket_power
    put(GPU.power, read(at(e, 'power', 'socket_power') ?? at(e, 'power', 'average_socket_power'), 'W', `${w} power.socket_power`));
    if (id.powerLimitW !== undefined) put(GPU.powerLimit, id.powerLimitW);
    put(GPU.energy, read(at(e, 'energy', 'total_energy_consumption'), 'J', `${w} energy.total_energy_consumption`), undefined, energyStart);
    put(GPU.clock, read(at(e, 'clock', 'gfx_0', 'clk'), 'Hz', `${w} clock.gfx_0.clk`), { 'gpu.clock.type': 'graphics' });
    put(GPU.clock, read(at(e, 'clock', 'mem_0', 'clk'), 'Hz', `${w} clock.mem_0.clk`), { 'gpu.clock.type': 'memory' });
    // RAS counters since the driver loaded: the volatile scope in NVML's terms
    put(
      GPU.ecc,
      read(at(e, 'ecc', 'total_correctable_count'), '1', `${w} ecc`),
      { 'error.type': 'corrected', 'gpu.ecc.scope': 'volatile' },
      energyStart,
    );
    put(
      GPU.ecc,
      read(at(e, 'ecc', 'total_uncorrectable_count'), '1', `${w} ecc`),
      { 'error.type': 'uncorrected', 'gpu.ecc.scope': 'volatile' },
      energyStart,
    );
    const blocks = at(e, 'ecc_blocks');
    if (blocks && typeof blocks === 'object') {
      for (const [block, counts] of Object.entries(blocks as Json)) {
        const b = block.toLowerCase();
        put(
          GPU.eccBlock,
          read(at(counts, 'correctable_count'), '1', `${w} ecc_blocks.${block}`),
          { 'error.type': 'corrected', 'gpu.ecc.block': b },
          energyStart,
        );
        put(
          GPU.eccBlock,
          read(at(counts, 'uncorrectable_count'), '1', `${w} ecc_blocks.${block}`),
          { 'error.type': 'uncorrected', 'gpu.ecc.block': b },
          energyStart,
        );
      }
    }
    put(GPU.replays, read(at(e, 'pcie', 'replay_count'), '1', `${w} pcie.replay_count`), undefined, energyStart);
    put(GPU.fan, read(at(e, 'fan', 'usage'), '1', `${w} fan.usage`));
    // every tick, as the other vendors' gpu.info, from the static facts read with the identity
    if (id.info) put(GPU.info, 1, id.info);
  }
}

/** `amd-smi process --json` -> process count and memory per pid. */
export function emitProcesses(text: string, ids: ReadonlyMap<number, AmdGpuIdentity>, out: Emitter): void {
  for (const e of gpuEntries(text, 'amd-smi process --json')) {
    const id = ids.get(e.gpu as number);
    if (!id) continue;
    const a = identityAttributes(id);
    // no processes: an empty list, or a message string in some releases
    const list = Array.isArray(e.process_list) ? (e.process_list as Json[]) : [];
    const procs = list.map((p) => (p.process_info ?? p) as Json).filter((p) => typeof p.pid === 'number');
    out.add(GPU.procCount, procs.length, a);
    for (const p of procs) {
      const mem = leaf(p.mem_usage ?? p.memory_usage, 'By', `amd-smi process --json gpu ${id.index} pid ${p.pid}`);
      if (mem !== undefined) out.add(GPU.procMem, mem, { ...a, 'process.pid': p.pid as number });
    }
  }
}
