/**
 * A job report as `jobs show --json` prints it: every key snake_case (the
 * casing of every --json, docs/jobs.md). The report's GPU figures are the
 * rollup fold's (src/figures/rollup.ts), camelCase in the model, the store and
 * the AdminComment summary; they are renamed here, once, at the output
 * boundary. Their maps (throttled_s by reason, xid by code) keep their keys.
 */
import type { GpmFigures, GpuFigures, IdleFigures } from '../figures/rollup.js';
import { snakeKeys, type SnakeKeys } from '../core/snake-case.js';
import type { GpuRow, JobReport } from './report-model.js';

export type GpuFiguresJson = SnakeKeys<Omit<GpuFigures, 'gpm' | 'idle'>> & {
  gpm: SnakeKeys<GpmFigures> | null;
  idle: SnakeKeys<IdleFigures>;
};

export type GpuRowJson = Omit<GpuRow, 'figures'> & { figures: GpuFiguresJson };

export type JobReportJson = Omit<JobReport, 'gpus'> & { gpus: GpuRowJson[] };

export function figuresJson(f: GpuFigures): GpuFiguresJson {
  const { gpm, idle, ...flat } = f;
  return { ...snakeKeys(flat), gpm: gpm === null ? null : snakeKeys(gpm), idle: snakeKeys(idle) };
}

/** The report with its GPU figures in snake_case; the rest of the report is snake_case already. */
export function reportJson(r: JobReport): JobReportJson {
  return { ...r, gpus: r.gpus.map((g) => ({ ...g, figures: figuresJson(g.figures) })) };
}
