/**
 * What a user or support engineer should know about a job's GPU use, from
 * the same figures the report shows: unused GPUs, low utilization, memory far
 * below the GPU's size, throttling, Xid and ECC errors, shared GPUs, a job
 * too short to judge.
 */
import type { CommunicationFigures, GpuRow, JobHeader, Note, Totals } from './report-model.js';
import { communicationNotes } from './communication.js';
import { UNUSED_UTIL } from '../figures/rollup.js';

const TOO_SHORT_S = 120;
const LOW_UTIL = 0.25;
const SMALL_MEMORY = 0.25;
const THROTTLED = 0.1;
const GiB = 1024 ** 3;
const pct = (x: number) => `${Math.round(x * 100)}%`;
const short = (uuid: string) => uuid.slice(0, 12);

/** Too few seconds or samples for notes on how the GPUs were used. */
export function tooShortToJudge(gpus: readonly GpuRow[]): boolean {
  return (
    gpus.length === 0 ||
    Math.max(...gpus.map((g) => g.figures.seconds)) < TOO_SHORT_S ||
    Math.max(...gpus.map((g) => g.figures.samples)) < 3
  );
}

export function jobNotes(job: JobHeader, gpus: readonly GpuRow[], totals: Totals): Note[] {
  const notes: Note[] = [];
  if (gpus.length === 0) return [{ level: 'info', code: 'no-gpus', text: 'this job held no GPU on this node' }];
  const sampled = Math.max(...gpus.map((g) => g.figures.seconds));
  const samples = Math.max(...gpus.map((g) => g.figures.samples));
  const tooShort = tooShortToJudge(gpus);
  if (tooShort)
    notes.push({
      level: 'info',
      code: 'too-short',
      text: `too short to judge: ${Math.round(sampled)} s sampled over ${samples} sample(s)${job.state === 'RUNNING' ? ' so far' : ''}`,
    });
  const unused = gpus.filter((g) => g.figures.samples > 0 && (g.figures.utilMax ?? 0) < UNUSED_UTIL);
  if (!tooShort && unused.length > 0) {
    notes.push({
      level: 'warn',
      code: 'unused-gpus',
      text:
        unused.length === gpus.length
          ? `did not use its ${gpus.length} GPU(s): utilization stayed below 1%`
          : `did not use ${unused.length} of ${gpus.length} GPUs (${unused.map((g) => short(g.uuid)).join(', ')}): request fewer GPUs`,
    });
  }
  if (!tooShort && totals.util_mean !== null && totals.util_mean < LOW_UTIL && unused.length < gpus.length) {
    notes.push({
      level: 'warn',
      code: 'low-utilization',
      text: `GPU utilization was low: ${pct(totals.util_mean)} on average (check the input pipeline, batch size, or CPU-bound steps)`,
    });
  }
  const mem = gpus.filter((g) => g.figures.memUsedMax !== null && g.figures.memTotal);
  if (!tooShort && mem.length > 0 && mem.every((g) => g.figures.memUsedMax! < SMALL_MEMORY * g.figures.memTotal!)) {
    const peak = Math.max(...mem.map((g) => g.figures.memUsedMax!));
    const total = Math.max(...mem.map((g) => g.figures.memTotal!));
    notes.push({
      level: 'info',
      code: 'small-memory',
      text: `peak GPU memory ${(peak / GiB).toFixed(1)} GiB of ${(total / GiB).toFixed(0)} GiB: a smaller GPU or a MIG slice would do`,
    });
  }
  for (const g of gpus) {
    const f = g.figures;
    const throttled = Object.entries(f.throttledS).filter(([, s]) => f.seconds > 0 && s / f.seconds >= THROTTLED);
    if (throttled.length) {
      notes.push({
        level: 'warn',
        code: 'throttled',
        text: `GPU ${short(g.uuid)} was throttled ${throttled.map(([c, s]) => `${c} ${pct(s / f.seconds)}`).join(', ')} of the time`,
      });
    }
    const xids = Object.entries(f.xid);
    if (xids.length) {
      notes.push({
        level: 'warn',
        code: 'xid',
        text:
          `GPU ${short(g.uuid)} on ${g.node} reported ${xids.map(([c, n]) => `Xid ${c} (x${n})`).join(', ')}: ` +
          `open a hardware ticket with these codes`,
      });
    }
    if (f.eccUncorrected > 0)
      notes.push({
        level: 'warn',
        code: 'ecc',
        text: `GPU ${short(g.uuid)} on ${g.node} had ${f.eccUncorrected} uncorrected ECC error(s)`,
      });
    if (g.shared)
      notes.push({
        level: 'info',
        code: 'shared',
        text:
          `GPU ${short(g.uuid)} was shared with other jobs: this job's share ${pct(f.shareMean)} ` +
          `(energy and GPU-hours are counted at that share)`,
      });
    if (f.energySource === 'power')
      notes.push({
        level: 'info',
        code: 'energy-from-power',
        text: `GPU ${short(g.uuid)} has no energy counter: its energy is integrated from power`,
      });
    // NVML has neither power nor device utilization for a MIG instance: say what its figures are, so 0 J is not read as idle
    if (g.uuid.startsWith('MIG-'))
      notes.push({
        level: 'info',
        code: 'mig-instance',
        text:
          `GPU ${short(g.uuid)} is a MIG instance: its utilization is its GPU instance's engine ` +
          `activity (GPM, Hopper and later), and NVML measures no power or energy per instance (not ` +
          `counted here)`,
      });
  }
  return notes;
}

/** The notes a report's own figures make, whichever source it came from (the reader's peak, Slurm and site notes: src/jobs/show.ts
 * finishReport). */
export function figureNotes(job: JobHeader, gpus: readonly GpuRow[], totals: Totals, communication: CommunicationFigures | null): Note[] {
  return [...jobNotes(job, gpus, totals), ...communicationNotes(communication)];
}
