/**
 * Slurm hostlist expressions: "gpu[01-04,07],login2", "a[1-2]-ib[0-1]", and
 * the same syntax in gres.conf File= ("/dev/nvidia[0-3]"). Zero padding is
 * kept ("gpu[01-04]" -> gpu01..gpu04). The original l9gpu failed on "a[1-2],b3".
 */
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
    if (depth < 0) throw new Error(`hostlist "${expr}": unbalanced ]`);
  }
  if (depth !== 0) throw new Error(`hostlist "${expr}": unbalanced [`);
  if (cur) out.push(cur);
  return out;
}

function expandRange(body: string, expr: string): string[] {
  const out: string[] = [];
  for (const part of body.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`hostlist "${expr}": bad range "${part}"`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) throw new Error(`hostlist "${expr}": range ${part} goes backwards`);
    if (b - a > MAX_EXPANSION) throw new Error(`hostlist "${expr}": range ${part} is too large`);
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
  if (close < 0) throw new Error(`hostlist "${expr}": unbalanced [`);
  const head = item.slice(0, open);
  const rest = expandOne(item.slice(close + 1), expr);
  const out: string[] = [];
  for (const x of expandRange(item.slice(open + 1, close), expr)) for (const r of rest) out.push(head + x + r);
  if (out.length > MAX_EXPANSION) throw new Error(`hostlist "${expr}" expands to too many names`);
  return out;
}

export function expandHostlist(expr: string): string[] {
  const t = expr.trim();
  if (t === '' || t === '(null)' || t === 'None') return [];
  return splitTop(t).flatMap((item) => expandOne(item.trim(), t));
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
