/**
 * The notes jobstats users know, from the header Slurm accounting filled
 * (src/jobs/slurm-header.ts): out of memory, timeout, time and CPU memory
 * over-requested, "this job would fit a MIG slice", then the site's own.
 * Each rule says what to ask Slurm for instead, with a figure.
 */
import type { GpuRow, JobHeader, Note, Totals } from './report-model.js';
import { siteNotes, type SiteNote } from './site-notes.js';

const GiB = 1024 ** 3;
/** Over-requested time: used less than this share of a limit longer than MIN_LIMIT_S. */
export const TIME_EFFICIENCY_LOW = 0.25;
const MIN_LIMIT_S = 3600;
/** Over-requested CPU memory: the largest task's RSS below this share of the per-node request, which is at least MIN_MEM_REQ. */
export const MEM_USE_LOW = 0.2;
const MIN_MEM_REQ = 4 * GiB;
/** MIG: GPUs this idle on average, seen over at least this long, each holding its peak in this share of a profile. */
export const MIG_UTIL_MAX = 0.25;
const MIG_MIN_SAMPLED_S = 300;
const MIG_HEADROOM = 0.9;

const gib = (b: number) => `${(b / GiB).toFixed(1)} GiB`;
const pct = (x: number) => `${Math.round(x * 100)}%`;

/** A --time value: D-HH:MM:SS or H:MM:SS. */
export function slurmDuration(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = Math.floor(s % 60);
  const hms = `${String(h).padStart(d ? 2 : 1, '0')}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`;
  return d ? `${d}-${hms}` : hms;
}

/** A --mem value per node, whole GiB rounded up ("24G"). */
const memFlag = (bytes: number) => `${Math.max(1, Math.ceil(bytes / GiB))}G`;

/**
 * MIG profiles per GPU, smallest first (the whole-GPU 7g profile left out:
 * it is no slice), from NVIDIA's MIG User Guide, "Supported MIG Profiles"
 * (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html).
 * slices: compute slices of the profile, of `of`; gb: its memory as named.
 */
interface MigGpu {
  label: string;
  of: number;
  profiles: { name: string; slices: number; gb: number }[];
}
const p = (...names: string[]) =>
  names.map((name) => {
    const m = /^(\d)g\.(\d+)gb$/.exec(name)!;
    return { name, slices: Number(m[1]), gb: Number(m[2]) };
  });
const MIG: Record<string, MigGpu> = {
  a30: { label: 'A30 24GB', of: 4, profiles: p('1g.6gb', '2g.12gb') },
  a100_40: { label: 'A100 40GB', of: 7, profiles: p('1g.5gb', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb') },
  a100_80: { label: 'A100 80GB', of: 7, profiles: p('1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb') },
  h100_80: { label: 'H100 80GB', of: 7, profiles: p('1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb') },
  h100_94: { label: 'H100 94GB', of: 7, profiles: p('1g.12gb', '1g.24gb', '2g.24gb', '3g.47gb', '4g.47gb') },
  h100_96: { label: 'H100 96GB', of: 7, profiles: p('1g.12gb', '1g.24gb', '2g.24gb', '3g.48gb', '4g.48gb') },
  h200: { label: 'H200 141GB', of: 7, profiles: p('1g.18gb', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb') },
  b200: { label: 'B200 180GB', of: 7, profiles: p('1g.23gb', '1g.45gb', '2g.45gb', '3g.90gb', '4g.90gb') },
};

/** The MIG table of a GPU from its NVML name and memory size; undefined: not MIG-capable (or not known here). */
export function migGpuOf(model: string | null, memTotal: number | null): MigGpu | undefined {
  if (!model) return undefined;
  const g = memTotal === null ? null : memTotal / GiB;
  if (/\bA30\b/i.test(model)) return MIG.a30;
  if (/\bA100\b/i.test(model)) return /80\s?GB/i.test(model) || (g !== null && g > 50) ? MIG.a100_80 : MIG.a100_40;
  if (/\bH200\b/i.test(model)) return MIG.h200;
  // GH200's GPU and the H20 (96GB) share a table
  if (/\bGH200\b|\bH20\b/i.test(model)) return MIG.h100_96;
  if (/\bH100\b/i.test(model)) {
    if (g !== null) return g < 85 ? MIG.h100_80 : g < 95 ? MIG.h100_94 : MIG.h100_96;
    return /NVL/i.test(model) ? MIG.h100_94 : MIG.h100_80;
  }
  if (/\bB200\b/i.test(model) && !/GB200/i.test(model)) return MIG.b200;
  return undefined;
}

/** The smallest profile holding this peak memory (with headroom) and this mean utilization (in compute slices), or undefined. */
export function migProfileFor(gpu: MigGpu, peakBytes: number, utilMean: number): string | undefined {
  const fit = gpu.profiles
    .filter((x) => peakBytes <= x.gb * 1e9 * MIG_HEADROOM && utilMean <= x.slices / gpu.of)
    .sort((a, b) => a.gb - b.gb || a.slices - b.slices)[0];
  return fit?.name;
}

function migNote(job: JobHeader, gpus: readonly GpuRow[]): Note | undefined {
  // a running job's peak may still grow
  if (job.state === 'RUNNING' || gpus.length === 0 || gpus.some((g) => g.uuid.startsWith('MIG-') || g.shared)) return undefined;
  const picks: { gpu: MigGpu; profile: string }[] = [];
  for (const g of gpus) {
    const f = g.figures;
    const table = migGpuOf(g.model, f.memTotal);
    if (!table || f.memUsedMax === null || f.utilMean === null || f.seconds < MIG_MIN_SAMPLED_S || f.utilMean >= MIG_UTIL_MAX)
      return undefined;
    const profile = migProfileFor(table, f.memUsedMax, f.utilMean);
    if (!profile) return undefined;
    picks.push({ gpu: table, profile });
  }
  // the largest pick serves every GPU of the job
  const worst = picks.reduce((a, b) => {
    const pa = a.gpu.profiles.findIndex((x) => x.name === a.profile);
    const pb = b.gpu.profiles.findIndex((x) => x.name === b.profile);
    return pb > pa ? b : a;
  });
  const peak = Math.max(...gpus.map((g) => g.figures.memUsedMax!));
  const util = Math.max(...gpus.map((g) => g.figures.utilMean!));
  const each = gpus.length > 1 ? `each of its ${gpus.length} GPUs` : 'its GPU';
  return {
    level: 'info',
    code: 'mig-fit',
    text:
      `this job would fit a MIG slice: ${each} peaked at ${gib(peak)} of memory and ${pct(util)} ` +
      `utilization, which a ${worst.profile} instance of the ${worst.gpu.label} holds; ask for ` +
      `your site's MIG GPUs and leave the whole GPU to jobs that need it`,
  };
}

export function slurmNotes(job: JobHeader, gpus: readonly GpuRow[], totals: Totals, site: readonly SiteNote[]): Note[] {
  const notes: Note[] = [];
  const nodes = Math.max(1, job.nodes.length);
  const perNodeReq = job.mem_req_bytes === null ? null : job.mem_req_bytes / nodes;
  const rss = job.mem_max_rss_bytes;
  if (job.state === 'OUT_OF_MEMORY') {
    const figures = [
      rss !== null ? `the largest task peaked at ${gib(rss)} (MaxRSS)` : null,
      perNodeReq !== null ? `${gib(perNodeReq)} requested per node` : null,
    ]
      .filter(Boolean)
      .join(', ');
    notes.push({
      level: 'warn',
      code: 'out-of-memory',
      text:
        `ran out of CPU memory (state OUT_OF_MEMORY)${figures ? `: ${figures}` : ''}; ask for more ` +
        `with ${perNodeReq !== null ? `--mem=${memFlag(2 * perNodeReq)} (twice the request)` : '--mem'}, ` +
        `or check the code for a leak`,
    });
  }
  if (job.state === 'TIMEOUT') {
    notes.push({
      level: 'warn',
      code: 'timeout',
      text:
        `hit its time limit${job.time_limit_s !== null ? ` of ${slurmDuration(job.time_limit_s)}` : ''} ` +
        `(state TIMEOUT) and was killed: write checkpoints and resume from them, or ask for a ` +
        `longer --time`,
    });
  }
  const eff = job.time_efficiency;
  if (
    job.state === 'COMPLETED' &&
    eff !== null &&
    eff < TIME_EFFICIENCY_LOW &&
    job.time_limit_s !== null &&
    job.time_limit_s > MIN_LIMIT_S &&
    job.elapsed_s !== null
  ) {
    // 1.5x the run time, up to the quarter hour: headroom for a slower run
    const suggest = Math.max(900, Math.ceil((job.elapsed_s * 1.5) / 900) * 900);
    notes.push({
      level: 'info',
      code: 'time-overrequested',
      text:
        `used ${pct(eff)} of its time limit (${slurmDuration(job.elapsed_s)} of ${slurmDuration(job.time_limit_s)}): ` +
        `--time=${slurmDuration(suggest)} would do, and shorter limits start sooner (backfill)`,
    });
  }
  if (
    job.state !== 'RUNNING' &&
    job.state !== 'OUT_OF_MEMORY' &&
    perNodeReq !== null &&
    rss !== null &&
    perNodeReq >= MIN_MEM_REQ &&
    rss < MEM_USE_LOW * perNodeReq
  ) {
    notes.push({
      level: 'info',
      code: 'cpu-memory-overrequested',
      text:
        `CPU memory over-requested: ${gib(perNodeReq)} per node, the largest task peaked at ${gib(rss)} ` +
        `(MaxRSS, per task: times the tasks per node): --mem=${memFlag(2 * rss)} would do for one ` +
        `task per node`,
    });
  }
  const mig = migNote(job, gpus);
  if (mig) notes.push(mig);
  return [...notes, ...siteNotes(site, job, gpus, totals)];
}
