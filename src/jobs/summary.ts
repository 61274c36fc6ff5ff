/**
 * A finished job's GPU figures, compact, for its Slurm AdminComment (as
 * jobstats keeps its "JS1:" summaries): "L9G1:" + hex(gzip(JSON)). The
 * slurmctld epilog writes it (slurm/ctld-epilog.ts); `l9gpu jobs show` on any
 * login node reads it back from sacct, for as long as accounting keeps the
 * job, without the node's store or a metrics backend. Hex, not base64:
 * sacctmgr lowercases what it stores (seen with 22.05), and hex reads back
 * whatever its case. Only the GPU figures
 * are kept: the header comes from sacct, the totals and notes are worked out
 * again when read (with the reader's prices and site notes).
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type { CommunicationFigures, GpuRow, JobHeader, JobReport, Prices } from './report-model.js';
import { totalsOf } from './report.js';
import { jobNotes } from './notes.js';
import { communicationNotes } from './communication.js';

export const SUMMARY_PREFIX = 'L9G1:';
/** slurmdbd keeps AdminComment in a MySQL TEXT column (65,535 bytes): room to spare. */
export const MAX_SUMMARY_CHARS = 60_000;
/** Points of the per-minute utilization kept for the plot (a longer job is averaged down to these). */
const MAX_SERIES = 120;

export interface JobSummary {
  v: 1;
  /** When the summary was made, ISO. */
  made: string;
  gpus: GpuRow[];
  communication: CommunicationFigures | null;
  series: [number, number][];
}

/** The per-minute series averaged down to at most n points. */
function shrink(series: readonly [number, number][], n: number): [number, number][] {
  if (series.length <= n) return [...series];
  const per = Math.ceil(series.length / n);
  const out: [number, number][] = [];
  for (let i = 0; i < series.length; i += per) {
    const part = series.slice(i, i + per);
    out.push([part[0]![0], Math.round((part.reduce((s, [, v]) => s + v, 0) / part.length) * 1e4) / 1e4]);
  }
  return out;
}

const pack = (s: JobSummary) => SUMMARY_PREFIX + gzipSync(JSON.stringify(s), { level: 9 }).toString('hex');

/** The AdminComment text of a report; the series, then the communication detail, give way to stay under the column's size. */
export function encodeSummary(r: JobReport, now = Date.now()): string {
  const s: JobSummary = { v: 1, made: new Date(now).toISOString(), gpus: r.gpus, communication: r.communication, series: shrink(r.series, MAX_SERIES) };
  let text = pack(s);
  if (text.length > MAX_SUMMARY_CHARS) text = pack({ ...s, series: [] });
  if (text.length > MAX_SUMMARY_CHARS) text = pack({ ...s, series: [], communication: null });
  if (text.length > MAX_SUMMARY_CHARS) throw new Error(`the summary of ${r.gpus.length} GPUs takes ${text.length} characters, more than AdminComment holds (${MAX_SUMMARY_CHARS})`);
  return text;
}

export const isSummary = (comment: string): boolean => comment.slice(0, SUMMARY_PREFIX.length).toUpperCase() === SUMMARY_PREFIX;

/** The summary in an AdminComment; undefined when the comment is not one; an Error naming what is wrong when it is one but damaged. */
export function decodeSummary(comment: string, where: string): JobSummary | undefined {
  if (!isSummary(comment)) return undefined;
  let s: JobSummary;
  try {
    s = JSON.parse(gunzipSync(hexBytes(comment.slice(SUMMARY_PREFIX.length).trim())).toString('utf8')) as JobSummary;
  } catch (e) {
    throw new Error(`${where}: the l9gpu summary in AdminComment is damaged (${(e as Error).message})`);
  }
  if (!s || s.v !== 1 || !Array.isArray(s.gpus) || !Array.isArray(s.series)) throw new Error(`${where}: the AdminComment summary is not version 1 of l9gpu's (a newer l9gpu wrote it?)`);
  return s;
}

function hexBytes(text: string): Buffer {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) throw new Error('not hexadecimal');
  return Buffer.from(text, 'hex');
}

/** A report from a summary and the job's header (from sacct). */
export function reportFromSummary(s: JobSummary, header: JobHeader, prices: Prices | null): JobReport {
  // the GPU rows name their nodes as the metrics did (host names): the header's list is the same names
  const job = s.gpus.length ? { ...header, nodes: [...new Set(s.gpus.map((g) => g.node))] } : header;
  const totals = totalsOf(s.gpus, prices, job.partition);
  return {
    source: 'sacct', job, gpus: s.gpus, totals, inference: null, communication: s.communication, series: s.series,
    notes: [...jobNotes(job, s.gpus, totals), ...communicationNotes(s.communication)],
  };
}
