/**
 * gres.conf: the order of a node's gpu devices defines the GRES index that
 * SLURM_JOB_GPUS and scontrol's IDX use. Index -> device file -> its minor
 * number (stat) -> the GPU in the inventory (NVML's minor) -> UUID. The GRES
 * index, NVML's index, /dev/nvidiaN and the job-local index can all differ.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { clip } from '../src/core/printable.js';
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

/**
 * How slurmd numbers this node's GPUs. With AutoDetect (nvml, nvidia from
 * 24.11, rsmi, oneapi) slurmd merges the detected GPUs with gres.conf and
 * sorts them by "links", its stand-in for PCI bus order (gres_gpu.c
 * _merge_system_gres_conf): the GRES index is then the PCI bus order of the
 * vendor's GPUs, not the File= order. Without it, the order of the File= and
 * MultipleFiles= lines (one GPU each) for this node is the GRES index.
 */
export interface GresLayout {
  /** The AutoDetect mechanism in force for this node, or null (off, or none). */
  autodetect: string | null;
  /** Without AutoDetect: the node's gpu devices in GRES index order. */
  devices: GresDevice[];
}

/** The vendor whose GPUs an AutoDetect mechanism finds (as the inventory names vendors). */
export const AUTODETECT_VENDOR: Record<string, string> = { nvml: 'nvidia', nvidia: 'nvidia', rsmi: 'amd', oneapi: 'intel' };

/**
 * Lines without NodeName apply to every node; a node's own AutoDetect wins over the global one.
 * A bad line is an error naming `source` and the line (the whole layout is then unknown, as slurmd
 * itself refuses the file).
 */
export function parseGresLayout(text: string, node: string, name = 'gpu', source = 'gres.conf'): GresLayout {
  const files: { file: string; type?: string }[] = [];
  let globalAuto: string | null = null;
  let nodeAuto: string | null = null;
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    try {
      const f = fields(line);
      if (f.nodename && !hostlistContains(f.nodename, node)) continue;
      if (f.autodetect) {
        const a = f.autodetect.toLowerCase();
        if (f.nodename) nodeAuto = a;
        else globalAuto = a;
      }
      if ((f.name ?? '').toLowerCase() !== name) continue;
      const type = f.type ? { type: f.type } : {};
      if (f.multiplefiles) files.push({ file: firstFile(f.multiplefiles), ...type });
      else if (f.file) for (const file of expandHostlist(f.file)) files.push({ file, ...type });
    } catch (e) {
      throw new Error(`${source}:${i + 1}: ${(e as Error).message}`);
    }
  }
  const auto = nodeAuto ?? globalAuto;
  return {
    autodetect: auto && auto !== 'off' && AUTODETECT_VENDOR[auto] ? auto : null,
    devices: files.map((d, index) => ({ index, ...d })),
  };
}

/**
 * MultipleFiles= is one GRES whose files are a whole hostlist ("/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21",
 * "/dev/dri/card[0,2]": gres.c expands it with hostlist_create); the first file stands for the GPU.
 */
function firstFile(value: string): string {
  const file = expandHostlist(value)[0];
  if (file === undefined) throw new Error(`MultipleFiles=${clip(value)} names no file`);
  return file;
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

export function readGresLayout(path: string, node: string): GresLayout {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parseGresLayout(text, node, 'gpu', path);
}
