/**
 * hl-smi CSV -> points. Columns are mapped by header name, never by
 * position; a header may carry its unit in brackets ("power.draw [W]") and a
 * cell may carry it too ("226 W"); "[N/A]" is skipped, never zero.
 */
import { boundLabel } from '../../src/core/bound-label.js';
import { gpuAttributes } from '../../src/core/gpu-identity.js';
import { GPU, memoryFraction } from '../../src/core/metrics/gpu-metrics.js';
import type { Attributes, Emitter } from '../../src/core/metrics/model.js';
import { normalizePciBusId } from '../../src/core/pci.js';
import { printable } from '../../src/core/printable.js';
import { parseQuantity, toBase, type BaseUnit } from '../../src/core/units.js';

/** The fields queried with -Q, in this order. */
export const HL_FIELDS = [
  'index',
  'uuid',
  'name',
  'bus_id',
  'driver_version',
  'temperature.aip',
  'utilization.aip',
  'memory.total',
  'memory.used',
  'memory.free',
  'power.draw',
  'power.max',
  'ecc.errors.corrected.volatile.total',
  'ecc.errors.uncorrected.volatile.total',
  'ecc.errors.corrected.aggregate.total',
  'ecc.errors.uncorrected.aggregate.total',
  // the board's serial number, for gpu.info (a -Q field in Habana's documentation); last: the columns before keep their places
  'serial',
] as const;

/** Units hl-smi uses when a header or cell names none. */
const DEFAULT_UNIT: Record<string, string> = {
  'temperature.aip': 'C',
  'utilization.aip': '%',
  'memory.total': 'MiB',
  'memory.used': 'MiB',
  'memory.free': 'MiB',
  'power.draw': 'W',
  'power.max': 'W',
};

export type HlRow = Map<string, { text: string; unit?: string }>;

export function parseCsv(text: string, where = 'hl-smi'): HlRow[] {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length === 0) return [];
  const header = lines[0]!.split(',').map((h) => h.trim());
  const cols = header.map((h) => {
    const m = /^([a-z0-9_.]+)\s*(?:\[(.+)\])?$/i.exec(h);
    if (!m) throw new Error(`${where}: unexpected header column "${h}"`);
    return { name: m[1]!, unit: m[2] };
  });
  if (!cols.some((c) => c.name === 'uuid')) throw new Error(`${where}: no uuid column in the header (${lines[0]!.slice(0, 80)})`);
  return lines.slice(1).map((line, i) => {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== cols.length) throw new Error(`${where}: line ${i + 2} has ${cells.length} fields, the header ${cols.length}`);
    return new Map(cols.map((c, j) => [c.name, { text: cells[j]!, ...(c.unit ? { unit: c.unit } : {}) }]));
  });
}

/** A cell in the base unit; a cell that is no number or has an unknown unit is left out and said (out.unreadable). */
function value(row: HlRow, field: string, expect: BaseUnit | 'count', where: string, out: Emitter): number | undefined {
  const cell = row.get(field);
  if (!cell) return undefined;
  try {
    const q = parseQuantity(cell.text);
    if (!q) return undefined;
    if (expect === 'count') return q[0];
    return toBase(q[0], q[1] || cell.unit || DEFAULT_UNIT[field] || '', expect, `${where} ${field}`);
  } catch (e) {
    out.unreadable(`${where} ${field}`, (e as Error).message.replace(`${where} ${field}: `, ''));
    return undefined;
  }
}

/** Longer than any serial number or version hl-smi prints; a longer value is cut, marked "...". */
const MAX_FACT = 64;

/**
 * gpu.info's attributes of a row: `driver_version` and `serial` where hl-smi has them (not [N/A]), bounded and with
 * control and invisible format characters made "?"; undefined when it has neither. No -Q field gives a firmware
 * version (hl-smi -q prints four, FIT, SPI, U-Boot and OS, as text): Gaudi's gpu.firmware.version stays absent.
 */
function infoFacts(row: HlRow): Attributes | undefined {
  const fact = (field: string): string | undefined => {
    const t = row.get(field)?.text;
    return t && !/N\/A/.test(t) ? boundLabel(printable(t), MAX_FACT) : undefined;
  };
  const facts: [string, string | undefined][] = [
    ['gpu.driver.version', fact('driver_version')],
    ['gpu.serial_number', fact('serial')],
  ];
  const known = facts.filter((f): f is [string, string] => f[1] !== undefined);
  return known.length ? Object.fromEntries(known) : undefined;
}

export function emitRows(rows: HlRow[], out: Emitter, start: number): void {
  for (const row of rows) {
    const uuid = row.get('uuid')?.text;
    const idx = row.get('index')?.text;
    if (!uuid || /N\/A/.test(uuid)) continue; // no UUID, no point: everything is keyed by it
    const where = `hl-smi device ${idx ?? uuid}`;
    const a = gpuAttributes({
      // 400 digits are no index (Infinity as an attribute)
      index: idx !== undefined && /^\d{1,6}$/.test(idx) ? Number(idx) : -1,
      uuid,
      model: row.get('name')?.text ?? 'Intel Gaudi',
      vendor: 'intel',
      pciBusId: normalizePciBusId(row.get('bus_id')?.text ?? ''),
    });
    const put = (def: (typeof GPU)[keyof typeof GPU], v: number | undefined, extra?: Attributes, s?: number): void => {
      if (v !== undefined) out.add(def, v, extra ? { ...a, ...extra } : a, s);
    };
    put(GPU.util, value(row, 'utilization.aip', '1', where, out));
    const total = value(row, 'memory.total', 'By', where, out);
    const used = value(row, 'memory.used', 'By', where, out);
    put(GPU.memTotal, total);
    put(GPU.memUsed, used);
    put(GPU.memCapacity, memoryFraction(used, total));
    put(GPU.memFree, value(row, 'memory.free', 'By', where, out));
    // the AIP die sensor: the one every accelerator has, reported as sensor=edge like NVML's GPU sensor
    put(GPU.temp, value(row, 'temperature.aip', 'Cel', where, out), { 'gpu.temperature.sensor': 'edge' });
    put(GPU.power, value(row, 'power.draw', 'W', where, out));
    put(GPU.powerLimit, value(row, 'power.max', 'W', where, out));
    for (const [type, scope] of [
      ['corrected', 'volatile'],
      ['uncorrected', 'volatile'],
      ['corrected', 'aggregate'],
      ['uncorrected', 'aggregate'],
    ] as const) {
      put(
        GPU.ecc,
        value(row, `ecc.errors.${type}.${scope}.total`, 'count', where, out),
        { 'error.type': type, 'gpu.ecc.scope': scope },
        start,
      );
    }
    const info = infoFacts(row);
    if (info) put(GPU.info, 1, info);
  }
}
