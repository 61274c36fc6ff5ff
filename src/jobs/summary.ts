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
import type zlib from 'node:zlib';
import { requireBuiltin } from '../core/builtin.js';
import type { Prices } from '../figures/prices.js';
import type { CommunicationFigures, GpuRow, JobHeader, JobReport } from './report-model.js';
import { NO_IDLE, type GpmFigures, type GpuFigures, type IdleFigures } from '../figures/rollup.js';
import { totalsOf } from './report.js';
import { figureNotes } from './notes.js';

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

/** node:zlib at the first summary written or read: every light command evaluates this module, few use it. */
const zip = (): typeof zlib => requireBuiltin('node:zlib') as typeof zlib;
const pack = (s: JobSummary) => SUMMARY_PREFIX + zip().gzipSync(JSON.stringify(s), { level: 9 }).toString('hex');

/** The AdminComment text of a report; the series, then the communication detail, give way to stay under the column's size. */
export function encodeSummary(r: JobReport, now = Date.now()): string {
  const s: JobSummary = {
    v: 1,
    made: new Date(now).toISOString(),
    gpus: r.gpus,
    communication: r.communication,
    series: shrink(r.series, MAX_SERIES),
  };
  let text = pack(s);
  if (text.length > MAX_SUMMARY_CHARS) text = pack({ ...s, series: [] });
  if (text.length > MAX_SUMMARY_CHARS) text = pack({ ...s, series: [], communication: null });
  if (text.length > MAX_SUMMARY_CHARS)
    throw new Error(
      `the summary of ${r.gpus.length} GPUs takes ${text.length} characters, more than AdminComment holds (${MAX_SUMMARY_CHARS})`,
    );
  return text;
}

export const isSummary = (comment: string): boolean => comment.slice(0, SUMMARY_PREFIX.length).toUpperCase() === SUMMARY_PREFIX;

/** What a summary's JSON may unpack to: far more than 60,000 hex characters of a real one give, far less than a gzip bomb would. */
const MAX_JSON_BYTES = 8 << 20;

/** The summary in an AdminComment; undefined when the comment is not one; an Error naming what is wrong when it is one but damaged. */
export function decodeSummary(comment: string, where: string): JobSummary | undefined {
  if (!isSummary(comment)) return undefined;
  const damaged = (why: string) => new Error(`${where}: the l9gpu summary in AdminComment is damaged (${why})`);
  let s: JobSummary;
  try {
    s = JSON.parse(
      zip()
        .gunzipSync(hexBytes(comment.slice(SUMMARY_PREFIX.length).trim()), { maxOutputLength: MAX_JSON_BYTES })
        .toString('utf8'),
    ) as JobSummary;
  } catch (e) {
    throw damaged((e as Error).message);
  }
  if (!s || typeof s !== 'object' || s.v !== 1)
    throw new Error(`${where}: the AdminComment summary is not version 1 of l9gpu's (a newer l9gpu wrote it?)`);
  // what the report reads of it, checked here: a field of the wrong kind is this one line, not a TypeError deep in the report
  const why = summaryProblem(s);
  if (why) throw damaged(why);
  for (const g of s.gpus) g.figures = { ...g.figures, gpm: g.figures.gpm ?? null, idle: g.figures.idle ?? NO_IDLE };
  return s;
}

type Kind = 'number' | 'number?' | 'string' | 'string?' | 'boolean' | 'counts';
type Collective = CommunicationFigures['collectives'][number];
type SlowRank = CommunicationFigures['slowest_ranks'][number];

// every field of each shape (a field added to the type and not here does not compile)
const GPU_ROW: Record<Exclude<keyof GpuRow, 'figures'>, Kind> = {
  node: 'string',
  uuid: 'string',
  model: 'string?',
  index: 'number?',
  shared: 'boolean',
};
const FIGURES: Record<Exclude<keyof GpuFigures, 'gpm' | 'idle'>, Kind> = {
  samples: 'number',
  seconds: 'number',
  gpuHours: 'number',
  utilMean: 'number?',
  utilMax: 'number?',
  memUtilMean: 'number?',
  memUsedMax: 'number?',
  memTotal: 'number?',
  energyJ: 'number',
  energySource: 'string',
  powerMean: 'number?',
  powerMax: 'number?',
  tempMax: 'number?',
  throttledS: 'counts',
  xid: 'counts',
  eccCorrected: 'number',
  eccUncorrected: 'number',
  shareMean: 'number',
};
// a summary written before the GPM figures has neither: its GPUs read as without GPM, idleness not judged
const GPM: Record<keyof GpmFigures, Kind> = {
  seconds: 'number',
  smActive: 'number?',
  smOccupancy: 'number?',
  tensorActive: 'number?',
  dramActive: 'number?',
  fp64Active: 'number?',
  fp32Active: 'number?',
  fp16Active: 'number?',
  nvlinkBytes: 'number?',
  pcieBytes: 'number?',
};
const IDLE: Record<keyof IdleFigures, Kind> = { basis: 'string', seconds: 'number', longestS: 'number', longestFrom: 'number?' };
const COLLECTIVE: Record<keyof Collective, Kind> = {
  comm: 'string',
  comm_name: 'string?',
  collective: 'string',
  size: 'string',
  ranks: 'number',
  nodes: 'number',
  ranks_seen: 'number',
  operations: 'number',
  time_s: 'number',
  share: 'number',
  alg_bw_Bps: 'number?',
  bus_bw_Bps: 'number?',
  of_peak: 'number?',
};
const SLOW_RANK: Record<keyof SlowRank, Kind> = {
  comm: 'string',
  comm_name: 'string?',
  rank: 'number',
  node: 'string',
  slowdown: 'number',
  straggler: 'boolean',
};
const COMMUNICATION: Record<Exclude<keyof CommunicationFigures, 'collectives' | 'slowest_ranks'>, Kind> = {
  time_s: 'number',
  peak_bus_bw_Bps: 'number?',
};

const isNumber = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);
const IS: Record<Kind, (v: unknown) => boolean> = {
  number: isNumber,
  'number?': (v) => v === null || isNumber(v),
  string: (v) => typeof v === 'string',
  'string?': (v) => v === null || typeof v === 'string',
  boolean: (v) => typeof v === 'boolean',
  counts: (v) => !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every(isNumber),
};
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The first field of o that is not of its kind, by its path; undefined when every one is. */
function fieldProblem(o: unknown, kinds: Record<string, Kind>, path: string): string | undefined {
  if (!isObject(o)) return `${path} is not an object`;
  for (const [k, kind] of Object.entries(kinds))
    if (!IS[kind](o[k]))
      return `${path}.${k} is not ${
        kind === 'counts' ? 'a map of numbers' : kind.endsWith('?') ? `a ${kind.slice(0, -1)} or ` + `null` : `a ${kind}`
      }`;
  return undefined;
}

function listProblem(v: unknown, path: string, each: (x: unknown, at: string) => string | undefined): string | undefined {
  if (!Array.isArray(v)) return `${path} is not a list`;
  for (let i = 0; i < v.length; i++) {
    const p = each(v[i], `${path}[${i}]`);
    if (p) return p;
  }
  return undefined;
}

function figuresProblem(f: GpuFigures, at: string): string | undefined {
  return (
    fieldProblem(f, FIGURES, at) ??
    (f.gpm === undefined || f.gpm === null ? undefined : fieldProblem(f.gpm, GPM, `${at}.gpm`)) ??
    (f.idle === undefined ? undefined : fieldProblem(f.idle, IDLE, `${at}.idle`))
  );
}

function summaryProblem(s: JobSummary): string | undefined {
  return (
    (typeof s.made === 'string' ? undefined : 'made is not a string') ??
    listProblem(s.gpus, 'gpus', (g, at) => fieldProblem(g, GPU_ROW, at) ?? figuresProblem((g as GpuRow).figures, `${at}.figures`)) ??
    listProblem(s.series, 'series', (p, at) =>
      Array.isArray(p) && p.length === 2 && p.every(isNumber) ? undefined : `${at} is not a [time, utilization] pair`,
    ) ??
    (s.communication === null
      ? undefined
      : (fieldProblem(s.communication, COMMUNICATION, 'communication') ??
        listProblem(s.communication.collectives, 'communication.collectives', (c, at) => fieldProblem(c, COLLECTIVE, at)) ??
        listProblem(s.communication.slowest_ranks, 'communication.slowest_ranks', (c, at) => fieldProblem(c, SLOW_RANK, at))))
  );
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
    source: 'sacct',
    job,
    gpus: s.gpus,
    totals,
    inference: null,
    communication: s.communication,
    series: s.series,
    notes: figureNotes(job, s.gpus, totals, s.communication),
  };
}
