/**
 * gres.conf: the order of a node's gpu devices defines the GRES index that
 * SLURM_JOB_GPUS and scontrol's IDX use. Index -> device file -> its minor
 * number (stat) -> the GPU in the inventory (NVML's minor) -> UUID. The GRES
 * index, NVML's index, /dev/nvidiaN and the job-local index can all differ.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expandHostlist, hostlistContains } from './hostlist.js';

export interface GresDevice {
  /** Position in gres.conf order for this node = the GRES index. */
  index: number;
  file: string;
  type?: string;
}

export function gresConfPath(slurmConf: string | undefined, override?: string | null): string {
  if (override) return override;
  return join(dirname(slurmConf || '/etc/slurm/slurm.conf'), 'gres.conf');
}

/** Key=Value pairs of one gres.conf line (values may be quoted). */
function fields(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of line.matchAll(/(\w+)=("[^"]*"|\S+)/g)) out[m[1]!.toLowerCase()] = m[2]!.replace(/^"|"$/g, '');
  return out;
}

/** The node's gpu devices in GRES index order. Lines without NodeName apply to every node. */
export function parseGresConf(text: string, node: string, name = 'gpu'): GresDevice[] {
  const files: { file: string; type?: string }[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const f = fields(line);
    if ((f.name ?? '').toLowerCase() !== name) continue;
    if (f.nodename && !hostlistContains(f.nodename, node)) continue;
    if (!f.file) continue; // AutoDetect or Count-only lines carry no device order
    for (const file of expandHostlist(f.file)) files.push({ file, ...(f.type ? { type: f.type } : {}) });
  }
  return files.map((d, index) => ({ index, ...d }));
}

/** Minor number of a character device (the N of /dev/nvidiaN, or a mknod test node). */
export function deviceMinor(file: string): number | undefined {
  try {
    const st = statSync(file);
    if (!st.isCharacterDevice() && !st.isBlockDevice()) return undefined;
    // Linux dev_t: minor = (dev & 0xff) | ((dev >> 12) & 0xfff00)
    return (st.rdev & 0xff) | ((st.rdev >> 12) & 0xfff00);
  } catch {
    return undefined;
  }
}

export function readGresConf(path: string, node: string): GresDevice[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parseGresConf(text, node);
}
