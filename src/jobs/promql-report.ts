/**
 * A job report from the metrics the daemons exported, through the PromQL
 * HTTP API that Prometheus, VictoriaMetrics, Mimir and Last9 share. The raw
 * samples of the job's series are fetched (an instant query of a range
 * vector returns every stored sample) and folded per node and GPU with the
 * same step() the daemon uses, so a single-node job gets the same figures as
 * the node's store.
 *
 * Both of [attribution] job_labels: with points, the job's series are those
 * labelled with its id; with info, a GPU's series carry no job and the job's
 * gpu.job.share series (one per GPU it held, the same in both modes) says
 * which GPUs and when: each of those GPUs' series is fetched by node and UUID
 * and only its samples at the share's timestamps are kept. The share goes out
 * in the batch of the GPU's points, with their timestamp (an OTLP point's
 * time is its batch's; a scrape stamps the whole page at once), so those are
 * exactly the samples points mode labels with the job, and the figures are
 * the same.
 *
 * Names: OTLP into VictoriaMetrics keeps dotted names and labels
 * (`gpu.utilization{"slurm.job.id"="42"}`); a Prometheus scrape of the pull
 * endpoint sanitizes them (`gpu_utilization{slurm_job_id="42"}`, counters
 * with _total). Both are tried.
 */
import type { Attributes } from '../core/metrics/model.js';
import { emptyRollup, figures, step, type GpuRollup, type GpuSample } from '../figures/rollup.js';
import { addToSample } from '../figures/samples.js';
import { headerOf, totalsOf } from './report.js';
import type { Prices } from '../figures/prices.js';
import type { GpuRow, JobReport } from './report-model.js';
import { figureNotes } from './notes.js';
import { collectionInterval, gapCapMs, median } from '../figures/gap-cap.js';
import { communicationOf, type CommRow } from './communication.js';
import { byText } from '../core/text-table.js';
import { type PromqlOptions } from './promql-client.js';
import { attributes, commRows, fetchJobs, gpuKey, namedAs, nodeOf, type Fetched, type Naming } from './promql-series.js';

export type { PromqlOptions } from './promql-client.js';

export async function reportFromPromql(
  o: PromqlOptions,
  jobId: string,
  prices: Prices | null,
  now = Date.now(),
): Promise<JobReport | undefined> {
  return (await reportsFromPromql(o, [jobId], prices, now)).get(jobId);
}

/**
 * reportFromPromql for many jobs in the queries of about one (the slurmctld
 * epilog's worker, a backlog of ended jobs): each job's report, undefined
 * for a job the backend has no series of.
 */
export async function reportsFromPromql(
  o: PromqlOptions,
  ids: readonly string[],
  prices: Prices | null,
  now = Date.now(),
): Promise<Map<string, JobReport | undefined>> {
  const fetched = await fetchJobs(o, ids);
  const comm = new Map<string, CommRow[]>();
  for (const naming of ['otel', 'prometheus'] as Naming[]) {
    const group = namedAs(fetched, naming);
    if (group.length) for (const [id, rows] of await commRows(o, naming, group)) comm.set(id, rows);
  }
  const out = new Map<string, JobReport | undefined>();
  for (const id of ids) {
    const got = fetched.get(id);
    out.set(id, got ? foldReport(got, id, comm.get(id) ?? [], prices, now) : undefined);
  }
  return out;
}

/**
 * A sum that does not depend on the order the backend returned the series in
 * (VictoriaMetrics answers them in no fixed order, and float addition is not
 * associative): the same values always give the same last digit.
 */
function sumInOrder(values: number[]): number {
  return [...values].sort((a, b) => a - b).reduce((x, y) => x + y, 0);
}

/** A job's report from its fetched series and NCCL rows. */
function foldReport(got: Fetched, jobId: string, comm: CommRow[], prices: Prices | null, now: number): JobReport {
  // (node, gpu) -> time -> sample
  const gpus = new Map<string, { node: string; uuid: string; identity: Attributes; samples: Map<number, GpuSample> }>();
  let labels: Attributes = {};
  for (const [name, list] of got.series) {
    for (const s of list) {
      const a = attributes(s.metric, got.naming);
      const uuid = a['gpu.uuid'];
      if (typeof uuid !== 'string') continue;
      const node = nodeOf(a);
      const k = gpuKey(node, uuid);
      let g = gpus.get(k);
      if (!g) gpus.set(k, (g = { node, uuid, identity: a, samples: new Map() }));
      // the share carries every attribute of the job in both modes (omit_from_points leaves some off the rest)
      if (name === 'gpu.job.share') labels = a;
      for (const [ts, v] of s.values) {
        const t = Math.round(ts * 1000);
        let smp = g.samples.get(t);
        if (!smp) g.samples.set(t, (smp = { t }));
        if (name === 'gpu.job.share') smp.share = Number(v);
        else addToSample(smp, { name, value: Number(v), attributes: a });
      }
    }
  }
  const rows: GpuRow[] = [];
  const perMinute = new Map<number, number[]>();
  let first = Infinity;
  let last = 0;
  for (const g of gpus.values()) {
    const samples = [...g.samples.values()].sort((a, b) => a.t - b.t);
    const cap = gapCapMs(collectionInterval(samples.map((s) => s.t)));
    const r: GpuRollup = emptyRollup();
    for (const s of samples) {
      step(r, s, cap);
      if (s.util !== undefined) {
        const m = Math.floor(s.t / 60_000) * 60_000;
        if (!perMinute.has(m)) perMinute.set(m, []);
        perMinute.get(m)!.push(s.util);
      }
    }
    if (r.samples === 0) continue;
    first = Math.min(first, r.firstTs);
    last = Math.max(last, r.lastTs);
    const f = figures(r);
    rows.push({
      node: g.node,
      uuid: g.uuid,
      model: (g.identity['gpu.model'] as string) ?? null,
      index: typeof g.identity['gpu.index'] === 'number' ? g.identity['gpu.index'] : null,
      shared: f.shareMean < 1,
      figures: f,
    });
  }
  rows.sort((a, b) => byText(a.node, b.node) || (a.index ?? 0) - (b.index ?? 0) || byText(a.uuid, b.uuid));
  const str = (k: string) => (typeof labels[k] === 'string' ? (labels[k] as string) : null);
  const interval = median(rows.map((g) => (g.figures.samples > 1 ? (g.figures.seconds * 1000) / (g.figures.samples - 1) : 0)));
  const running = now - last < 3 * Math.max(interval, 10_000);
  const job = headerOf(
    {
      job_id: jobId,
      run_key: '',
      user: str('slurm.user'),
      uid: null,
      account: str('slurm.account'),
      partition: str('slurm.partition'),
      qos: null,
      name: str('slurm.job.name'),
      cluster: str('slurm.cluster.name'),
      array_job_id: str('slurm.array.job.id'),
      array_task_id: str('slurm.array.task.id'),
      start_time: first,
      end_time: running ? null : last,
      state: running ? null : 'ENDED',
      exit_code: null,
    },
    1,
    [...new Set(rows.map((r) => r.node))],
    now,
  );
  const totals = totalsOf(rows, prices, job.partition);
  const series = [...perMinute.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([m, v]) => [m, Math.round((sumInOrder(v) / v.length) * 1e4) / 1e4] as [number, number]);
  const communication = communicationOf(comm, null);
  return {
    source: 'promql',
    job,
    gpus: rows,
    totals,
    inference: null,
    communication,
    series,
    notes: figureNotes(job, rows, totals, communication),
  };
}
