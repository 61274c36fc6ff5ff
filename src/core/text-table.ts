/** Text for terminals: the one table layout and the one set of styles of every command. */
export interface Style {
  bold(s: string): string;
  warn(s: string): string;
  dim(s: string): string;
}

/*
 * Orders and numbers without Intl: the first localeCompare or toLocaleString of a
 * process builds ICU's collator or number format, 9-15 ms on Node 20 and 24, more
 * than the rest of a light command takes (docs/performance.md). What is sorted
 * here (vendors, UUIDs, node, user and collective names) and the numbers shown
 * need neither.
 */

/** For sort(): the strings' code-unit order. */
export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A whole number with thousands separators, as toLocaleString('en-US') writes it: 1,234,567. */
export const thousands = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** ANSI styles for a terminal that wants them (a TTY without NO_COLOR), else plain text. */
export function style(color: boolean): Style {
  const w = (code: string) => (s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { bold: w('1'), warn: w('33'), dim: w('2') };
}

/** Columns padded to their widest cell, two spaces apart: the one table layout of every command. */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  if (rows.length === 0) return [];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}
