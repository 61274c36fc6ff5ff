/**
 * The per-job report `l9gpu jobs show` prints, whatever the source (this
 * node's store, or a PromQL backend for a multi-node job): a header, one row
 * per GPU with the rollup figures, totals, a utilization series and notes.
 */
import type { Attributes } from '../core/metrics/model.js';
import type { Db } from '../store/open.js';
import { engineRows } from '../store/counted.js';
import { gpuModelLookup } from '../store/gpus.js';
import { runsOfArrayTask, runsOfJob } from '../store/jobs.js';
import { gpusOfRun, utilizationSeries } from '../store/rollups.js';
import { emptyRollup, figures, loadRollup } from '../figures/rollup.js';
import { figureNotes } from './notes.js';
import type { GpuRow, InferenceFigures, JobHeader, JobReport, Totals } from './report-model.js';
import { addBuckets, type Buckets } from '../figures/buckets.js';
import { quantileOf } from '../scrape/histogram-window.js';
import { commRowsFromStore, communicationOf } from './communication.js';
import { costPerMillionTokens, jobCost, type Prices } from '../figures/prices.js';
import { jobElapsedS } from './elapsed.js';
import { bootId, monoNow } from '../core/clock.js';
import type { RunIdentityRow } from '../core/run-identity.js';

/** Array tasks print as ARRAYID_TASKID, like squeue and sacct. */
export function displayId(jobId: string, arrayJobId: string | null, arrayTaskId: string | null): string {
  return arrayJobId && arrayTaskId !== null ? `${arrayJobId}_${arrayTaskId}` : jobId;
}

/** partition: the job's, for its price ([jobs] partition_gpu_hour_prices). */
export function totalsOf(gpus: readonly GpuRow[], prices: Prices | null, partition: string | null = null): Totals {
  let covered = 0;
  let utilWeighted = 0;
  let gpuHours = 0;
  let energy = 0;
  let energyKnown = false;
  let memPeak: number | null = null;
  for (const g of gpus) {
    const f = g.figures;
    gpuHours += f.gpuHours;
    energy += f.energyJ;
    if (f.energySource !== 'none') energyKnown = true;
    if (f.utilMean !== null) {
      utilWeighted += f.utilMean * f.seconds;
      covered += f.seconds;
    }
    if (f.memUsedMax !== null) memPeak = memPeak === null ? f.memUsedMax : Math.max(memPeak, f.memUsedMax);
  }
  const kwh = energy / 3.6e6;
  const { cost, co2eG } = jobCost(prices, gpus, partition);
  const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
  return {
    gpus: gpus.length,
    gpu_hours: r6(gpuHours),
    util_mean: covered > 0 ? r6(utilWeighted / covered) : null,
    mem_peak_bytes: memPeak,
    energy_j: energyKnown ? Math.round(energy * 1000) / 1000 : null,
    energy_kwh: energyKnown ? r6(kwh) : null,
    cost,
    currency: cost !== null ? prices!.currency : null,
    co2e_g: co2eG,
  };
}

/** A row of the jobs table: the run identity's columns, and the run's end and provider. */
interface JobRow extends Omit<RunIdentityRow, 'het_job_id' | 'het_job_offset'> {
  state: string | null;
  exit_code: number | null;
  scheduler?: string | null;
  attrs?: string | null;
  start_mono?: number | null;
  end_mono?: number | null;
  boot_id?: string | null;
}

export function jobState(row: { end_time: number | null; state: string | null }): string {
  return row.end_time === null ? 'RUNNING' : (row.state ?? 'ENDED');
}

/** Finds a job by raw id ("123") or array form ("122_4"): its latest run. */
export function findJob(db: Db, id: string): { row: JobRow; runs: number } | undefined {
  const m = /^(\d+)_(\d+)$/.exec(id);
  const rows = (m ? runsOfArrayTask(db, m[1]!, m[2]!) : runsOfJob(db, id)) as JobRow[];
  return rows[0] ? { row: rows[0], runs: rows.length } : undefined;
}

export function headerOf(row: JobRow, runs: number, nodes: string[], now: number = Date.now()): JobHeader {
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  return {
    id: displayId(row.job_id, row.array_job_id, row.array_task_id),
    job_id: row.job_id,
    run: row.run_key,
    user: row.user,
    uid: row.uid,
    account: row.account,
    partition: row.partition,
    qos: row.qos,
    name: row.name,
    cluster: row.cluster,
    state: jobState(row),
    start: iso(row.start_time),
    end: iso(row.end_time),
    elapsed_s: jobElapsedS(row, { wall: now, mono: monoNow(), boot: bootId() }),
    exit_code: row.exit_code,
    nodes,
    earlier_runs: runs - 1,
    cpus: null,
    mem_req_bytes: null,
    mem_max_rss_bytes: null,
    time_limit_s: null,
    time_efficiency: null,
    gpus_alloc: null,
    exit_signal: null,
    ...(row.scheduler && row.scheduler !== 'slurm'
      ? { scheduler: row.scheduler, attrs: row.attrs ? (JSON.parse(row.attrs) as Record<string, string>) : null }
      : {}),
  };
}

/** The report of a job from this node's store. */
export function reportFromStore(db: Db, row: JobRow, runs: number, node: string, prices: Prices | null): JobReport {
  const rows = gpusOfRun(db, row.job_id, row.run_key);
  const inv = gpuModelLookup(db);
  const gpus: GpuRow[] = rows.map((r) => {
    const identity = r.identity ? (JSON.parse(r.identity) as Attributes) : {};
    const known = inv(r.uuid);
    const f = r.state ? figures(loadRollup(r.state)) : figures(emptyRollup());
    return {
      node,
      uuid: r.uuid,
      model: r.model ?? known?.model ?? null,
      index: typeof identity['gpu.index'] === 'number' ? identity['gpu.index'] : (known?.idx ?? null),
      shared: !!r.shared || f.shareMean < 1,
      figures: f,
    };
  });
  const series = utilizationSeries(db, row.job_id, row.run_key);
  const job = headerOf(row, runs, [node]);
  const totals = totalsOf(gpus, prices, row.partition);
  const inference = inferenceOf(db, row.job_id, row.run_key, totals.energy_j ?? 0, totals.cost);
  const communication = communicationOf(commRowsFromStore(db, row.job_id, row.run_key, node), null);
  return {
    source: 'store',
    job,
    gpus,
    totals,
    inference,
    communication,
    series: series.map((s) => [s.minute * 60_000, Math.round(s.util * 1e4) / 1e4]),
    notes: figureNotes(job, gpus, totals, communication),
  };
}

/** The inference figures of a job run from its engines' rows (src/ledger/engine-rollup.ts), or null when it ran none. */
export function inferenceOf(db: Db, jobId: string, runKey: string, energyJ: number, cost: number | null = null): InferenceFigures | null {
  const rows = engineRows(db, jobId, runKey);
  if (rows.length === 0) return null;
  let ttft: Buckets | undefined;
  let itl: Buckets | undefined;
  let requests = 0;
  // null: no engine of the job counts tokens (Triton)
  let prompt: number | null = null;
  let generated: number | null = null;
  for (const r of rows) {
    requests += r.requests;
    if (r.prompt_tokens !== null) prompt = (prompt ?? 0) + r.prompt_tokens;
    if (r.generation_tokens !== null) generated = (generated ?? 0) + r.generation_tokens;
    if (r.ttft) ttft = addBuckets(ttft, JSON.parse(r.ttft) as Buckets);
    if (r.itl) itl = addBuckets(itl, JSON.parse(r.itl) as Buckets);
  }
  const servingS = (Math.max(...rows.map((r) => r.last_time)) - Math.min(...rows.map((r) => r.first_time))) / 1000;
  const q = (b: Buckets | undefined, p: number) => {
    const v = b ? quantileOf(p, b.bounds, b.counts) : undefined;
    return v === undefined ? null : Math.round(v * 1e6) / 1e6;
  };
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    engines: rows.map((r) => ({ engine: r.engine, endpoint: r.endpoint, model: r.model || null })),
    requests,
    prompt_tokens: prompt,
    generation_tokens: generated,
    ttft_p50_s: q(ttft, 0.5),
    ttft_p95_s: q(ttft, 0.95),
    itl_p50_s: q(itl, 0.5),
    itl_p95_s: q(itl, 0.95),
    serving_s: r3(servingS),
    tokens_per_s: servingS > 0 && generated !== null ? r3(generated / servingS) : null,
    tokens_per_j: energyJ > 0 && generated !== null ? Math.round((generated / energyJ) * 1e6) / 1e6 : null,
    cost_per_million_tokens: costPerMillionTokens(cost, generated),
  };
}
