/**
 * `l9gpu jobs --waste --source promql`: the cluster's ended jobs from their
 * job-end summary metrics (gpu.job.duration, utilization, sm.active,
 * memory.peak, sent once per GPU when a job leaves it) and the GPUs' memory
 * size, as the inputs of the same fold the store's list feeds
 * (src/jobs/waste.ts). Only jobs whose GPUs' summaries reached the backend
 * are there: a running job has none yet.
 */
import type { Viewer } from './access.js';
import { gpuKey, jobEndSummaries, type PromqlOptions } from './promql.js';
import type { WasteGpu, WasteInput } from './waste.js';

const NAMES = ['gpu.job.duration', 'gpu.job.utilization', 'gpu.job.sm.active', 'gpu.job.memory.peak', 'gpu.memory.total'] as const;

/** The inputs of every job in the window the viewer may see (their own; root and [jobs] admin_group every job). */
export async function wasteInputsFromPromql(o: PromqlOptions, who: Viewer): Promise<WasteInput[]> {
  const points = await jobEndSummaries(o, NAMES);
  // a GPU's size, by node and UUID (a series of any job, or of none)
  const sizes = new Map<string, number>();
  for (const p of points) if (p.name === 'gpu.memory.total') sizes.set(gpuKey(p.node, String(p.attributes['gpu.uuid'])), p.value);
  const jobs = new Map<string, { input: WasteInput; gpus: Map<string, WasteGpu> }>();
  for (const p of points) {
    const id = p.attributes['slurm.job.id'];
    if (p.name === 'gpu.memory.total' || typeof id !== 'string' || typeof p.attributes['gpu.uuid'] !== 'string') continue;
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
    const uuid = p.attributes['gpu.uuid'];
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
          mem_total_bytes: sizes.get(k) ?? null,
        }),
      );
    if (p.name === 'gpu.job.duration') g.gpu_hours = Math.round((p.value / 3600) * 1e6) / 1e6;
    else if (p.name === 'gpu.job.utilization') g.util_mean = p.value;
    else if (p.name === 'gpu.job.sm.active') g.sm_active = p.value;
    else if (p.name === 'gpu.job.memory.peak') g.mem_peak_bytes = p.value;
  }
  return [...jobs.values()].map(({ input, gpus }) => {
    const list = [...gpus.values()].sort((a, b) => a.node.localeCompare(b.node) || a.uuid.localeCompare(b.uuid));
    // the run time as the GPUs saw it: the longest GPU-time of one GPU (at a share of 1)
    const elapsed = Math.round(Math.max(...list.map((g) => g.gpu_hours)) * 3600);
    return { ...input, elapsed_s: elapsed, gpus: list };
  });
}
