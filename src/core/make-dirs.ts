/**
 * `mkdir -p`, one level at a time. Node's own recursive mkdirSync loops for
 * ever (100 % CPU) under a filesystem like /proc, where mkdir answers ENOENT
 * for a parent that exists: here each level is made once and the first
 * failure is the error, naming the folder.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

export function makeDirs(dir: string, mode = 0o755): void {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    const st = statSync(d, { throwIfNoEntry: false });
    if (st) {
      if (!st.isDirectory())
        throw new Error(d === dir ? `${dir} exists and is not a folder` : `cannot create ${dir}: ${d} is not a folder`);
      break;
    }
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST' && statSync(d, { throwIfNoEntry: false })?.isDirectory()) continue;
      throw new Error(`cannot create ${d}: ${(e as Error).message}`);
    }
  }
}
