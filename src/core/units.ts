/**
 * Vendor units -> the registry's units, for every tool that prints a number
 * with a unit (amd-smi {value, unit} leaves, hl-smi "226 W" cells and
 * "[MiB]" headers). One table, so that "MB" means the same for every vendor.
 */
export type BaseUnit = '1' | 'By' | 'W' | 'J' | 'Cel' | 'Hz' | 'By/s';

/** unit -> [base unit, multiplier, divisor]: dividing keeps 41 % == 0.41 and 350123 mW == 350.123 W exactly. */
const TABLE: Record<string, [BaseUnit, number, number]> = {
  '%': ['1', 1, 100],
  // amd-smi and hl-smi report memory in binary units whatever they call them
  // (MI300X: "196592 MB" = 192 GiB): MB is MiB here.
  b: ['By', 1, 1],
  kb: ['By', 1024, 1],
  kib: ['By', 1024, 1],
  mb: ['By', 1024 ** 2, 1],
  mib: ['By', 1024 ** 2, 1],
  gb: ['By', 1024 ** 3, 1],
  gib: ['By', 1024 ** 3, 1],
  w: ['W', 1, 1],
  mw: ['W', 1, 1e3],
  uw: ['W', 1, 1e6],
  µw: ['W', 1, 1e6],
  kw: ['W', 1e3, 1],
  j: ['J', 1, 1],
  mj: ['J', 1, 1e3],
  uj: ['J', 1, 1e6],
  µj: ['J', 1, 1e6],
  kj: ['J', 1e3, 1],
  c: ['Cel', 1, 1],
  '°c': ['Cel', 1, 1],
  cel: ['Cel', 1, 1],
  mhz: ['Hz', 1e6, 1],
  ghz: ['Hz', 1e9, 1],
  khz: ['Hz', 1e3, 1],
  hz: ['Hz', 1, 1],
  'b/s': ['By/s', 1, 1],
  'kb/s': ['By/s', 1024, 1],
  'mb/s': ['By/s', 1024 ** 2, 1],
  'gb/s': ['By/s', 1024 ** 3, 1],
};

/** Converts value in unit to the base unit; throws on a unit it does not know, or on the wrong kind of unit. */
export function toBase(value: number, unit: string, expect: BaseUnit, where: string): number {
  const u = TABLE[unit.trim().toLowerCase()];
  if (!u) throw new Error(`${where}: unknown unit "${unit}"`);
  if (u[0] !== expect) throw new Error(`${where}: unit "${unit}" is not a ${expect} unit`);
  const v = (value * u[1]) / u[2];
  // 1e308 kW is no power: a conversion that overflows is an unreadable value, not Infinity passed on
  if (!Number.isFinite(v)) throw new Error(`${where}: ${value} ${unit} is beyond what a number holds`);
  return v;
}

/** Parses "226 W", "36 C", "0 %", "131072 MiB", "N/A", "[N/A]" -> [number, unit] or undefined when not available. */
export function parseQuantity(text: string): [number, string] | undefined {
  const t = text.trim();
  if (t === '' || /^\[?N\/A\]?$/i.test(t) || /^\[?not supported\]?$/i.test(t)) return undefined;
  const m = /^(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(\S*)$/.exec(t);
  if (!m) throw new Error(`"${t}" is not a number`);
  return [Number(m[1]), m[2]!];
}
