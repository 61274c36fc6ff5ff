/**
 * Series churn at the backend (issue 34): N virtual nodes of sim GPUs, each
 * through the daemon's own stages (the sim plugin, Slurm attribution over the
 * node's SQLite store, the job ledger, health) and its OTLP sink, into a real
 * VictoriaMetrics, one per run. Jobs start and end as the prolog and epilog
 * record them (src/store/jobs.ts, on a connection of their own, as the hooks
 * are other processes), on a simulated clock that runs as fast as the
 * machine can: every point is stamped with its simulated time, which ends
 * at the wall clock's now (VictoriaMetrics takes samples back to its
 * -retentionPeriod, one month by default, and none more than 2 days ahead).
 *
 * What it measures is read from VictoriaMetrics' own /metrics after a forced
 * flush: series created, samples stored, its CPU and bytes on disk. The
 * series it sent are also counted here, as a backend keys them (name and
 * non-empty labels, the resource's included), to hold the two to each other.
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { readSection } from '../src/core/config/read.js';
import { jobLabelsFrom, summaryGrainOf, type JobLabelMode } from '../src/core/job-labels.js';
import { limitsFrom } from '../src/core/limits.js';
import { createLogger } from '../src/core/log.js';
import { PointBuffer, type Attributes, type Batch } from '../src/core/metrics/model.js';
import { pluginContext, type Plugin } from '../src/core/plugin.js';
import { resourceAttributes } from '../src/core/resource.js';
import { rng } from '../src/core/rng.js';
import { SinkStats, type Sink } from '../src/core/sink.js';
import { healthOptions } from '../src/health/config.js';
import { HealthTracker } from '../src/health/tracker.js';
import { JOBS_SECTION } from '../src/jobs/config.js';
import { JobLedger } from '../src/ledger/ledger.js';
import { Pipeline } from '../src/pipeline/pipeline.js';
import { otlpSink } from '../src/sinks/otlp.js';
import { recordEnd, recordStart } from '../src/store/jobs.js';
import { openStore, type Db } from '../src/store/open.js';
import { simPluginOn, simUuid } from '../plugins/sim/index.js';
import { SlurmAttribution } from '../slurm/attribution.js';
import { configFrom } from '../test/helpers/config.js';
import { tempDir } from '../test/helpers/paths.js';
import { VictoriaMetrics } from '../test/helpers/victoriametrics.js';

export interface ChurnOptions {
  readonly mode: JobLabelMode;
  /** [attribution] omit_from_points. */
  readonly omit?: readonly string[];
  readonly nodes: number;
  readonly gpusPerNode: number;
  /** Simulated time. */
  readonly hours: number;
  /** The collection interval, simulated seconds ([daemon] interval). */
  readonly tickS: number;
  /** A job's mean run time (exponential), simulated minutes; a GPU gets its next job at the tick its last one ended. */
  readonly jobMinutes: number;
  /** Job sizes in GPUs, drawn uniformly from this list (default SIZE_MIX); a job takes fewer where fewer are free. */
  readonly jobGpus?: readonly number[];
  readonly seed: number;
}

/** VictoriaMetrics' own counters and gauges at one moment. */
interface VmFigures {
  created: number;
  rows: number;
  cpuS: number;
  dataBytes: number;
  indexBytes: number;
  /** Rows it did not store (too old, too new, bad): must be 0. */
  ignored: number;
}

export interface ChurnResult {
  readonly options: ChurnOptions;
  readonly simulatedS: number;
  readonly wallS: number;
  /** Job and GPU-job starts after the first tick (the first tick fills every GPU: the warm-up). */
  readonly jobStarts: number;
  readonly gpuJobStarts: number;
  /** GPU-job ends (each a job-end summary of its GPU's). */
  readonly gpuJobEnds: number;
  /** Jobs that ended (each on one node: a node's job-end summaries in info mode). */
  readonly jobEnds: number;
  /** Series VictoriaMetrics created at the first tick, and after it. */
  readonly warmupSeries: number;
  readonly newSeries: number;
  /** Distinct series the nodes sent, counted here (the whole run). */
  readonly sentSeries: number;
  /** Series with a sample at the last tick (within two ticks), and within the last simulated hour. */
  readonly activeAtEnd: number;
  readonly activeLastHour: number;
  /** Samples stored after the first tick, and what VictoriaMetrics spent taking them (process CPU, start to end). */
  readonly samples: number;
  readonly vmCpuS: number;
  /** On disk after a forced flush: the data parts, the index. */
  readonly dataBytes: number;
  readonly indexBytes: number;
  readonly totalSamples: number;
  readonly totalSeries: number;
  readonly ignoredRows: number;
}

/** A backend's series: the name and the non-empty labels (Prometheus drops empty ones), resource included. */
class SeriesCount implements Sink {
  readonly name = 'series-count';
  readonly stats = new SinkStats();
  constructor(
    private readonly resource: Attributes,
    readonly keys: Set<string>,
  ) {}
  write(b: Batch): void {
    for (const p of b.points) {
      const a = { ...this.resource, ...p.attributes };
      this.keys.add(
        `${p.metric.name}{${Object.keys(a)
          .filter((k) => a[k] !== '')
          .sort()
          .map((k) => `${k}=${String(a[k])}`)
          .join(',')}}`,
      );
    }
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

interface Job {
  readonly id: string;
  readonly gpus: readonly number[];
  readonly endAt: number;
}

interface Node {
  readonly dir: string;
  readonly uuids: readonly string[];
  /** The daemon's connection, and the hooks'. */
  readonly db: Db;
  readonly hook: Db;
  readonly plugin: Plugin;
  readonly pipeline: Pipeline;
  readonly sink: Sink;
  readonly held: (Job | null)[];
}

/** Job sizes in GPUs, drawn uniformly: as many 1-GPU jobs as all others together. */
export const SIZE_MIX: readonly number[] = [1, 1, 1, 2, 4, 8];

async function vmFigures(vm: VictoriaMetrics): Promise<VmFigures> {
  await vm.flush();
  const m = await vm.ownMetrics();
  const sum = (name: string, type = '') =>
    m.filter((s) => s.name === name && (s.labels.type ?? '').startsWith(type)).reduce((a, s) => a + s.value, 0);
  return {
    created: sum('vm_new_timeseries_created_total'),
    rows: sum('vm_rows_added_to_storage_total'),
    cpuS: sum('process_cpu_seconds_total'),
    dataBytes: sum('vm_data_size_bytes', 'storage/'),
    indexBytes: sum('vm_data_size_bytes', 'indexdb/'),
    ignored: sum('vm_rows_ignored_total'),
  };
}

export async function simulateChurn(o: ChurnOptions): Promise<ChurnResult> {
  const log = createLogger('error', () => {});
  const tickMs = o.tickS * 1000;
  const ticks = Math.max(2, Math.round((o.hours * 3600) / o.tickS));
  if (ticks * tickMs > 25 * 86_400_000)
    throw new Error(`--hours ${o.hours}: at most 25 days (600 h) fit in VictoriaMetrics' default retention of a month`);
  // ends at now: every sample is in the past, inside the retention
  const t0 = Math.floor((Date.now() - ticks * tickMs) / 1000) * 1000;
  let now = t0;
  const rand = rng(o.seed);
  const vm = await new VictoriaMetrics().start();
  const counted = new Set<string>();
  const nodes: Node[] = [];
  try {
    const base = await vmFigures(vm);
    for (let i = 0; i < o.nodes; i++) {
      const host = `gpu${String(i).padStart(5, '0')}`;
      const dir = tempDir(`l9gpu-churn-${host}-`);
      const cfg = configFrom({
        daemon: { host_name: host, state_dir: dir, cluster: 'churn' },
        sim: { gpus: String(o.gpusPerNode), seed: String(o.seed + i) },
        // flushed by the loop below, not by the sink's timer
        otlp: { endpoint: vm.otlpEndpoint, export_interval: '3600s' },
        attribution: { job_labels: o.mode, ...(o.omit?.length ? { omit_from_points: o.omit.join(', ') } : {}) },
      });
      const ctx = pluginContext(cfg, log);
      const db = openStore(dir);
      const attribution = new SlurmAttribution(db, log, undefined, {
        labelLength: limitsFrom(cfg).labelLength,
        budgets: ctx.budgets,
        jobLabels: jobLabelsFrom(cfg),
      });
      const jobs = readSection(cfg, JOBS_SECTION);
      const ledger = new JobLedger(
        db,
        log,
        { seriesMs: jobs.series_retention * 1000, jobsMs: jobs.job_retention * 1000 },
        undefined,
        summaryGrainOf(jobLabelsFrom(cfg)),
      );
      const health = new HealthTracker({ ...healthOptions(cfg), persist: false }, log);
      const resource = resourceAttributes(cfg);
      const sink = otlpSink.create({ config: cfg, log, resource, startTime: t0 });
      await sink.start?.();
      const pipeline = new Pipeline(log, { attribution, ledger, health, sinks: [sink, new SeriesCount(resource, counted)] });
      nodes.push({
        dir,
        uuids: Array.from({ length: o.gpusPerNode }, (_, g) => simUuid(host, g)),
        db,
        hook: openStore(dir),
        plugin: simPluginOn(ctx, () => now),
        pipeline,
        sink,
        held: Array(o.gpusPerNode).fill(null),
      });
    }

    let jobSeq = 1000;
    let jobStarts = 0;
    const sizes = o.jobGpus?.length ? o.jobGpus : SIZE_MIX;
    let gpuJobStarts = 0;
    let gpuJobEnds = 0;
    let jobEnds = 0;
    /** The epilogs of the node's jobs that ended by `t`, then a prolog per job on the GPUs free after them. */
    const schedule = (n: Node, t: number): void => {
      for (const j of new Set(n.held)) {
        if (!j || j.endAt > t) continue;
        recordEnd(n.hook, { jobId: j.id, runKey: 'r0' }, { endTime: t - 1, state: 'COMPLETED', exitCode: 0 }, [], 'epilog', t - 1);
        for (const g of j.gpus) n.held[g] = null;
        gpuJobEnds += j.gpus.length;
        jobEnds++;
      }
      for (;;) {
        const free = n.held.flatMap((j, g) => (j ? [] : [g]));
        if (free.length === 0) break;
        const gpus = free.slice(0, sizes[Math.floor(rand() * sizes.length)]!);
        const job: Job = {
          id: String(jobSeq++),
          gpus,
          endAt: t + Math.max(tickMs, Math.round(-Math.log(1 - rand()) * o.jobMinutes * 60_000)),
        };
        const u = Math.floor(rand() * 40);
        recordStart(
          n.hook,
          {
            jobId: job.id,
            runKey: 'r0',
            user: `user${u}`,
            uid: 2000 + u,
            account: `acct${u % 8}`,
            partition: 'gpu',
            name: `train-${Math.floor(rand() * 200)}`,
            startTime: t - 1,
          },
          gpus.map((g) => ({ uuid: n.uuids[g]!, shared: false })),
          'prolog',
          t - 1,
        );
        for (const g of gpus) n.held[g] = job;
        jobStarts++;
        gpuJobStarts += gpus.length;
      }
    };

    // one OTLP request per node every 30 ticks (5 simulated minutes at 10 s): the loop waits on them, so none is dropped
    const FLUSH_TICKS = 30;
    let warm: VmFigures | undefined;
    let warmStarts = { jobs: 0, gpus: 0 };
    const wall0 = performance.now();
    for (let tick = 0; tick < ticks; tick++) {
      now = t0 + tick * tickMs;
      for (const n of nodes) {
        schedule(n, now);
        const out = new PointBuffer();
        await n.plugin.collect(out, AbortSignal.timeout(60_000));
        n.pipeline.publish({ source: 'sim', time: now, intervalMs: tickMs, points: out.points });
      }
      if (tick === 0 || (tick + 1) % FLUSH_TICKS === 0 || tick === ticks - 1)
        await Promise.all(nodes.map((n) => n.sink.flush(Date.now() + 120_000)));
      if (tick === 0) {
        warm = await vmFigures(vm);
        warmStarts = { jobs: jobStarts, gpus: gpuJobStarts };
      }
    }
    const wallS = (performance.now() - wall0) / 1000;
    for (const n of nodes) {
      await n.sink.close(Date.now() + 120_000);
      if (n.sink.stats.dropped || n.sink.stats.errors)
        throw new Error(`the OTLP sink dropped ${n.sink.stats.dropped} points (${n.sink.stats.errors} errors)`);
    }
    const end = await vmFigures(vm);
    const last = now;
    const count = async (q: string) => Number((await vm.query(q, last))[0]?.value?.[1] ?? 0);
    return {
      options: o,
      simulatedS: (ticks * tickMs) / 1000,
      wallS,
      jobStarts: jobStarts - warmStarts.jobs,
      gpuJobStarts: gpuJobStarts - warmStarts.gpus,
      gpuJobEnds,
      jobEnds,
      warmupSeries: warm!.created - base.created,
      newSeries: end.created - warm!.created,
      sentSeries: counted.size,
      activeAtEnd: await count(`count(last_over_time({__name__=~".+"}[${2 * o.tickS}s]))`),
      activeLastHour: await count('count(last_over_time({__name__=~".+"}[1h]))'),
      samples: end.rows - warm!.rows,
      vmCpuS: end.cpuS - base.cpuS,
      dataBytes: end.dataBytes,
      indexBytes: end.indexBytes,
      totalSamples: end.rows - base.rows,
      totalSeries: end.created - base.created,
      ignoredRows: end.ignored - base.ignored,
    };
  } finally {
    for (const n of nodes) {
      n.db.close();
      n.hook.close();
      rmSync(n.dir, { recursive: true, force: true });
    }
    await vm.stop();
  }
}
