/**
 * Slurm hostlist expressions: "gpu[01-04,07],login2", "a[1-2]-ib[0-1]",
 * "gpu[01-02]-ib", and the same syntax in gres.conf File= ("/dev/nvidia[0-3]").
 * Read as Slurm's hostlist.c (hostlist_create) reads them, so a name list and a
 * GRES order agree with scontrol's: separators are commas, blanks, tabs and
 * newlines outside brackets; zero padding is kept ("gpu[01-04]" -> gpu01..gpu04);
 * the text after the last group is a suffix (Slurm 23.02.5+); a word without
 * "[" is a name as written. Deliberately stricter than Slurm (docs/slurm.md,
 * "Hostlists"): blanks or a sign inside a range, and an unclosed "[" anywhere,
 * are refused rather than read through strtoul; a whole expression is bounded.
 * The original l9gpu failed on "a[1-2],b3".
 */
import { clip } from '../src/core/printable.js';

/** Every name of one expression together: a bound of our own (Slurm has none but memory). */
const MAX_EXPANSION = 100_000;
/** Slurm's MAX_RANGE (MAX_SLURM_NODES): one range of more hosts is refused ("Too many hosts in range"). */
const MAX_RANGE = 65_536;
/** hostlist_create's separators ("\t, \n"), outside brackets only. */
const isSeparator = (ch: string) => ch === ',' || ch === ' ' || ch === '\t' || ch === '\n';

const fail = (expr: string, what: string) => new Error(`hostlist "${clip(expr)}"${what}`);

/** The words of an expression: separators inside "[...]" belong to the word (Slurm's _next_tok). */
function words(expr: string): string[] {
  const out: string[] = [];
  let inside = false;
  let start = 0;
  for (let i = 0; i <= expr.length; i++) {
    const ch = expr[i];
    if (ch === '[') inside = true;
    else if (ch === ']') inside = false;
    else if (ch === undefined || (!inside && isSeparator(ch))) {
      if (i > start) out.push(expr.slice(start, i));
      start = i + 1;
    }
  }
  return out;
}

function expandRange(body: string, expr: string): string[] {
  const out: string[] = [];
  for (const part of body.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw fail(expr, `: bad range "${clip(part)}"`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    // 400 digits are Infinity: a loop to it would never end
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b)) throw fail(expr, `: number too large in "${clip(part)}"`);
    if (b < a) throw fail(expr, `: range ${clip(part)} goes backwards`);
    if (b - a + 1 > MAX_RANGE) throw fail(expr, `: range ${clip(part)} has more than ${MAX_RANGE} names (Slurm's limit)`);
    // the whole list, every part together, within the bound
    if (out.length + (b - a + 1) > MAX_EXPANSION) throw fail(expr, ` expands to more than ${MAX_EXPANSION} names`);
    const width = m[1]!.length;
    for (let i = a; i <= b; i++) out.push(String(i).padStart(width, '0'));
  }
  return out;
}

/**
 * One word with any number of bracket groups. As hostlist.c: the last "[" opens
 * the last group, which closes at the first "]" after it (the rest is the
 * suffix, "]" included); each earlier group is found from the right, from its
 * "[" to the last "]" before the next group.
 */
function expandWord(word: string, expr: string): string[] {
  const last = word.lastIndexOf('[');
  if (last < 0) return [word];
  const close = word.indexOf(']', last);
  if (close < 0) throw fail(expr, ': unbalanced [');
  const groups = [word.slice(last + 1, close)];
  const texts = [word.slice(close + 1)];
  for (let end = last; ;) {
    const open = end > 0 ? word.lastIndexOf('[', end - 1) : -1;
    if (open < 0) {
      texts.push(word.slice(0, end));
      break;
    }
    const shut = word.lastIndexOf(']', end - 1);
    if (shut < open) throw fail(expr, ': unbalanced [');
    groups.push(word.slice(open + 1, shut));
    texts.push(word.slice(shut + 1, end));
    end = open;
  }
  groups.reverse();
  texts.reverse();
  const values: string[][] = [];
  let total = 1;
  for (const g of groups) {
    const v = expandRange(g, expr);
    // checked group by group, before the product is built: two groups of 60,000 are 3.6 * 10^9 names
    total *= v.length;
    if (total > MAX_EXPANSION) throw fail(expr, ` expands to more than ${MAX_EXPANSION} names`);
    values.push(v);
  }
  // Slurm's nesting (_push_range_list takes the prefix's groups from the right, recursing):
  // the last group varies fastest, then the first, the second, ..., the last but one slowest
  const n = groups.length;
  const fastestFirst = [n - 1, ...Array.from({ length: n - 1 }, (_, i) => i)];
  const at = new Array<number>(n).fill(0);
  const out: string[] = [];
  for (let k = 0; k < total; k++) {
    let name = texts[0]!;
    for (let i = 0; i < n; i++) name += values[i]![at[i]!]! + texts[i + 1]!;
    out.push(name);
    for (const g of fastestFirst) {
      if (++at[g]! < values[g]!.length) break;
      at[g] = 0;
    }
  }
  return out;
}

export function expandHostlist(expr: string): string[] {
  const t = expr.trim();
  if (t === '' || t === '(null)' || t === 'None') return [];
  const out: string[] = [];
  for (const word of words(t)) {
    const names = expandWord(word, t);
    if (out.length + names.length > MAX_EXPANSION) throw fail(t, ` expands to more than ${MAX_EXPANSION} names`);
    for (const n of names) out.push(n);
  }
  return out;
}

export function hostlistContains(expr: string, host: string): boolean {
  return expandHostlist(expr).includes(host);
}

/** "0-1,3" (SLURM_JOB_GPUS, IDX:0-1) -> [0, 1, 3] */
export function expandIndexList(s: string): number[] {
  const t = s.trim();
  if (t === '' || t === 'N/A') return [];
  return expandRange(t, t).map(Number);
}
