/**
 * Whether an ended job held GPUs, decided in the slurmctld epilog before
 * anything is queued or started. slurmctld gives EpilogSlurmctld no GPU
 * variable (job_common_env_vars, 22.05 to 26.05: no SLURM_JOB_GPUS,
 * CUDA_VISIBLE_DEVICES or TRES; the binaries hold none of those names), so
 * the answer comes from the job's nodes (SLURM_JOB_NODELIST) and the
 * controller's own slurm.conf: a job none of whose nodes has a gpu GRES
 * (NodeName ... Gres=gpu:..., or a DEFAULT line's) held no GPU. A job on a
 * GPU node may still have held none: the worker finds no GPU series of it
 * and drops it, in the queries of its batch. A GPU variable, where a
 * slurmctld or a site's PrEp plugin sets one, decides first.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { expandHostlist } from './hostlist.js';

export type GpuVerdict = 'gpu' | 'cpu' | 'unknown';

const GPU_VARIABLES = ['SLURM_JOB_GPUS', 'CUDA_VISIBLE_DEVICES', 'GPU_DEVICE_ORDINAL', 'ROCR_VISIBLE_DEVICES'] as const;
/** GRES that are a GPU or a part of one. */
const GPU_GRES = /^(gpu|mps|shard)(:|$)/i;
const MAX_INCLUDES = 16;

export interface NodeGres {
  /** Every node slurm.conf names. */
  all: Set<string>;
  /** Those with a GPU GRES. */
  gpu: Set<string>;
  /** slurm.conf and the files it includes. */
  files: string[];
}

/** The nodes of slurm.conf (and its Include files) and which have GPUs. */
export function slurmConfNodes(path: string): NodeGres {
  const out: NodeGres = { all: new Set(), gpu: new Set(), files: [] };
  let defaultGpu = false;
  let includes = 0;
  const read = (file: string) => {
    out.files.push(file);
    for (const raw of readFileSync(file, 'utf8').split('\n')) {
      const line = raw.replace(/#.*/, '').trim();
      if (!line) continue;
      const inc = /^include\s+(\S+)/i.exec(line);
      if (inc) {
        if (++includes > MAX_INCLUDES) throw new Error(`${path}: more than ${MAX_INCLUDES} Include files`);
        const p = inc[1]!;
        read(isAbsolute(p) ? p : join(dirname(path), p));
        continue;
      }
      const fields = new Map<string, string>();
      for (const m of line.matchAll(/(\w+)=("[^"]*"|\S+)/g)) fields.set(m[1]!.toLowerCase(), m[2]!.replace(/^"|"$/g, ''));
      const name = fields.get('nodename');
      if (name === undefined) continue;
      const gres = fields.get('gres');
      const hasGpu = gres === undefined ? undefined : gres.split(',').some((g) => GPU_GRES.test(g.trim()));
      if (name.toUpperCase() === 'DEFAULT') {
        if (hasGpu !== undefined) defaultGpu = hasGpu;
        continue;
      }
      for (const n of expandHostlist(name)) {
        out.all.add(n);
        if (hasGpu ?? defaultGpu) out.gpu.add(n);
      }
    }
  };
  read(path);
  return out;
}

export interface Verdict {
  verdict: GpuVerdict;
  /** slurm.conf's nodes, where it was read. */
  known?: NodeGres;
}

/** The verdict for the job slurmctld's environment names; `conf`: slurm.conf's path, null where none was found. */
export function jobHeldGpus(env: NodeJS.ProcessEnv, conf: string | null): Verdict {
  for (const v of GPU_VARIABLES) {
    const x = env[v];
    if (x && x !== 'NoDevFiles') return { verdict: 'gpu' };
  }
  if (!conf) return { verdict: 'unknown' };
  const nodes = expandHostlist(env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST ?? '');
  let known: NodeGres;
  try {
    known = slurmConfNodes(conf);
  } catch {
    return { verdict: 'unknown' };
  }
  // a node slurm.conf does not name (a dynamic node, slurmd -Z) may have GPUs: the worker looks
  if (nodes.length === 0 || nodes.some((n) => !known.all.has(n))) return { verdict: 'unknown', known };
  return { verdict: nodes.some((n) => known.gpu.has(n)) ? 'gpu' : 'cpu', known };
}
