/**
 * Text from outside (a job name from `sbatch -J`, a user name, an
 * environment value) on its way to a terminal, a CSV file or a log line:
 * control characters (C0, DEL, C1) become "?", so an ESC/OSC sequence cannot
 * recolour, retitle or rewrite an admin's terminal, and a newline cannot
 * forge a log line; so do the invisible format characters (Unicode Cf: the
 * bidirectional overrides and isolates that show "job-exe.txt" as
 * "job-txt.exe" or reorder a row's columns, zero-width spaces and joiners
 * that make two different names look alike) and the line and paragraph
 * separators. JSON output is left exact: it is for programs.
 */
export function printable(s: string): string {
  return s.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, '?');
}

/** printable() keeping line breaks and tabs: a message of several lines (an error listing what matched) for a terminal. */
export function printableLines(s: string): string {
  return s.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, (c) => (c === '\n' || c === '\t' ? c : '?'));
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
