/**
 * `l9gpu jobs --waste --source promql`: the cluster's ended jobs from their
 * job-end summary metrics (gpu.job.duration, utilization, sm.active,
 * memory.peak, sent once per GPU when a job leaves it) and the GPUs' memory
 * size, as the inputs of the same fold the store's list feeds
 * (src/jobs/waste.ts). Only jobs whose GPUs' summaries reached the backend
 * are there: a running job has none yet. In info mode a node's summary
 * stands for the job's GPUs there, alike (docs/jobs.md says what that
 * changes: a node's GPUs are all unused or none).
 */
import type { Viewer } from './access.js';
import { GPU_COUNT_ATTRIBUTE } from '../figures/node-summary.js';
import { gpuKey, jobEndSummaries, type PromqlOptions } from './promql.js';
import type { WasteGpu, WasteInput } from './waste.js';

/** A summary's GPUs: itself, or a node's summary as that many GPUs alike (its GPU-hours shared out, its means and peak on each). */
function perGpu({ count, ...g }: WasteGpu & { count: number }): WasteGpu[] {
  if (count === 1) return [g];
  return Array.from({ length: count }, () => ({ ...g, gpu_hours: Math.round((g.gpu_hours / count) * 1e6) / 1e6 }));
}

/** The smallest GPU memory of a node: a node's summary does not say which of its GPUs the job had. */
function smallest(sizes: ReadonlyMap<string, number>, node: string): number | null {
  const of = [...sizes].filter(([k]) => k.startsWith(gpuKey(node, ''))).map(([, v]) => v);
  return of.length ? Math.min(...of) : null;
}

const NAMES = ['gpu.job.duration', 'gpu.job.utilization', 'gpu.job.sm.active', 'gpu.job.memory.peak', 'gpu.memory.total'] as const;

/** The inputs of every job in the window the viewer may see (their own; root and [jobs] admin_group every job). */
export async function wasteInputsFromPromql(o: PromqlOptions, who: Viewer): Promise<WasteInput[]> {
  const points = await jobEndSummaries(o, NAMES);
  // a GPU's size, by node and UUID (a series of any job, or of none)
  const sizes = new Map<string, number>();
  for (const p of points) if (p.name === 'gpu.memory.total') sizes.set(gpuKey(p.node, String(p.attributes['gpu.uuid'])), p.value);
  const jobs = new Map<string, { input: WasteInput; gpus: Map<string, WasteGpu & { count: number }> }>();
  for (const p of points) {
    const id = p.attributes['slurm.job.id'];
    // a GPU's summary names its GPU; a node's (job_labels = info) has gpu.count instead
    const count = Number(p.attributes[GPU_COUNT_ATTRIBUTE]);
    const perNode = typeof p.attributes['gpu.uuid'] !== 'string';
    if (p.name === 'gpu.memory.total' || typeof id !== 'string' || (perNode && !(Number.isInteger(count) && count > 0))) continue;
    const user = typeof p.attributes['slurm.user'] === 'string' ? p.attributes['slurm.user'] : null;
    if (!who.privileged && user !== who.name) continue;
    const str = (k: string) => (typeof p.attributes[k] === 'string' ? (p.attributes[k] as string) : null);
    const task = str('slurm.array.task.id');
    const shown = str('slurm.array.job.id') && task !== null ? `${str('slurm.array.job.id')}_${task}` : id;
    let j = jobs.get(id);
    if (!j) {
      jobs.set(
        id,
        (j = {
          input: {
            id: shown,
            user,
            account: str('slurm.account'),
            partition: str('slurm.partition'),
            state: 'ENDED',
            start: null,
            elapsed_s: null,
            time_limit_s: null,
            gpus: [],
          },
          gpus: new Map(),
        }),
      );
    }
    const uuid = perNode ? '' : String(p.attributes['gpu.uuid']);
    const k = gpuKey(p.node, uuid);
    let g = j.gpus.get(k);
    if (!g)
      j.gpus.set(
        k,
        (g = {
          node: p.node,
          uuid,
          gpu_hours: 0,
          util_mean: null,
          sm_active: null,
          mem_peak_bytes: null,
          mem_total_bytes: perNode ? smallest(sizes, p.node) : (sizes.get(k) ?? null),
          count: perNode ? count : 1,
        }),
      );
    if (p.name === 'gpu.job.duration') g.gpu_hours = Math.round((p.value / 3600) * 1e6) / 1e6;
    else if (p.name === 'gpu.job.utilization') g.util_mean = p.value;
    else if (p.name === 'gpu.job.sm.active') g.sm_active = p.value;
    else if (p.name === 'gpu.job.memory.peak') g.mem_peak_bytes = p.value;
  }
  return [...jobs.values()].map(({ input, gpus }) => {
    const list = [...gpus.values()].flatMap(perGpu).sort((a, b) => a.node.localeCompare(b.node) || a.uuid.localeCompare(b.uuid));
    // the run time as the GPUs saw it: the longest GPU-time of one GPU (at a share of 1)
    const elapsed = Math.round(Math.max(...list.map((g) => g.gpu_hours)) * 3600);
    return { ...input, elapsed_s: elapsed, gpus: list };
  });
}
