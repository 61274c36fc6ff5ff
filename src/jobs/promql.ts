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
import { printable } from '../core/printable.js';
import { ATTRIBUTION_ATTRIBUTES, METRICS, SCOPE_ATTRIBUTES, findMetric, prometheusName } from '../core/metrics/registry.js';
import type { Attributes } from '../core/metrics/model.js';
import { emptyRollup, figures, step, type GpuRollup, type GpuSample } from '../figures/rollup.js';
import { addToSample } from '../figures/samples.js';
import { headerOf, totalsOf } from './report.js';
import type { Prices } from '../figures/prices.js';
import type { GpuRow, JobReport } from './report-model.js';
import { figureNotes } from './notes.js';
import { communicationOf, type CommRow } from './communication.js';
import { byText } from '../core/text-table.js';
import { query, type PromqlOptions, type Series } from './promql-client.js';

export type { PromqlOptions } from './promql-client.js';

const USED = [
  'gpu.utilization',
  'gpu.memory.utilization',
  'gpu.memory.used',
  'gpu.memory.total',
  'gpu.power.draw',
  'gpu.energy.consumption',
  'gpu.temperature',
  'gpu.throttle.active',
  'gpu.xid.errors',
  'gpu.ecc.errors',
  'gpu.job.share',
  // the GPM figures of the efficiency section (src/figures/samples.ts)
  'gpu.sm.active',
  'gpu.sm.occupancy',
  'gpu.tensor.active',
  'gpu.dram.active',
  'gpu.pipe.active',
  'gpu.nvlink.throughput',
  'gpu.pcie.throughput',
];
type Naming = 'otel' | 'prometheus';

/** Every attribute key l9gpu emits, by its Prometheus-sanitized spelling. */
const KEYS = (() => {
  const all = new Set<string>([
    'host.name',
    'cluster.name',
    'service.name',
    ...ATTRIBUTION_ATTRIBUTES,
    ...Object.values(SCOPE_ATTRIBUTES).flatMap((s) => [...s.required, ...s.optional]),
  ]);
  for (const m of METRICS) for (const a of m.attributes) all.add(a);
  return new Map([...all].map((k) => [k.replace(/[^a-zA-Z0-9_]/g, '_'), k]));
})();

/** The job label's matcher: one id exactly, several as one regular expression (a batch of jobs in one query). */
function jobMatcher(naming: Naming, ids: string | readonly string[]): string {
  const label = naming === 'otel' ? '"slurm.job.id"' : 'slurm_job_id';
  return typeof ids === 'string' || ids.length === 1
    ? `${label}=${JSON.stringify(typeof ids === 'string' ? ids : ids[0])}`
    : `${label}=~${JSON.stringify(anyOf(ids))}`;
}

function selector(name: string, naming: Naming, jobId: string | readonly string[]): string {
  if (naming === 'otel') return `{__name__=${JSON.stringify(name)},${jobMatcher(naming, jobId)}}`;
  const def = findMetric(name)!;
  return `${prometheusName(def)}{${jobMatcher(naming, jobId)}}`;
}

/**
 * Several metrics of the jobs in one selector (a range of it keeps each
 * series' name; a function of it, last_over_time, would drop it).
 */
function namesSelector(names: readonly string[], naming: Naming, ids: string | readonly string[]): string {
  const spelled = naming === 'otel' ? names : names.map((n) => prometheusName(findMetric(n)!));
  return `{__name__=~${JSON.stringify(anyOf(spelled))},${jobMatcher(naming, ids)}}`;
}

/** A series' metric, by l9gpu's name, under either naming. */
function nameOf(s: Series, naming: Naming): string | undefined {
  const n = s.metric.__name__;
  return n === undefined ? undefined : naming === 'otel' ? n : PROM_TO_NAME.get(n);
}

const PROM_TO_NAME = new Map(METRICS.map((m) => [prometheusName(m), m.name]));

/** The job id a series is labelled with, under either naming. */
function jobOf(s: Series): string | undefined {
  return s.metric['slurm.job.id'] ?? s.metric.slurm_job_id;
}

/** Series by the job id they carry. */
function byJob(list: readonly Series[]): Map<string, Series[]> {
  const out = new Map<string, Series[]>();
  for (const s of list) {
    const id = jobOf(s);
    if (id === undefined) continue;
    let l = out.get(id);
    if (!l) out.set(id, (l = []));
    l.push(s);
  }
  return out;
}

/**
 * UUIDs in one info-mode query: VictoriaMetrics refuses a query longer than
 * 16 kB (-search.maxQueryLen), and a UUID is ~41 characters of it.
 */
const UUIDS_PER_QUERY = 128;

/** A regular expression matching exactly these strings (RE2, as PromQL's =~ reads it). */
const anyOf = (xs: readonly string[]): string => xs.map((x) => x.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')).join('|');

/** The series of the GPUs `uuids` that carry no job (info mode's). */
function gpuSelector(name: string, naming: Naming, uuids: readonly string[]): string {
  const re = JSON.stringify(anyOf(uuids));
  if (naming === 'otel') return `{__name__=${JSON.stringify(name)},"gpu.uuid"=~${re},"slurm.job.id"=""}`;
  return `${prometheusName(findMetric(name)!)}{gpu_uuid=~${re},slurm_job_id=""}`;
}

function attributes(labels: Record<string, string>, naming: Naming): Attributes {
  const a: Attributes = {};
  for (const [k, v] of Object.entries(labels)) {
    if (k === '__name__') continue;
    const key = naming === 'otel' ? k : (KEYS.get(k) ?? k);
    a[key] = key === 'gpu.index' || key === 'gpu.mig.instance_id' || key === 'gpu.mig.compute_instance_id' ? Number(v) : v;
  }
  return a;
}

/**
 * Job ids in one batched query (a job label's regular expression): a few
 * characters each, far below VictoriaMetrics' 16 kB -search.maxQueryLen.
 */
export const JOBS_PER_QUERY = 100;

/**
 * `make` over `ids` in chunks of JOBS_PER_QUERY, the answers joined; a chunk
 * whose answer is over the size bound is asked again in halves (a batch of
 * long jobs), down to one job, whose error it is.
 */
async function queryJobs(o: PromqlOptions, ids: readonly string[], make: (chunk: readonly string[]) => string): Promise<Series[]> {
  const one = async (chunk: readonly string[]): Promise<Series[]> => {
    try {
      return await query(o, make(chunk));
    } catch (e) {
      if (chunk.length < 2 || !/is larger than/.test((e as Error).message)) throw e;
      const half = Math.ceil(chunk.length / 2);
      return [...(await one(chunk.slice(0, half))), ...(await one(chunk.slice(half)))];
    }
  };
  const out: Series[] = [];
  for (let i = 0; i < ids.length; i += JOBS_PER_QUERY) out.push(...(await one(ids.slice(i, i + JOBS_PER_QUERY))));
  return out;
}

/**
 * The jobs' gpu.job.share series (one per GPU a job held, in both modes of
 * [attribution] job_labels) under the naming that has them (dotted OTLP names
 * tried first), through `expr` (the range of samples, or only each series'
 * last one); a job neither naming has is absent.
 */
async function probeJobs(
  o: PromqlOptions,
  ids: readonly string[],
  expr: (selector: string) => string,
): Promise<Map<string, { naming: Naming; shares: Series[] }>> {
  const out = new Map<string, { naming: Naming; shares: Series[] }>();
  let left = [...new Set(ids)];
  for (const naming of ['otel', 'prometheus'] as Naming[]) {
    if (left.length === 0) break;
    let got: Series[];
    try {
      got = await queryJobs(o, left, (c) => expr(selector('gpu.job.share', naming, c)));
    } catch (e) {
      // a backend without quoted (UTF-8) label names rejects the otel selector: try the other naming
      if (naming === 'otel' && /parse|unexpected|bad_data|syntax/i.test((e as Error).message)) continue;
      throw e;
    }
    const wanted = new Set(left);
    for (const [id, shares] of byJob(got)) if (wanted.has(id)) out.set(id, { naming, shares });
    left = left.filter((id) => !out.has(id));
  }
  return out;
}

/** The ids of `found` under one naming. */
const namedAs = (found: Map<string, { naming: Naming }>, naming: Naming): string[] =>
  [...found].filter(([, f]) => f.naming === naming).map(([id]) => id);

/** The node a series comes from: the OTLP resource's host.name, or a scrape's instance. */
const nodeOf = (a: Attributes): string => String(a['host.name'] ?? a.instance ?? '?');

/** A series' GPU: its node and UUID (gpuKey); undefined without a UUID. */
function gpuOf(s: Series, naming: Naming): string | undefined {
  const a = attributes(s.metric, naming);
  return typeof a['gpu.uuid'] === 'string' ? gpuKey(nodeOf(a), a['gpu.uuid']) : undefined;
}

const OTHERS = USED.filter((n) => n !== 'gpu.job.share');

type Fetched = { naming: Naming; series: Map<string, Series[]> };

/**
 * Fetches the jobs' samples; for each job the naming whose series exist
 * wins. The series labelled with the jobs (job_labels = points), every
 * metric in one query per naming (a regular expression over their names and
 * one over their ids), split by job and name; then, for the times of a job's share that those do not cover
 * (info), the GPUs' own series (infoSamples).
 */
async function fetchJobs(o: PromqlOptions, ids: readonly string[]): Promise<Map<string, Fetched>> {
  const range = (sel: string) => `${sel}[${o.window}]`;
  const found = await probeJobs(o, ids, range);
  const out = new Map<string, Fetched>();
  for (const naming of ['otel', 'prometheus'] as Naming[]) {
    const group = namedAs(found, naming);
    if (group.length === 0) continue;
    const split = new Map<string, Map<string, Series[]>>();
    for (const id of group)
      split.set(id, new Map([['gpu.job.share', found.get(id)!.shares], ...OTHERS.map((n) => [n, []] as [string, Series[]])]));
    // every metric of the report in one query per chunk of jobs, split by job and name
    for (const s of await queryJobs(o, group, (c) => range(namesSelector(OTHERS, naming, c)))) {
      const n = nameOf(s, naming);
      const l = n === undefined ? undefined : split.get(jobOf(s) ?? '')?.get(n);
      if (l) l.push(s);
    }
    for (const id of group) {
      const series = split.get(id)!;
      await infoSamples(o, naming, series);
      out.set(id, { naming, series });
    }
  }
  return out;
}

/**
 * A job's samples carried by its GPUs' own series (job_labels = info): for
 * the times of its share samples that no series labelled with the job covers.
 */
async function infoSamples(o: PromqlOptions, naming: Naming, series: Map<string, Series[]>): Promise<void> {
  const shares = series.get('gpu.job.share')!;
  // the times (ms) of each GPU's share samples that no series labelled with the job has: in info mode all of them
  // (and after a reload switched a node to it, those since), the job's samples among the GPU's own
  const covered = new Map<string, Set<number>>();
  for (const n of OTHERS) {
    for (const s of series.get(n)!) {
      const k = gpuOf(s, naming);
      if (k === undefined) continue;
      let c = covered.get(k);
      if (!c) covered.set(k, (c = new Set()));
      for (const [ts] of s.values) c.add(Math.round(ts * 1000));
    }
  }
  const times = new Map<string, Set<number>>();
  for (const s of shares) {
    const k = gpuOf(s, naming);
    if (k === undefined) continue;
    for (const [ts] of s.values) {
      const ms = Math.round(ts * 1000);
      if (covered.get(k)?.has(ms)) continue;
      let t = times.get(k);
      if (!t) times.set(k, (t = new Set()));
      t.add(ms);
    }
  }
  if (times.size === 0) return;
  const uuids = [
    ...new Set(shares.filter((s) => times.has(gpuOf(s, naming)!)).map((s) => String(attributes(s.metric, naming)['gpu.uuid']))),
  ];
  // the GPUs' own series over the job's time only, not the whole window: a GPU's month is a month of every job's
  // samples (a range selector is open at its start: one ms more)
  let from = Infinity;
  let to = 0;
  for (const t of times.values()) for (const ms of t) [from, to] = [Math.min(from, ms), Math.max(to, ms)];
  const span = `[${to - from + 1}ms]`;
  const chunks = Array.from({ length: Math.ceil(uuids.length / UUIDS_PER_QUERY) }, (_, i) =>
    uuids.slice(i * UUIDS_PER_QUERY, (i + 1) * UUIDS_PER_QUERY),
  );
  await Promise.all(
    OTHERS.map(async (n) => {
      const got: Series[] = [];
      for (const s of (await Promise.all(chunks.map((c) => query(o, `${gpuSelector(n, naming, c)}${span}`, to)))).flat()) {
        // a UUID is the GPU's own, but the node is checked all the same: the share's, not a namesake elsewhere
        const t = times.get(gpuOf(s, naming) ?? '');
        if (!t) continue;
        const values = s.values.filter(([ts]) => t.has(Math.round(ts * 1000)));
        if (values.length) got.push({ metric: s.metric, values });
      }
      series.set(n, [...series.get(n)!, ...got]);
    }),
  );
}

/**
 * The job's NCCL rows from every node: each rank series' last value of its
 * operations, bytes and exec-time sum (cumulative), summed per node,
 * communicator, collective, size and rank.
 */
async function commRows(o: PromqlOptions, naming: Naming, ids: readonly string[]): Promise<Map<string, CommRow[]>> {
  const names: [keyof Pick<CommRow, 'ops' | 'bytes' | 'seconds'>, string, string][] = [
    ['ops', 'nccl.operations', 'nccl_operations_total'],
    ['bytes', 'nccl.bytes', 'nccl_bytes_total'],
    ['seconds', 'nccl.exec.time_sum', 'nccl_exec_time_seconds_sum'],
  ];
  const fieldOf = new Map(
    names.flatMap(
      ([field, otel, prom]) =>
        [
          [otel, field],
          [prom, field],
        ] as const,
    ),
  );
  const spelled = names.map(([, otel, prom]) => (naming === 'otel' ? otel : prom));
  const byId = new Map<string, Map<string, CommRow>>(ids.map((id) => [id, new Map()]));
  // the three in one query per chunk of jobs (a range keeps each series' name)
  const sel = (c: readonly string[]) => `{__name__=~${JSON.stringify(anyOf(spelled))},${jobMatcher(naming, c)}}[${o.window}]`;
  for (const s of await queryJobs(o, ids, sel)) {
    const rows = byId.get(jobOf(s) ?? '');
    const field = fieldOf.get(s.metric.__name__ ?? '');
    if (!rows || !field) continue;
    const a = attributes(s.metric, naming);
    const last = Math.max(...s.values.map(([, v]) => Number(v)).filter(Number.isFinite));
    if (!Number.isFinite(last)) continue;
    const node = nodeOf(a);
    const commName = typeof a['nccl.comm.name'] === 'string' ? a['nccl.comm.name'] : '';
    const comm = typeof a['nccl.comm.id'] === 'string' ? a['nccl.comm.id'] : commName;
    const rank = a['nccl.rank'] !== undefined ? Number(a['nccl.rank']) : -1;
    const collective = String(a['nccl.collective'] ?? '?');
    const size = String(a['nccl.message.size'] ?? '');
    const k = `${node}\u0001${comm}\u0001${collective}\u0001${size}\u0001${rank}`;
    let r = rows.get(k);
    if (!r)
      rows.set(
        k,
        (r = {
          node,
          comm,
          comm_name: commName,
          collective,
          size,
          rank,
          n_ranks: Number(a['nccl.ranks']) || 1,
          n_nodes: Number(a['nccl.nodes']) || 1,
          ops: 0,
          bytes: 0,
          seconds: 0,
        }),
      );
    r[field] += last;
  }
  return new Map([...byId].map(([id, rows]) => [id, [...rows.values()]]));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : 0;
}

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
    const gap = median(samples.slice(1).map((s, i) => s.t - samples[i]!.t));
    const r: GpuRollup = emptyRollup();
    for (const s of samples) {
      step(r, s, gap > 0 ? 2.5 * gap : Infinity);
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
    .map(([m, v]) => [m, Math.round((v.reduce((x, y) => x + y, 0) / v.length) * 1e4) / 1e4] as [number, number]);
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

/** A GPU's job-end summary as its node sent it: the node's own figures of the binding. */
export interface JobEnd {
  energyJ: number;
  /** gpu.job.duration: covered seconds times the job's mean share. */
  seconds?: number;
}

export interface JobEndCoverage {
  /** GPUs (node and UUID) with samples of the job. */
  gpus: number;
  /** Those of them whose job-end summary has reached the backend. */
  ended: number;
  /** The summaries, by node and UUID (gpuKey). */
  ends: Map<string, JobEnd>;
}

/** A GPU's key in the coverage: its node and UUID. */
export const gpuKey = (node: string, uuid: string): string => `${node}\u0000${uuid}`;

/**
 * How far the nodes have got in closing a job: its GPUs (node and UUID) with
 * samples, and those whose job-end summary (gpu.job.energy, exported once a
 * node's epilog closed the GPU's binding) has reached the backend. A backend
 * may show a summary before the samples sent ahead of it (VictoriaMetrics
 * makes fresh samples searchable shard by shard, within seconds): unsettled()
 * tells whether the samples agree with the summaries, settledReport() waits
 * until they do.
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
    const keyOf = (s: Series) => {
      const a = attributes(s.metric, naming);
      return gpuKey(nodeOf(a), String(a['gpu.uuid']));
    };
    const valueOf = (s: Series) => Number(s.values.at(-1)?.[1]);
    // both job-end metrics in one query: a range (a function would drop the names); a GPU's binding sends them once
    const ended = await queryJobs(o, group, (c) => `${namesSelector(['gpu.job.energy', 'gpu.job.duration'], naming, c)}[${o.window}]`);
    const energy = byJob(ended.filter((s) => nameOf(s, naming) === 'gpu.job.energy'));
    const duration = byJob(ended.filter((s) => nameOf(s, naming) === 'gpu.job.duration'));
    for (const id of group) {
      const gpus = new Set(found.get(id)!.shares.map(keyOf));
      const ends = new Map<string, JobEnd>();
      for (const s of energy.get(id) ?? []) if (Number.isFinite(valueOf(s))) ends.set(keyOf(s), { energyJ: valueOf(s) });
      for (const s of duration.get(id) ?? []) {
        const e = ends.get(keyOf(s));
        if (e && Number.isFinite(valueOf(s))) e.seconds = valueOf(s);
      }
      out.set(id, { gpus: gpus.size, ended: [...gpus].filter((k) => ends.has(k)).length, ends });
    }
  }
  return out;
}

const near = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

/**
 * The report's GPUs whose figures rebuilt from the backend's samples differ
 * from their node's job-end summary (the node's store, exactly, when the
 * samples arrived as sent, over OTLP): the backend does not show every sample
 * yet, or a scrape resampled the series. [] when all agree.
 */
export function unsettled(report: JobReport, ends: ReadonlyMap<string, JobEnd>): string[] {
  return report.gpus
    .filter((g) => {
      const e = ends.get(gpuKey(g.node, g.uuid));
      if (!e) return false;
      return !near(g.figures.energyJ, e.energyJ) || (e.seconds !== undefined && !near(g.figures.seconds * g.figures.shareMean, e.seconds));
    })
    .map((g) => `${g.node}/${g.uuid}`);
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
