/**
 * Job-end settling: the job-end summary points each node sent for the GPUs
 * of a job (its own figures of each binding), how many of the job's GPUs have
 * sent theirs (coverage), and the PromQL report read again until it agrees
 * with them (settledReport), as the ctld epilog's worker stores it.
 */
import { findMetric, prometheusName } from '../core/metrics/registry.js';
import type { Attributes } from '../core/metrics/model.js';
import type { JobReport } from './report-model.js';
import { GPU_COUNT_ATTRIBUTE } from '../figures/node-summary.js';
import { query, type PromqlOptions, type Series } from './promql-client.js';
import { attributes, byJob, gpuKey, nameOf, namedAs, namesSelector, nodeOf, probeJobs, queryJobs, type Naming } from './promql-series.js';

export { gpuKey };

export type { PromqlOptions } from './promql-client.js';

/** One job-end summary point as the backend keeps it: its metric, the labels as attributes, the last value in the window. */
export interface SummaryPoint {
  name: string;
  attributes: Attributes;
  node: string;
  value: number;
}

/**
 * Every job's job-end summary points of these metrics (gpu.job.*) in the
 * window, for cluster-wide roll-ups (`jobs --waste --source promql`): each
 * series' last value, under the naming whose gpu.job.duration exists (dotted
 * OTLP names tried first).
 */
export async function jobEndSummaries(o: PromqlOptions, names: readonly string[]): Promise<SummaryPoint[]> {
  const sel = (name: string, naming: Naming) =>
    naming === 'otel' ? `{__name__=${JSON.stringify(name)}}` : prometheusName(findMetric(name)!);
  const last = (name: string, naming: Naming) => query(o, `last_over_time(${sel(name, naming)}[${o.window}])`);
  for (const naming of ['otel', 'prometheus'] as Naming[]) {
    let probe: Series[];
    try {
      probe = await last('gpu.job.duration', naming);
    } catch (e) {
      if (naming === 'otel' && /parse|unexpected|bad_data|syntax/i.test((e as Error).message)) continue;
      throw e;
    }
    if (probe.length === 0) continue;
    const out: SummaryPoint[] = [];
    const all = await Promise.all(
      names.map(async (name) => [name, name === 'gpu.job.duration' ? probe : await last(name, naming)] as const),
    );
    for (const [name, list] of all) {
      for (const s of list) {
        const value = Number(s.values.at(-1)?.[1]);
        if (!Number.isFinite(value)) continue;
        const a = attributes(s.metric, naming);
        out.push({ name, attributes: a, node: nodeOf(a), value });
      }
    }
    return out;
  }
  return [];
}

/** A job-end summary as its node sent it: the node's own figures of a binding (per GPU), or of the run's GPUs there (per node). */
export interface JobEnd {
  energyJ: number;
  /** gpu.job.duration: covered seconds times the job's mean share (summed over the node's GPUs, per node). */
  seconds?: number;
  /** Per node (job_labels = info): how many of the node's GPUs the summary folds; absent per GPU. */
  gpus?: number;
}

export interface JobEndCoverage {
  /** GPUs (node and UUID) with samples of the job. */
  gpus: number;
  /** Those of them whose job-end summary (their own, or their node's) has reached the backend. */
  ended: number;
  /** The summaries, by node and UUID (gpuKey), or by node alone (nodeEndKey) for a node's summary. */
  ends: Map<string, JobEnd>;
}

/** The key of a per-node job-end summary in JobEndCoverage.ends. */
export const nodeEndKey = (node: string): string => gpuKey(node, '');

/**
 * How far the nodes have got in closing a job: its GPUs (node and UUID) with
 * samples, and those whose job-end summary (gpu.job.energy, exported once a
 * node's epilog closed the GPU's binding; in info mode once per node, with
 * gpu.count and no GPU) has reached the backend. A backend may show a summary
 * before the samples sent ahead of it (VictoriaMetrics makes fresh samples
 * searchable shard by shard, within seconds): unsettled() tells whether the
 * samples agree with the summaries, settledReport() waits until they do.
 */
export async function jobEndCoverage(o: PromqlOptions, jobId: string): Promise<JobEndCoverage> {
  return (await jobEndCoverages(o, [jobId])).get(jobId)!;
}

/** jobEndCoverage of many jobs in a few queries (three or so for any number): every id has an answer. */
export async function jobEndCoverages(o: PromqlOptions, ids: readonly string[]): Promise<Map<string, JobEndCoverage>> {
  // labels only (each series' last sample): the worker asks every second or so, the samples themselves are not needed
  const last = (sel: string) => `last_over_time(${sel}[${o.window}])`;
  const found = await probeJobs(o, ids, last);
  const out = new Map<string, JobEndCoverage>(ids.map((id) => [id, { gpus: 0, ended: 0, ends: new Map() }]));
  for (const naming of ['otel', 'prometheus'] as Naming[]) {
    const group = namedAs(found, naming);
    if (group.length === 0) continue;
    // a node's summary has gpu.count and no GPU: keyed by the node alone
    const keyOf = (s: Series) => {
      const a = attributes(s.metric, naming);
      return a[GPU_COUNT_ATTRIBUTE] !== undefined ? nodeEndKey(nodeOf(a)) : gpuKey(nodeOf(a), String(a['gpu.uuid']));
    };
    const valueOf = (s: Series) => Number(s.values.at(-1)?.[1]);
    // both job-end metrics in one query: a range (a function would drop the names); a GPU's binding sends them once
    const ended = await queryJobs(o, group, (c) => `${namesSelector(['gpu.job.energy', 'gpu.job.duration'], naming, c)}[${o.window}]`);
    const energy = byJob(ended.filter((s) => nameOf(s, naming) === 'gpu.job.energy'));
    const duration = byJob(ended.filter((s) => nameOf(s, naming) === 'gpu.job.duration'));
    for (const id of group) {
      const shares = found.get(id)!.shares.map((s) => ({ node: nodeOf(attributes(s.metric, naming)), key: keyOf(s) }));
      const gpus = new Map(shares.map((s) => [s.key, s.node]));
      const ends = new Map<string, JobEnd>();
      for (const s of energy.get(id) ?? []) {
        if (!Number.isFinite(valueOf(s))) continue;
        const count = Number(attributes(s.metric, naming)[GPU_COUNT_ATTRIBUTE]);
        ends.set(keyOf(s), { energyJ: valueOf(s), ...(Number.isFinite(count) ? { gpus: count } : {}) });
      }
      for (const s of duration.get(id) ?? []) {
        const e = ends.get(keyOf(s));
        if (e && Number.isFinite(valueOf(s))) e.seconds = valueOf(s);
      }
      const isEnded = ([key, node]: [string, string]) => ends.has(key) || ends.has(nodeEndKey(node));
      out.set(id, { gpus: gpus.size, ended: [...gpus].filter(isEnded).length, ends });
    }
  }
  return out;
}

const near = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

/**
 * The report's GPUs whose figures rebuilt from the backend's samples differ
 * from their node's job-end summary (the node's store, exactly, when the
 * samples arrived as sent, over OTLP): the backend does not show every sample
 * yet, or a scrape resampled the series. A node's summary (info mode) is held
 * to the sum of the report's GPUs on that node. [] when all agree.
 */
export function unsettled(report: JobReport, ends: ReadonlyMap<string, JobEnd>): string[] {
  const off = (e: JobEnd | undefined, gpus: JobReport['gpus']) =>
    e !== undefined &&
    (!near(
      gpus.reduce((s, g) => s + g.figures.energyJ, 0),
      e.energyJ,
    ) ||
      (e.seconds !== undefined &&
        !near(
          gpus.reduce((s, g) => s + g.figures.seconds * g.figures.shareMean, 0),
          e.seconds,
        )));
  const perGpu = report.gpus.filter((g) => off(ends.get(gpuKey(g.node, g.uuid)), [g])).map((g) => `${g.node}/${g.uuid}`);
  const nodes = [...new Set(report.gpus.map((g) => g.node))];
  const perNode = nodes.filter((n) =>
    off(
      ends.get(nodeEndKey(n)),
      report.gpus.filter((g) => g.node === n),
    ),
  );
  return [...perGpu, ...perNode.map((n) => `${n} (its GPUs)`)];
}

export interface SettleOptions {
  /** Reading stops here, whatever the figures. */
  deadline: number;
  /** Figures that disagree yet stay the same this long are the backend's last word. */
  settledAfterMs: number;
  pauseMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<unknown>;
  log?: (msg: string) => void;
}

/**
 * The report once the backend shows every sample the nodes sent: each GPU's
 * figures agree with its job-end summary (unsettled() is empty). A summary can
 * be searchable before the samples sent ahead of it, so an early read may miss
 * a GPU's last samples; `read` is called again until the figures agree, or
 * stay the same for settledAfterMs (a scrape resamples; a sample was lost on
 * the way), or the deadline passes.
 */
export async function settledReport(
  read: () => Promise<JobReport | undefined>,
  ends: ReadonlyMap<string, JobEnd>,
  o: SettleOptions,
): Promise<JobReport | undefined> {
  const now = o.now ?? Date.now;
  const pause = o.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  let seen: { key: string; at: number } | undefined;
  for (;;) {
    const report = await read();
    if (!report) return undefined;
    const off = unsettled(report, ends);
    if (off.length === 0) return report;
    const t = now();
    const key = JSON.stringify(report.gpus.map((g) => g.figures));
    if (seen?.key !== key) seen = { key, at: t };
    const why =
      t >= o.deadline ? 'the wait is over' : t - seen.at >= o.settledAfterMs ? `they stayed so for ${o.settledAfterMs / 1000} s` : '';
    if (why) {
      o.log?.(`the backend's figures of ${off.join(', ')} differ from the node's job-end summary and ${why}: keeping the backend's`);
      return report;
    }
    await pause(o.pauseMs);
  }
}
