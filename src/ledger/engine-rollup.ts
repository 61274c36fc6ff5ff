/**
 * What each job's inference engines served, for `l9gpu jobs show`: from the
 * attributed engine points (an engine's process belongs to a job), the
 * requests, tokens in and out and the latency histograms' buckets added
 * while the job ran, per engine endpoint and model.
 *
 * Increases between two scrapes of a series (after a restart of the engine:
 * its new count). The last value of each series is kept in the store, so a
 * restart of the daemon goes on from it; a series never seen for the job
 * counts whole, since the engine's process is the job's and counted nothing
 * before it. A series is its source's identity (metric, endpoint, the page's
 * labels), not the attributes attribution adds, which change as the job's
 * bindings load.
 */
import type { Attributes, HistogramValue } from '../core/metrics/model.js';
import type { InferenceRole } from '../core/metrics/registry.js';
import { addBuckets, type Buckets } from '../figures/buckets.js';
import type { DeltaFigures } from './deltas-rollup.js';
import { increase } from './series-deltas.js';
import { engineRowStatements } from '../store/counted.js';

interface Acc {
  jobId: string;
  runKey: string;
  engine: string;
  endpoint: string;
  model: string;
  requests: number;
  prompt_tokens: number | null;
  generation_tokens: number | null;
  ttft?: Buckets;
  itl?: Buckets;
}

/** a - b per bucket when a is b later on (same bounds, nothing lower), else a: a restart. */
function histDelta(a: HistogramValue, b: HistogramValue | undefined): Buckets {
  if (
    b &&
    b.bounds.length === a.bounds.length &&
    b.bounds.every((x, i) => x === a.bounds[i]) &&
    a.counts.every((c, i) => c >= b.counts[i]!)
  ) {
    return { bounds: [...a.bounds], counts: a.counts.map((c, i) => c - b.counts[i]!) };
  }
  return { bounds: [...a.bounds], counts: [...a.counts] };
}

export const ENGINE_FIGURES: DeltaFigures<Acc> = {
  takes: (p) => p.metric.inference !== undefined,
  jobOf(p) {
    // the run key attribution stamped on the engine's points (an engine's process is its job's)
    return p.metric.inference ? p.job?.id : undefined;
  },
  rowOf(p, jobId, runKey) {
    const a: Attributes = p.attributes;
    const engine = p.metric.name.slice(0, p.metric.name.indexOf('.'));
    const endpoint = `${String(a['server.address'])}:${String(a['server.port'])}`;
    const model = typeof a['gen_ai.request.model'] === 'string' ? a['gen_ai.request.model'] : '';
    return {
      key: `${engine}\u0001${endpoint}\u0001${model}`,
      row: () => ({ jobId, runKey, engine, endpoint, model, requests: 0, prompt_tokens: null, generation_tokens: null }),
    };
  },
  add(acc, p, prev) {
    const role: InferenceRole = p.metric.inference!;
    if (role === 'ttft' || role === 'itl') {
      if (p.hist) acc[role] = addBuckets(acc[role], histDelta(p.hist, prev?.h));
      return;
    }
    // a token histogram (TGI's input and generated lengths) counts its sum: the tokens of its requests
    const v = p.hist ? p.hist.sum : p.value;
    const before = p.hist ? prev?.h?.sum : prev?.v;
    acc[role] = (acc[role] ?? 0) + increase(v, before);
  },
  write(db, accs, time) {
    const { get, put } = engineRowStatements(db);
    const add = (a: number | null, b: number | null | undefined): number | null =>
      a === null && (b === null || b === undefined) ? null : (a ?? 0) + (b ?? 0);
    for (const a of accs) {
      const had = get.get(a.jobId, a.runKey, a.engine, a.endpoint, a.model) as
        | {
            requests: number;
            prompt_tokens: number | null;
            generation_tokens: number | null;
            ttft: string | null;
            itl: string | null;
            first_time: number;
          }
        | undefined;
      const merge = (old: string | null | undefined, d: Buckets | undefined) => {
        const o = old ? (JSON.parse(old) as Buckets) : undefined;
        const m = d ? addBuckets(o, d) : o;
        return m ? JSON.stringify(m) : null;
      };
      put.run(
        a.jobId,
        a.runKey,
        a.engine,
        a.endpoint,
        a.model,
        had?.first_time ?? time,
        time,
        (had?.requests ?? 0) + a.requests,
        add(a.prompt_tokens, had?.prompt_tokens),
        add(a.generation_tokens, had?.generation_tokens),
        merge(had?.ttft, a.ttft),
        merge(had?.itl, a.itl),
      );
    }
  },
  failure: "cannot update the jobs' inference figures: the engine counts since the last write go in at the next one",
  kind: 'job ledger (inference figures)',
};
