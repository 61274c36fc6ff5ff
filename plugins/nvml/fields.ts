/**
 * NVML's field values: the one nvmlDeviceGetFieldValues call a tick makes per
 * GPU, and the readings it carries, each with the dedicated call it falls back
 * to when this driver does not answer its fields (older drivers lack 185 and
 * 190, for one; ECC off answers the ECC fields NOT_SUPPORTED).
 */
import { ALL_LINKS, CLOCK, ENUM, FIELD, FIELD_VALUE, NVML, VALUE_TYPE } from './abi.js';
import type { Handle, NvmlBinding } from './binding.js';
import type { GpuSnapshot } from './snapshot.js';

/**
 * Every field a tick reads, in one nvmlDeviceGetFieldValues call: NVML serves
 * fields of one driver call together, and each separate call costs a hop to a
 * libuv pool thread and back (~20 µs of CPU here, the driver's own time apart).
 */
export const FIELD_IDS: readonly number[] = Object.values(FIELD);

/** An nvmlValue_t as its nvmlValueType_t says; NaN for a type this build does not know. */
export function unionValue(b: Buffer, o: number, type: number): number {
  switch (type) {
    case VALUE_TYPE.DOUBLE:
      return b.readDoubleLE(o);
    case VALUE_TYPE.UNSIGNED_INT:
      return b.readUInt32LE(o);
    case VALUE_TYPE.UNSIGNED_LONG:
    case VALUE_TYPE.UNSIGNED_LONG_LONG:
      return Number(b.readBigUInt64LE(o));
    case VALUE_TYPE.SIGNED_LONG_LONG:
      return Number(b.readBigInt64LE(o));
    case VALUE_TYPE.SIGNED_INT:
      return b.readInt32LE(o);
    case VALUE_TYPE.UNSIGNED_SHORT:
      return b.readUInt16LE(o);
    default:
      return NaN;
  }
}

/** The nvmlFieldValue_t array of FIELD_IDS, ids and scopes written once: NVML fills in the rest of each entry. */
export function fieldRequest(): Buffer {
  const b = Buffer.alloc(FIELD_IDS.length * FIELD_VALUE.size);
  FIELD_IDS.forEach((id, i) => {
    b.writeUInt32LE(id, i * FIELD_VALUE.size + FIELD_VALUE.at.fieldId);
    // NVLink counters summed over every link; scope 0 elsewhere (for power: the GPU alone, not the module)
    b.writeUInt32LE(
      id === FIELD.NVLINK_THROUGHPUT_DATA_TX || id === FIELD.NVLINK_THROUGHPUT_DATA_RX ? ALL_LINKS : 0,
      i * FIELD_VALUE.size + FIELD_VALUE.at.scopeId,
    );
  });
  return b;
}

/**
 * The answered request: memory temperature, NVLink counters and pending
 * retirement go straight to the snapshot; every field's value comes back by
 * id, for FIELD_READINGS. A field that does not succeed is absent (per-field
 * NOT_SUPPORTED is normal: no NVLink on PCIe cards, no ECC with ECC off).
 * Undefined: a field answered GPU_IS_LOST.
 */
export function fieldValues(b: Buffer, s: GpuSnapshot): Map<number, number> | undefined {
  const got = new Map<number, number>();
  for (let i = 0; i < FIELD_IDS.length; i++) {
    const o = i * FIELD_VALUE.size;
    const r = b.readInt32LE(o + FIELD_VALUE.at.nvmlReturn);
    if (r === NVML.GPU_IS_LOST) return undefined;
    if (r !== NVML.SUCCESS) continue;
    const v = unionValue(b, o + FIELD_VALUE.at.value, b.readInt32LE(o + FIELD_VALUE.at.valueType));
    if (Number.isNaN(v)) continue; // a value type newer than this build
    got.set(FIELD_IDS[i]!, v);
    switch (FIELD_IDS[i]) {
      case FIELD.MEMORY_TEMP:
        s.tempMemC = v;
        break;
      case FIELD.NVLINK_THROUGHPUT_DATA_TX:
        s.nvlinkTxKiB = v;
        s.nvlinkTimestampUs = Number(b.readBigInt64LE(o + FIELD_VALUE.at.timestamp));
        break;
      case FIELD.NVLINK_THROUGHPUT_DATA_RX:
        s.nvlinkRxKiB = v;
        break;
      case FIELD.RETIRED_PENDING:
        s.retiredPending = v;
        break;
    }
  }
  return got;
}

/** What a reading's own call works with: one GPU, and the check each of its answers goes through (under the reading's name). */
export interface OwnCall {
  readonly nvml: NvmlBinding;
  readonly handle: Handle;
  /** The calls this GPU answered NOT_SUPPORTED (live: a call made this tick may add to it). */
  readonly unsupported: ReadonlySet<string>;
  /** Whether the reading's call succeeded; a failure is said once, an unsupported call is not made again, a lost GPU throws. */
  readonly answered: (r: number) => boolean;
}

/** One reading of a tick: its fields' values when the driver answered every one of them, else its own call. */
export interface FieldReading {
  /** The call's name in notes and in the GPU's unsupported calls. */
  readonly call: string;
  /** Read only when this holds of the snapshot so far (power: the sample buffers gave no interval). */
  readonly when?: (s: GpuSnapshot) => boolean;
  /** The fields that carry it, and their values (in the order of `ids`) into the snapshot; none: always its own call. */
  readonly fields?: { readonly ids: readonly number[]; readonly into: (s: GpuSnapshot, v: readonly number[]) => void };
  /** Its own call, made when the fields did not all answer and the GPU did not answer it NOT_SUPPORTED before. */
  readonly own: (c: OwnCall, s: GpuSnapshot) => Promise<void>;
}

/**
 * Every reading after the field-values call, in the order the calls are made.
 * Field 185 is the 1 s average nvmlDeviceGetPowerUsage gives on Ampere and later
 * (GA100 and older answer it NOT_SUPPORTED, and their nvmlDeviceGetPowerUsage is
 * instantaneous).
 */
export const FIELD_READINGS: readonly FieldReading[] = [
  {
    call: 'power',
    when: (s) => s.powerMw === undefined,
    fields: { ids: [FIELD.POWER_AVERAGE], into: (s, [v]) => void (s.powerMw = v) },
    own: async (c, s) => {
      const u1: [number] = [0];
      if (c.answered(await c.nvml.power(c.handle, u1))) s.powerMw = u1[0];
    },
  },
  {
    call: 'power limit',
    fields: { ids: [FIELD.POWER_CURRENT_LIMIT], into: (s, [v]) => void (s.powerLimitMw = v) },
    own: async (c, s) => {
      const u1: [number] = [0];
      if (c.answered(await c.nvml.powerLimit(c.handle, u1))) s.powerLimitMw = u1[0];
    },
  },
  {
    call: 'energy',
    fields: { ids: [FIELD.TOTAL_ENERGY_CONSUMPTION], into: (s, [v]) => void (s.energyMj = v) },
    own: async (c, s) => {
      const big: [number | bigint] = [0];
      if (c.answered(await c.nvml.energy(c.handle, big))) s.energyMj = Number(big[0]);
    },
  },
  {
    call: 'sm clock',
    own: async (c, s) => {
      const u1: [number] = [0];
      if (c.answered(await c.nvml.clock(c.handle, CLOCK.SM, u1))) s.clockSmMhz = u1[0];
    },
  },
  {
    call: 'clock event reasons',
    own: async (c, s) => {
      const big: [number | bigint] = [0];
      if (c.answered(await c.nvml.clockReasons(c.handle, big))) s.clockReasons = Number(big[0]);
    },
  },
  {
    call: 'ecc',
    fields: {
      ids: [FIELD.ECC_SBE_VOL_TOTAL, FIELD.ECC_DBE_VOL_TOTAL, FIELD.ECC_SBE_AGG_TOTAL, FIELD.ECC_DBE_AGG_TOTAL],
      into: (s, v) =>
        void (s.ecc = { correctedVolatile: v[0], uncorrectedVolatile: v[1], correctedAggregate: v[2], uncorrectedAggregate: v[3] }),
    },
    own: async (c, s) => {
      const ecc: NonNullable<GpuSnapshot['ecc']> = {};
      const big: [number | bigint] = [0];
      const { MEMORY_ERROR_TYPE_CORRECTED: C, MEMORY_ERROR_TYPE_UNCORRECTED: U, VOLATILE_ECC: V, AGGREGATE_ECC: A } = ENUM;
      const names = [
        ['correctedVolatile', C, V],
        ['uncorrectedVolatile', U, V],
        ['correctedAggregate', C, A],
        ['uncorrectedAggregate', U, A],
      ] as const;
      let any = false;
      for (const [k, type, counter] of names) {
        if (c.answered(await c.nvml.eccTotal(c.handle, type, counter, big))) {
          ecc[k] = Number(big[0]);
          any = true;
        } else if (c.unsupported.has('ecc')) break; // ECC off: one NOT_SUPPORTED says it for all four
      }
      if (any) s.ecc = ecc;
    },
  },
  {
    call: 'remapped rows',
    fields: {
      ids: [FIELD.REMAPPED_COR, FIELD.REMAPPED_UNC, FIELD.REMAPPED_PENDING, FIELD.REMAPPED_FAILURE],
      into: (s, v) => void (s.remapped = { corrected: v[0]!, uncorrected: v[1]!, pending: v[2]!, failure: v[3]! }),
    },
    own: async (c, s) => {
      const co: [number] = [0],
        un: [number] = [0],
        p: [number] = [0],
        fl: [number] = [0];
      if (c.answered(await c.nvml.remappedRows(c.handle, co, un, p, fl)))
        s.remapped = { corrected: co[0], uncorrected: un[0], pending: p[0], failure: fl[0] };
    },
  },
  {
    call: 'retired pages',
    fields: { ids: [FIELD.RETIRED_SBE, FIELD.RETIRED_DBE], into: (s, v) => void ([s.retiredSbe, s.retiredDbe] = v) },
    own: async (c, s) => {
      s.retiredSbe = await retiredPages(c, ENUM.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
      if (s.retiredSbe !== undefined) s.retiredDbe = await retiredPages(c, ENUM.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
    },
  },
  {
    call: 'pcie replay counter',
    fields: { ids: [FIELD.PCIE_REPLAY_COUNTER], into: (s, [v]) => void (s.pcieReplay = v) },
    own: async (c, s) => {
      const u1: [number] = [0];
      if (c.answered(await c.nvml.pcieReplay(c.handle, u1))) s.pcieReplay = u1[0];
    },
  },
];

/**
 * How many pages are retired for this cause. When there are any, the size
 * query (count 0) answers INSUFFICIENT_SIZE with the needed count (nvml.h):
 * read them into a buffer of that size, asking again if more were retired
 * between the calls, as NVIDIA's own bindings do.
 */
async function retiredPages(c: OwnCall, cause: number): Promise<number | undefined> {
  const cnt: [number] = [0];
  let r = await c.nvml.retiredPages(c.handle, cause, cnt, null);
  for (let tries = 0; r === NVML.INSUFFICIENT_SIZE && tries < 3; tries++) {
    r = await c.nvml.retiredPages(c.handle, cause, cnt, Buffer.alloc(8 * cnt[0]));
  }
  return c.answered(r) ? cnt[0] : undefined;
}
