/**
 * How `l9gpu jobs show` assembles a report, whatever finds it: each source
 * (this node's store, the summary in Slurm accounting's AdminComment, a
 * PromQL backend) answers a report or a miss with its reason; `auto` asks
 * them in turn; one finishReport lays the reader's settings over the raw
 * report. The sources that need the CLI's context (the daemon's socket,
 * sacct) are bound in src/cli/job-sources.ts; this file knows no CLI.
 */
import type { Config } from '../core/config/load.js';
import type { Viewer } from './access.js';
import type { SacctJob } from './accounting.js';
import { accessError } from './api.js';
import { peakFor, withPeak } from './communication.js';
import { reportFromPromql, type PromqlOptions } from './promql.js';
import { pricesFrom } from './prices.js';
import type { Prices } from '../figures/prices.js';
import type { JobReport } from './report-model.js';
import { headerFromSacct, withSacct } from './slurm-header.js';
import { slurmNotes } from './slurm-notes.js';
import { siteNotesFrom, type SiteNote } from './site-notes.js';
import { decodeSummary, reportFromSummary } from './summary.js';
import { efficiencyNotes, efficiencyOf, efficiencyThresholds, type EfficiencyThresholds } from './efficiency.js';
import { tooShortToJudge } from './notes.js';

export type SourceName = 'store' | 'sacct' | 'promql';

/** What the reader's configuration puts on every report: read once per command. */
export interface ReportSettings {
  prices: Prices;
  /** The fabric's peak bus bandwidth for a partition (B/s), null: not configured. */
  peak: (partition: string | null) => number | null;
  /** [jobs] site_notes, read when a report is there to note (a job not found is said first, and the file is never opened). */
  siteNotes: () => readonly SiteNote[];
  /** [jobs] efficiency_* thresholds of the Efficiency section. */
  efficiency: EfficiencyThresholds;
}

export function reportSettings(cfg: Config): ReportSettings {
  let site: SiteNote[] | undefined;
  return {
    prices: pricesFrom(cfg),
    peak: (partition) => peakFor(cfg, partition),
    siteNotes: () => (site ??= siteNotesFrom(cfg)),
    efficiency: efficiencyThresholds(cfg),
  };
}

/**
 * Why a source has no report of the job: `why` is its part of auto's answer,
 * `alone` the error when it was the one source asked (when it says more).
 * A source throws only what ends the search: the asker may not see the job,
 * a bug.
 */
export interface Miss {
  why: string;
  alone?: string;
}

export type Found = { report: JobReport } | { miss: Miss };

export interface JobSource {
  readonly name: SourceName;
  find(jobId: string, settings: ReportSettings): Promise<Found>;
}

/**
 * The job's accounting record, asked once per command whoever asks first (the
 * summary source, then the header): undefined where there is no sacct or no
 * such job; a present sacct's error as one line.
 */
export function accountingOnce(ask: () => Promise<SacctJob | undefined>): () => Promise<SacctJob | undefined> {
  let asked: Promise<SacctJob | undefined> | undefined;
  return () =>
    (asked ??= ask().catch((e: unknown) => {
      // sacct's own message may run over lines: the CLI's error is one
      throw new Error((e as Error).message.replace(/\s+/g, ' ').trim());
    }));
}

/** The summary the slurmctld epilog left in the job's AdminComment (src/jobs/summary.ts). */
export function summarySource(accounting: () => Promise<SacctJob | undefined>, cluster: string | null): JobSource {
  return {
    name: 'sacct',
    async find(jobId, settings) {
      let acct: SacctJob | undefined;
      try {
        acct = await accounting();
      } catch (e) {
        return { miss: { why: `sacct: ${(e as Error).message}`, alone: (e as Error).message } };
      }
      if (!acct)
        return {
          miss: {
            why: 'Slurm accounting does not know it (or there is no sacct here)',
            alone: `Slurm accounting has no job ${jobId}${cluster ? ` on cluster ${cluster}` : ''}`,
          },
        };
      let s: ReturnType<typeof decodeSummary>;
      try {
        s = decodeSummary(acct.adminComment, `job ${acct.jobId}`);
      } catch (e) {
        // accounting's record, not this program, is what is wrong: a miss (a backend may still have the job)
        return { miss: { why: (e as Error).message } };
      }
      if (!s) {
        return {
          miss: {
            why: 'Slurm accounting has the job but no l9gpu summary in its AdminComment',
            alone:
              `job ${jobId} has no l9gpu summary in its AdminComment (is EpilogSlurmctld set to l9gpu's ` +
              `ctld-epilog, with [jobs] promql_url?)`,
          },
        };
      }
      return { report: reportFromSummary(s, headerFromSacct(acct), settings.prices) };
    },
  };
}

/** Every node's exported series of the job, through a PromQL API. */
export function promqlSource(o: PromqlOptions): JobSource {
  return {
    name: 'promql',
    async find(jobId, settings) {
      let report: JobReport | undefined;
      try {
        report = await reportFromPromql(o, jobId, settings.prices);
      } catch (e) {
        // the endpoint's doing (down, refusing, an answer too large): one line, not a stack
        return { miss: { why: (e as Error).message } };
      }
      if (!report)
        return {
          miss: {
            why:
              `no GPU metrics of job ${jobId} at ${o.url} in the last ${o.window} (are the daemons ` +
              `exporting there with slurm attribution?)`,
          },
        };
      return { report };
    },
  };
}

/** The first source's report, or every source's miss (in the order asked). */
export async function firstReport(
  jobId: string,
  sources: readonly JobSource[],
  settings: ReportSettings,
): Promise<{ report: JobReport } | { misses: Miss[] }> {
  const misses: Miss[] = [];
  for (const s of sources) {
    const found = await s.find(jobId, settings);
    if ('report' in found) return found;
    misses.push(found.miss);
  }
  return { misses };
}

/**
 * The reader's report from a source's: Slurm accounting has the last word on
 * the header (state, exit code, QOS, CPU cores, memory, time limit; a report
 * from the summary has its header from accounting already), then the access
 * rule on that header (this node's store answered under its own), then the
 * fabric's peak with its communication notes, the Efficiency section (the
 * GPUs' own counters, with the reader's thresholds) and its notes, the Slurm
 * and the site notes.
 * The figures' own notes (figureNotes, src/jobs/notes.ts) come with the raw
 * report: the daemon's socket answers a report with them.
 */
export function finishReport(
  raw: JobReport,
  accounting: SacctJob | undefined,
  settings: ReportSettings,
  who: Viewer,
): { report: JobReport } | { denied: string } {
  let report = accounting && raw.source !== 'sacct' ? { ...raw, job: withSacct(raw.job, accounting) } : raw;
  const denied = report.source === 'store' ? undefined : accessError(report, who);
  if (denied) return { denied };
  report = withPeak(report, settings.peak(report.job.partition));
  const efficiency = efficiencyOf(report.gpus, settings.efficiency);
  const notes = [
    ...report.notes,
    ...efficiencyNotes(efficiency, report.gpus, tooShortToJudge(report.gpus), settings.efficiency),
    ...slurmNotes(report.job, report.gpus, report.totals, settings.siteNotes()),
  ];
  return { report: { ...report, efficiency, notes } };
}
