/**
 * What each job's inference engines served, for `l9gpu jobs show`: from the
 * attributed engine points (an engine's process belongs to a job), the
 * requests, tokens in and out and the latency histograms' buckets added
 * while the job ran, per engine endpoint and model. Counter and bucket
 * deltas between two scrapes of a series (a restart: its new count); the
 * first scrape of a series counts whole, since the engine's process is the
 * job's and counted nothing before it.
 */
import type { Attributes, HistogramValue, Point } from '../core/metrics/model.js';
import type { InferenceRole } from '../core/metrics/registry.js';
import type { Db } from '../store/open.js';

export interface Buckets {
  bounds: number[];
  counts: number[];
}

interface Acc {
  jobId: string;
  runKey: string;
  engine: string;
  endpoint: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  generation_tokens: number;
  ttft?: Buckets;
  itl?: Buckets;
}

/** a - b per bucket when a is b later on (same bounds, nothing lower), else a: a restart. */
function histDelta(a: HistogramValue, b: HistogramValue | undefined): Buckets {
  if (b && b.bounds.length === a.bounds.length && b.bounds.every((x, i) => x === a.bounds[i]) && a.counts.every((c, i) => c >= b.counts[i]!)) {
    return { bounds: [...a.bounds], counts: a.counts.map((c, i) => c - b.counts[i]!) };
  }
  return { bounds: [...a.bounds], counts: [...a.counts] };
}

/** Buckets added to buckets; other bounds than before (an engine upgraded mid-job): the newer ones. */
export function addBuckets(into: Buckets | undefined, d: Buckets): Buckets {
  if (!into || into.bounds.length !== d.bounds.length || !into.bounds.every((x, i) => x === d.bounds[i])) return d;
  return { bounds: into.bounds, counts: into.counts.map((c, i) => c + d.counts[i]!) };
}

const seriesKey = (p: Point) => `${p.metric.name}\u0001${JSON.stringify(p.attributes)}`;

export class EngineRollups {
  /** Last value of each series (a counter's number, a histogram's buckets). */
  private readonly last = new Map<string, { v: number; h?: HistogramValue; seen: number }>();
  private readonly runs = new Map<string, { runKey: string | undefined; at: number }>();
  private tick = 0;

  constructor(private readonly db: Db) {}

  /** The open run of a job (its latest), asked of the store once a minute per job. */
  private runOf(jobId: string, now: number): string | undefined {
    const c = this.runs.get(jobId);
    if (c && now - c.at < 60_000) return c.runKey;
    const r = this.db.prepare('SELECT run_key FROM jobs WHERE job_id = ? ORDER BY end_time IS NULL DESC, start_time DESC LIMIT 1').get(jobId) as { run_key: string } | undefined;
    this.runs.set(jobId, { runKey: r?.run_key, at: now });
    return r?.run_key;
  }

  /** Takes a batch's points; the engine points with a job add to that job's figures in the store. */
  observe(points: readonly Point[], time: number): void {
    this.tick++;
    const accs = new Map<string, Acc>();
    for (const p of points) {
      const role: InferenceRole | undefined = p.metric.inference;
      if (!role) continue;
      const a: Attributes = p.attributes;
      const jobId = a['slurm.job.id'] ?? a['k8s.pod.name'];
      if (typeof jobId !== 'string') continue;
      const k = seriesKey(p);
      const prev = this.last.get(k);
      this.last.set(k, { v: p.value, h: p.hist, seen: this.tick });
      const runKey = this.runOf(jobId, time);
      if (runKey === undefined) continue;
      const engine = p.metric.name.slice(0, p.metric.name.indexOf('.'));
      const endpoint = `${String(a['server.address'])}:${String(a['server.port'])}`;
      const model = typeof a['gen_ai.request.model'] === 'string' ? a['gen_ai.request.model'] : '';
      const ak = `${jobId}\u0001${runKey}\u0001${engine}\u0001${endpoint}\u0001${model}`;
      let acc = accs.get(ak);
      if (!acc) accs.set(ak, (acc = { jobId, runKey, engine, endpoint, model, requests: 0, prompt_tokens: 0, generation_tokens: 0 }));
      if (role === 'ttft' || role === 'itl') {
        if (p.hist) acc[role] = addBuckets(acc[role], histDelta(p.hist, prev?.h));
      } else {
        acc[role] += prev && p.value >= prev.v ? p.value - prev.v : p.value;
      }
    }
    for (const [k, v] of this.last) if (this.tick - v.seen > 10) this.last.delete(k);
    if (accs.size) this.write([...accs.values()], time);
  }

  private write(accs: Acc[], time: number): void {
    const get = this.db.prepare('SELECT requests, prompt_tokens, generation_tokens, ttft, itl, first_time FROM job_engine WHERE job_id = ? AND run_key = ? AND engine = ? AND endpoint = ? AND model = ?');
    const put = this.db.prepare(`INSERT OR REPLACE INTO job_engine (job_id, run_key, engine, endpoint, model, first_time, last_time, requests, prompt_tokens, generation_tokens, ttft, itl)
                                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.db.transaction(() => {
      for (const a of accs) {
        const had = get.get(a.jobId, a.runKey, a.engine, a.endpoint, a.model) as { requests: number; prompt_tokens: number; generation_tokens: number; ttft: string | null; itl: string | null; first_time: number } | undefined;
        const merge = (old: string | null | undefined, d: Buckets | undefined) => {
          const o = old ? (JSON.parse(old) as Buckets) : undefined;
          const m = d ? addBuckets(o, d) : o;
          return m ? JSON.stringify(m) : null;
        };
        put.run(a.jobId, a.runKey, a.engine, a.endpoint, a.model, had?.first_time ?? time, time, (had?.requests ?? 0) + a.requests, (had?.prompt_tokens ?? 0) + a.prompt_tokens, (had?.generation_tokens ?? 0) + a.generation_tokens, merge(had?.ttft, a.ttft), merge(had?.itl, a.itl));
      }
    }).immediate();
  }
}
