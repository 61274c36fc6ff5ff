/**
 * Slurm hostlist expressions: "gpu[01-04,07],login2", "a[1-2]-ib[0-1]", and
 * the same syntax in gres.conf File= ("/dev/nvidia[0-3]"). Zero padding is
 * kept ("gpu[01-04]" -> gpu01..gpu04). The original l9gpu failed on "a[1-2],b3".
 */
import { clip } from '../src/core/printable.js';

const MAX_EXPANSION = 100_000;

/** Splits at top-level commas (not those inside brackets). */
function splitTop(expr: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of expr) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ',' && depth === 0) {
      if (cur) out.push(cur);
      cur = '';
    } else cur += ch;
    if (depth < 0) throw new Error(`hostlist "${clip(expr)}": unbalanced ]`);
  }
  if (depth !== 0) throw new Error(`hostlist "${clip(expr)}": unbalanced [`);
  if (cur) out.push(cur);
  return out;
}

function expandRange(body: string, expr: string): string[] {
  const out: string[] = [];
  for (const part of body.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`hostlist "${clip(expr)}": bad range "${clip(part)}"`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    // 400 digits are Infinity: a loop to it would never end
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b)) throw new Error(`hostlist "${clip(expr)}": number too large in "${clip(part)}"`);
    if (b < a) throw new Error(`hostlist "${clip(expr)}": range ${clip(part)} goes backwards`);
    // the whole list, every part together, within the bound
    if (out.length + (b - a + 1) > MAX_EXPANSION) throw new Error(`hostlist "${clip(expr)}" expands to more than ${MAX_EXPANSION} names`);
    const width = m[1]!.length;
    for (let i = a; i <= b; i++) out.push(String(i).padStart(width, '0'));
  }
  return out;
}

/** Expands one element with any number of bracket groups ("a[1-2]-ib[0-1]"). */
function expandOne(item: string, expr: string): string[] {
  const open = item.indexOf('[');
  if (open < 0) return [item];
  const close = item.indexOf(']', open);
  if (close < 0) throw new Error(`hostlist "${clip(expr)}": unbalanced [`);
  const head = item.slice(0, open);
  const rest = expandOne(item.slice(close + 1), expr);
  const here = expandRange(item.slice(open + 1, close), expr);
  // checked before the product is built: two groups of 100,000 are 10^10 names
  if (here.length * rest.length > MAX_EXPANSION) throw new Error(`hostlist "${clip(expr)}" expands to more than ${MAX_EXPANSION} names`);
  const out: string[] = [];
  for (const x of here) for (const r of rest) out.push(head + x + r);
  return out;
}


export function expandHostlist(expr: string): string[] {
  const t = expr.trim();
  if (t === '' || t === '(null)' || t === 'None') return [];
  const out: string[] = [];
  for (const item of splitTop(t)) {
    const names = expandOne(item.trim(), t);
    if (out.length + names.length > MAX_EXPANSION) throw new Error(`hostlist "${clip(t)}" expands to more than ${MAX_EXPANSION} names`);
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
