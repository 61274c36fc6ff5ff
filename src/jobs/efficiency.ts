/**
 * The Efficiency section of `l9gpu jobs show`: what the GPU's own counters
 * (GPM, src/figures/rollup.ts) say of a job, per GPU and for the job. Worked
 * out from the report's GPU rows alone, whichever source gave them (the
 * store, the AdminComment summary, PromQL), with the reader's [jobs]
 * thresholds: the three sources agree by construction. The rules and the
 * score are written in docs/jobs.md; a change here changes that page.
 */
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import type { GpmFigures, IdleBasis } from '../figures/rollup.js';
import { JOBS_SECTION } from './config.js';
import type {
  EfficiencyClass,
  EfficiencyIdle,
  EfficiencyMeans,
  EfficiencySection,
  EfficiencyVerdict,
  GpuEfficiency,
  GpuRow,
  Note,
} from './report-model.js';

export interface EfficiencyThresholds {
  /** SM activity below this: idle. */
  idleSmActive: number;
  /** Utilization at least this with SM activity below inputBoundSmActive: input-bound. */
  inputBoundUtil: number;
  inputBoundSmActive: number;
  /** DRAM activity at least this: memory-bound (when above every pipe that passes its own). */
  memoryBoundDram: number;
  /** Tensor, FP64 or FP32 pipe activity at least this: compute-bound on that pipe. */
  computeBoundPipe: number;
  /** SM occupancy below this (SMs busy, no pipe or DRAM near its limit): low occupancy. */
  lowOccupancy: number;
  /** SM activity max/min across a job's GPUs at least this: a note. */
  imbalance: number;
}

export function efficiencyThresholds(cfg: Config): EfficiencyThresholds {
  const j = readSection(cfg, JOBS_SECTION);
  return {
    idleSmActive: j.efficiency_idle_sm_active,
    inputBoundUtil: j.efficiency_input_bound_utilization,
    inputBoundSmActive: j.efficiency_input_bound_sm_active,
    memoryBoundDram: j.efficiency_memory_bound_dram,
    computeBoundPipe: j.efficiency_compute_bound_pipe,
    lowOccupancy: j.efficiency_low_occupancy,
    imbalance: j.efficiency_imbalance,
  };
}

const r4 = (x: number) => Math.round(x * 1e4) / 1e4;
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
const pct = (x: number) => `${Math.round(x * 100)}%`;
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const short = (uuid: string) => uuid.slice(0, 12);

function meansOf(g: GpmFigures): EfficiencyMeans {
  return {
    gpm_s: g.seconds,
    sm_active: g.smActive,
    sm_occupancy: g.smOccupancy,
    tensor_active: g.tensorActive,
    dram_active: g.dramActive,
    fp64_active: g.fp64Active,
    fp32_active: g.fp32Active,
    fp16_active: g.fp16Active,
    nvlink_bytes: g.nvlinkBytes,
    pcie_bytes: g.pcieBytes,
  };
}

const MEAN_KEYS = ['sm_active', 'sm_occupancy', 'tensor_active', 'dram_active', 'fp64_active', 'fp32_active', 'fp16_active'] as const;
const BYTE_KEYS = ['nvlink_bytes', 'pcie_bytes'] as const;

/** The job's means: each GPU's weighted by its GPM seconds, over the GPUs that count the figure; bytes added up. */
function jobMeans(ms: readonly EfficiencyMeans[]): EfficiencyMeans | null {
  if (ms.length === 0) return null;
  const out = { gpm_s: r6(ms.reduce((s, m) => s + m.gpm_s, 0)) } as EfficiencyMeans;
  for (const k of MEAN_KEYS) {
    const has = ms.filter((m) => m[k] !== null);
    const w = has.reduce((s, m) => s + m.gpm_s, 0);
    out[k] = w > 0 ? r6(has.reduce((s, m) => s + m[k]! * m.gpm_s, 0) / w) : null;
  }
  for (const k of BYTE_KEYS) {
    const has = ms.filter((m) => m[k] !== null);
    out[k] = has.length ? has.reduce((s, m) => s + m[k]!, 0) : null;
  }
  return out;
}

/** The score (docs/jobs.md): the mean of SM activity and the highest of DRAM, tensor and FP64/32/16 activity. */
function scoreOf(m: EfficiencyMeans): number | null {
  if (m.sm_active === null) return null;
  const limit = Math.max(
    0,
    ...[m.dram_active, m.tensor_active, m.fp64_active, m.fp32_active, m.fp16_active].filter((x): x is number => x !== null),
  );
  return r4((m.sm_active + limit) / 2);
}

/** The first rule that holds (docs/jobs.md has them in this order). */
export function classify(m: EfficiencyMeans | null, util: number | null, t: EfficiencyThresholds): EfficiencyVerdict {
  if (!m || m.sm_active === null) {
    // no GPM: utilization is all there is
    if (util !== null && util < t.idleSmActive)
      return { class: 'idle', rule: `no GPM; utilization ${pct(util)} < ${pct(t.idleSmActive)}`, score: null };
    return {
      class: 'no-gpm',
      rule: `no GPM counters (before Hopper, or a driver without GPM)${util !== null ? `; utilization ${pct(util)}` : ''}`,
      score: null,
    };
  }
  const sm = m.sm_active;
  const score = scoreOf(m);
  if (sm < t.idleSmActive) return { class: 'idle', rule: `SM active ${pct(sm)} < ${pct(t.idleSmActive)}`, score };
  if (util !== null && util >= t.inputBoundUtil && sm < t.inputBoundSmActive) {
    return {
      class: 'input-bound',
      rule: `utilization ${pct(util)} >= ${pct(t.inputBoundUtil)} but SM active ${pct(sm)} < ${pct(t.inputBoundSmActive)}`,
      score,
    };
  }
  const limits: [EfficiencyClass, string, number | null, number][] = [
    ['memory-bound', 'DRAM', m.dram_active, t.memoryBoundDram],
    ['tensor-bound', 'tensor', m.tensor_active, t.computeBoundPipe],
    ['fp64-bound', 'FP64', m.fp64_active, t.computeBoundPipe],
    ['fp32-bound', 'FP32', m.fp32_active, t.computeBoundPipe],
  ];
  let top: (typeof limits)[number] | undefined;
  for (const l of limits) if (l[2] !== null && l[2] >= l[3] && (!top || l[2] > top[2]!)) top = l;
  if (top)
    return {
      class: top[0],
      rule: `${top[1]} active ${pct(top[2]!)} >= ${pct(top[3])}${limits
        .filter((l) => l !== top && l[2] !== null && l[2] >= l[3])
        .map((l) => `, above ${l[1]} ${pct(l[2]!)}`)
        .join('')}`,
      score,
    };
  if (m.sm_occupancy !== null && m.sm_occupancy < t.lowOccupancy)
    return {
      class: 'low-occupancy',
      rule: `SM occupancy ${pct(m.sm_occupancy)} < ${pct(t.lowOccupancy)}, no pipe or DRAM at its threshold`,
      score,
    };
  return { class: 'mixed', rule: 'SMs busy; no pipe or DRAM at its threshold, occupancy not low', score };
}

function idleOf(g: GpuRow): EfficiencyIdle {
  const i = g.figures.idle;
  return { basis: i.basis, seconds: i.seconds, longest_s: i.longestS, longest_start: iso(i.longestFrom) };
}

/** The section for a report's GPUs; null for a job without GPUs. */
export function efficiencyOf(gpus: readonly GpuRow[], t: EfficiencyThresholds): EfficiencySection | null {
  if (gpus.length === 0) return null;
  const rows: GpuEfficiency[] = gpus.map((g) => {
    const means = g.figures.gpm ? meansOf(g.figures.gpm) : null;
    return {
      uuid: g.uuid,
      index: g.index,
      util_mean: g.figures.utilMean,
      means,
      idle: idleOf(g),
      ...classify(means, g.figures.utilMean, t),
    };
  });
  const hasGpm = (r: GpuEfficiency) => r.means !== null && r.means.sm_active !== null;
  const gpm = rows.filter(hasGpm);
  // the job's utilization over the same GPUs as its means (all of them without GPM), weighted by covered seconds
  const over = gpus.filter((_, i) => gpm.length === 0 || hasGpm(rows[i]!));
  const withUtil = over.filter((g) => g.figures.utilMean !== null);
  const covered = withUtil.reduce((s, g) => s + g.figures.seconds, 0);
  const util = covered > 0 ? r6(withUtil.reduce((s, g) => s + g.figures.utilMean! * g.figures.seconds, 0) / covered) : null;
  const means = jobMeans(gpm.map((r) => r.means!));
  const verdict = classify(means, util, t);
  // the job's score: its GPUs' scores weighted by their GPU-hours
  const scored = rows
    .map((r, i) => [r.score, gpus[i]!.figures.gpuHours] as const)
    .filter((x): x is readonly [number, number] => x[0] !== null);
  const hours = scored.reduce((s, [, h]) => s + h, 0);
  const score = scored.length === 0 ? null : hours > 0 ? r4(scored.reduce((s, [x, h]) => s + x * h, 0) / hours) : verdict.score;
  let longest: GpuEfficiency | undefined;
  for (const r of rows) if (r.idle.longest_s > 0 && (!longest || r.idle.longest_s > longest.idle.longest_s)) longest = r;
  const basis: IdleBasis = rows.some((r) => r.idle.basis === 'sm') ? 'sm' : rows.some((r) => r.idle.basis === 'util') ? 'util' : 'none';
  let imbalance: EfficiencySection['job']['imbalance'] = null;
  if (gpm.length >= 2) {
    const by = [...gpm].sort((a, b) => b.means!.sm_active! - a.means!.sm_active!);
    const max = by[0]!;
    const min = by.at(-1)!;
    imbalance = {
      max: max.means!.sm_active!,
      min: min.means!.sm_active!,
      ratio: min.means!.sm_active! > 0 ? r4(max.means!.sm_active! / min.means!.sm_active!) : null,
      max_gpu: max.uuid,
      min_gpu: min.uuid,
    };
  }
  return {
    gpus_with_gpm: gpm.length,
    gpus: rows,
    job: {
      ...verdict,
      score,
      util_mean: util,
      means,
      idle: {
        basis,
        seconds: r6(rows.reduce((s, r) => s + r.idle.seconds, 0)),
        longest_s: longest?.idle.longest_s ?? 0,
        longest_start: longest?.idle.longest_start ?? null,
        longest_gpu: longest?.uuid ?? null,
      },
      imbalance,
    },
  };
}

/** A stretch this long, and this share of the job's sampled time, is worth a note. */
const IDLE_STRETCH_S = 300;
const IDLE_STRETCH_SHARE = 0.1;

/** Advice from the section, in the style of src/jobs/notes.ts (a job too short to judge gets none). */
export function efficiencyNotes(e: EfficiencySection | null, gpus: readonly GpuRow[], tooShort: boolean, t: EfficiencyThresholds): Note[] {
  if (!e || tooShort) return [];
  const notes: Note[] = [];
  const j = e.job;
  const m = j.means;
  const without = e.gpus.filter((g) => g.means === null);
  if (without.length) {
    notes.push({
      level: 'info',
      code: 'no-gpm',
      text:
        `${without.length === e.gpus.length ? 'no GPU of this job has' : `GPU(s) ${without.map((g) => short(g.uuid)).join(', ')} have`} ` +
        `GPM counters (before Hopper, or a driver without GPM): ${without.length === e.gpus.length ? 'its' : 'their'} ` +
        `efficiency is judged by utilization alone`,
    });
  }
  if (m && m.sm_active !== null) {
    switch (j.class) {
      case 'idle':
        notes.push({
          level: 'warn',
          code: 'sm-idle',
          text:
            `the GPUs' SMs were idle: ${pct(m.sm_active)} SM activity on average (GPM); check that the ` +
            `work runs on the GPU (a CPU-only build, CUDA_VISIBLE_DEVICES)`,
        });
        break;
      case 'input-bound':
        notes.push({
          level: 'warn',
          code: 'input-bound',
          text:
            `kernels ran ${pct(j.util_mean!)} of the time but only ${pct(m.sm_active)} of the SMs had ` +
            `work: small kernels or a GPU waiting on the host; larger batches, more data-loader ` +
            `workers, CUDA graphs`,
        });
        break;
      case 'memory-bound':
        notes.push({
          level: 'info',
          code: 'memory-bound',
          text:
            `memory-bound: DRAM bandwidth ${pct(m.dram_active!)} of peak; fusing kernels, lower ` +
            `precision (BF16/FP8) and better data reuse move fewer bytes`,
        });
        break;
      case 'fp32-bound':
        if ((m.tensor_active ?? 0) < t.computeBoundPipe / 2) {
          notes.push({
            level: 'info',
            code: 'fp32-not-tensor',
            text:
              `FP32 math on the CUDA cores (${pct(m.fp32_active!)}) with the tensor cores at ${pct(m.tensor_active ?? 0)}: ` +
              `TF32 or BF16 mixed precision (torch.autocast, allow_tf32) runs matrix math on the tensor ` +
              `cores`,
          });
        }
        break;
      case 'low-occupancy':
        notes.push({
          level: 'info',
          code: 'low-occupancy',
          text:
            `SM occupancy ${pct(m.sm_occupancy!)}: few warps per SM; larger batches or kernels with ` +
            `more threads per block keep the SMs fed`,
        });
        break;
      default:
        break;
    }
  }
  const im = j.imbalance;
  if (im && (im.ratio === null || im.ratio >= t.imbalance) && im.max >= t.idleSmActive) {
    notes.push({
      level: 'warn',
      code: 'sm-imbalance',
      text:
        `SM activity was uneven across the GPUs: ${pct(im.max)} on ${short(im.max_gpu)}, ${pct(im.min)} ` +
        `on ${short(im.min_gpu)}${im.ratio === null ? '' : ` (${im.ratio.toFixed(1)}x)`}; check how ` +
        `the work is split across ranks (stragglers, uneven shards)`,
    });
  }
  const sampled = Math.max(0, ...gpus.map((g) => g.figures.seconds));
  if (j.idle.longest_s >= IDLE_STRETCH_S && sampled > 0 && j.idle.longest_s >= IDLE_STRETCH_SHARE * sampled && j.class !== 'idle') {
    notes.push({
      level: 'info',
      code: 'idle-stretch',
      text:
        `GPU ${short(j.idle.longest_gpu!)} was idle for ${Math.round(j.idle.longest_s / 60)} min at ` +
        `a stretch from ${j.idle.longest_start!.slice(0, 16).replace('T', ' ')} UTC (${Math.round(j.idle.seconds / 60)} ` +
        `GPU-min idle in all): checkpointing, data staging or waiting on other ranks`,
    });
  }
  return notes;
}
