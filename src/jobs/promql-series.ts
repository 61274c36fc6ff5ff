/**
 * The PromQL queries of a job's series, as the daemons exported them: the
 * two namings (OTLP's dotted names and labels, a Prometheus scrape's
 * sanitized ones, both tried), the selectors of a job's or a GPU's series, the
 * batched queries of many jobs, and the fetch of a job's samples in either
 * [attribution] job_labels mode (info: each GPU's series at the timestamps of
 * the job's gpu.job.share). The report (promql-report.ts) and the job-end
 * settling (job-end-settle.ts) read through these.
 */
import { ATTRIBUTION_ATTRIBUTES, METRICS, SCOPE_ATTRIBUTES, findMetric, prometheusName } from '../core/metrics/registry.js';
import type { Attributes } from '../core/metrics/model.js';
import { type CommRow } from './communication.js';
import { CONVENTION_ROWS } from '../core/metrics/conventions.js';
import { query, type PromqlOptions, type Series } from './promql-client.js';

export type { PromqlOptions } from './promql-client.js';

export const USED = [
  'gpu.utilization',
  'gpu.memory.controller.utilization',
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
export type Naming = 'otel' | 'prometheus';

/** Every attribute key l9gpu emits, by its Prometheus-sanitized spelling. */
export const KEYS = (() => {
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
export function jobMatcher(naming: Naming, ids: string | readonly string[]): string {
  const label = naming === 'otel' ? '"slurm.job.id"' : 'slurm_job_id';
  return typeof ids === 'string' || ids.length === 1
    ? `${label}=${JSON.stringify(typeof ids === 'string' ? ids : ids[0])}`
    : `${label}=~${JSON.stringify(anyOf(ids))}`;
}

/**
 * The names a metric's series can have in a backend under this naming: its own and, where the OpenTelemetry
 * conventions define it, the conventions' (a node whose sink sends semantic_conventions = hw).
 */
export function spellings(name: string, naming: Naming): string[] {
  const defs = [findMetric(name)!, ...(CONVENTIONS_OF.has(name) ? [CONVENTIONS_OF.get(name)!] : [])];
  return defs.map((d) => (naming === 'otel' ? d.name : prometheusName(d)));
}

const CONVENTIONS_OF = new Map(CONVENTION_ROWS.filter((r) => !r.expand).map((r) => [r.from.name, r.to]));

/** A metric's series under every name it can have, and these matchers. */
const named = (name: string, naming: Naming, matchers: string): string => {
  const names = spellings(name, naming);
  if (naming === 'prometheus' && names.length === 1) return `${names[0]}{${matchers}}`;
  return names.length === 1
    ? `{__name__=${JSON.stringify(names[0])},${matchers}}`
    : `{__name__=~${JSON.stringify(anyOf(names))},${matchers}}`;
};

export function selector(name: string, naming: Naming, jobId: string | readonly string[]): string {
  return named(name, naming, jobMatcher(naming, jobId));
}

/**
 * Several metrics of the jobs in one selector (a range of it keeps each
 * series' name; a function of it, last_over_time, would drop it).
 */
export function namesSelector(names: readonly string[], naming: Naming, ids: string | readonly string[]): string {
  const spelled = names.flatMap((n) => spellings(n, naming));
  return `{__name__=~${JSON.stringify(anyOf(spelled))},${jobMatcher(naming, ids)}}`;
}

/** A series' metric, by l9gpu's name, under either naming. */
export function nameOf(s: Series, naming: Naming): string | undefined {
  const n = s.metric.__name__;
  return n === undefined ? undefined : naming === 'otel' ? (OTEL_TO_NAME.get(n) ?? n) : PROM_TO_NAME.get(n);
}

export const PROM_TO_NAME = new Map([
  ...METRICS.map((m) => [prometheusName(m), m.name] as const),
  ...[...CONVENTIONS_OF].map(([ours, hw]) => [prometheusName(hw), ours] as const),
]);
const OTEL_TO_NAME = new Map([...CONVENTIONS_OF].map(([ours, hw]) => [hw.name, ours]));

/** The job id a series is labelled with, under either naming. */
export function jobOf(s: Series): string | undefined {
  return s.metric['slurm.job.id'] ?? s.metric.slurm_job_id;
}

/** Series by the job id they carry. */
export function byJob(list: readonly Series[]): Map<string, Series[]> {
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
export const UUIDS_PER_QUERY = 128;

/** A regular expression matching exactly these strings (RE2, as PromQL's =~ reads it). */
export const anyOf = (xs: readonly string[]): string => xs.map((x) => x.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')).join('|');

/** The series of the GPUs `uuids` that carry no job (info mode's). */
export function gpuSelector(name: string, naming: Naming, uuids: readonly string[]): string {
  const re = JSON.stringify(anyOf(uuids));
  return named(name, naming, naming === 'otel' ? `"gpu.uuid"=~${re},"slurm.job.id"=""` : `gpu_uuid=~${re},slurm_job_id=""`);
}

export function attributes(labels: Record<string, string>, naming: Naming): Attributes {
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
export async function queryJobs(o: PromqlOptions, ids: readonly string[], make: (chunk: readonly string[]) => string): Promise<Series[]> {
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
export async function probeJobs(
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
export const namedAs = (found: Map<string, { naming: Naming }>, naming: Naming): string[] =>
  [...found].filter(([, f]) => f.naming === naming).map(([id]) => id);

/** The node a series comes from: the OTLP resource's host.name, or a scrape's instance. */
export const nodeOf = (a: Attributes): string => String(a['host.name'] ?? a.instance ?? '?');

/** A series' GPU: its node and UUID (gpuKey); undefined without a UUID. */
export function gpuOf(s: Series, naming: Naming): string | undefined {
  const a = attributes(s.metric, naming);
  return typeof a['gpu.uuid'] === 'string' ? gpuKey(nodeOf(a), a['gpu.uuid']) : undefined;
}

export const OTHERS = USED.filter((n) => n !== 'gpu.job.share');

export type Fetched = { naming: Naming; series: Map<string, Series[]> };

/**
 * Fetches the jobs' samples; for each job the naming whose series exist
 * wins. The series labelled with the jobs (job_labels = points), every
 * metric in one query per naming (a regular expression over their names and
 * one over their ids), split by job and name; then, for the times of a job's share that those do not cover
 * (info), the GPUs' own series (infoSamples).
 */
export async function fetchJobs(o: PromqlOptions, ids: readonly string[]): Promise<Map<string, Fetched>> {
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
export async function infoSamples(o: PromqlOptions, naming: Naming, series: Map<string, Series[]>): Promise<void> {
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
export async function commRows(o: PromqlOptions, naming: Naming, ids: readonly string[]): Promise<Map<string, CommRow[]>> {
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

/** A GPU's key in the coverage: its node and UUID. */
export const gpuKey = (node: string, uuid: string): string => `${node}\u0000${uuid}`;
