/**
 * Text from outside (a job name from `sbatch -J`, a user name, an
 * environment value) on its way to a terminal or a log line: control
 * characters (C0, DEL, C1) become "?", so an ESC/OSC sequence cannot
 * recolour, retitle or rewrite an admin's terminal, and a newline cannot
 * forge a log line.
 */
export function printable(s: string): string {
  return s.replace(/[\x00-\x1f\x7f-\x9f]/g, '?');
}

/** printable() on every string of a plain value (objects, arrays), the rest as is. */
export function printableDeep<T>(v: T): T {
  if (typeof v === 'string') return printable(v) as T;
  if (Array.isArray(v)) return v.map((x) => printableDeep(x)) as T;
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, printableDeep(x)])) as T;
  return v;
}

/** A value from outside quoted in an error or a log line: its start only, and how long it was (a 100 KB value is no message). */
export function clip(s: string, max = 80): string {
  return s.length > max ? `${s.slice(0, max)}... (${s.length} characters)` : s;
}
