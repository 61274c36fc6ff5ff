/** The shapes of a job report, shared by the store and PromQL sources, the notes and the renderers. */
import type { GpuFigures, IdleBasis } from '../figures/rollup.js';
import type { RunOwner } from '../core/run-identity.js';
import type { SnakeKeys } from '../core/snake-case.js';

export interface Note {
  level: 'info' | 'warn';
  code: string;
  text: string;
}

/** The report's header: the run identity in snake_case (start and end as ISO times), with what the report adds. */
export interface JobHeader extends SnakeKeys<RunOwner> {
  id: string;
  job_id: string;
  run: string;
  state: string;
  start: string | null;
  end: string | null;
  elapsed_s: number | null;
  exit_code: number | null;
  nodes: string[];
  earlier_runs: number;
  /** The jobstats header, from Slurm accounting (src/jobs/slurm-header.ts); null where no sacct answer was laid over the header. */
  cpus: number | null;
  mem_req_bytes: number | null;
  mem_max_rss_bytes: number | null;
  time_limit_s: number | null;
  /** elapsed / time limit, 0..1 */
  time_efficiency: number | null;
  gpus_alloc: number | null;
  exit_signal: number | null;
  /** The provider that recorded the run (kubernetes: a pod; absent or null: a Slurm job), and the run's attributes (a pod's k8s.*). */
  scheduler?: string | null;
  attrs?: Record<string, string | number | boolean> | null;
}

export interface GpuRow {
  node: string;
  uuid: string;
  model: string | null;
  index: number | null;
  shared: boolean;
  figures: GpuFigures;
}

export interface Totals {
  gpus: number;
  gpu_hours: number;
  util_mean: number | null;
  mem_peak_bytes: number | null;
  /** null: no GPU of the job had an energy counter or enough power readings (unknown, not 0). */
  energy_j: number | null;
  energy_kwh: number | null;
  /** GPU-hours at their price plus facility energy (energy x PUE) at the kWh price, in currency; null: no price configured. */
  cost: number | null;
  currency: string | null;
  /** Grams CO2e of the facility energy (energy x PUE x carbon intensity); null: no carbon intensity configured. */
  co2e_g: number | null;
}

/** What a job's inference engines served (engines whose process was the job's), over the job. */
export interface InferenceFigures {
  engines: { engine: string; endpoint: string; model: string | null }[];
  requests: number;
  /** null: no engine of the job counts tokens (Triton). */
  prompt_tokens: number | null;
  generation_tokens: number | null;
  /** Time to first token and inter-token latency quantiles over every request of the job (s). */
  ttft_p50_s: number | null;
  ttft_p95_s: number | null;
  itl_p50_s: number | null;
  itl_p95_s: number | null;
  /** From the first to the last scrape that saw the engines. */
  serving_s: number;
  /** Generated tokens per second of serving. */
  tokens_per_s: number | null;
  /** Generated tokens per joule of the job's GPU energy. */
  tokens_per_j: number | null;
  /** The job's cost per million generated tokens; null without a cost or tokens. */
  cost_per_million_tokens: number | null;
}

/** A job's NCCL communication (Inspector data of its ranks), over the job. */
export interface CommunicationFigures {
  /** Seconds a rank spent in the collectives, summed over them (each collective's time per rank). */
  time_s: number;
  /** The fabric's peak bus bandwidth for the job's partition (B/s), from [jobs]; null: not configured. */
  peak_bus_bw_Bps: number | null;
  /** Per communicator, collective and message-size bucket (powers of two: 64MiB holds [64, 128) MiB), most time first. */
  collectives: {
    comm: string;
    comm_name: string | null;
    collective: string;
    size: string;
    ranks: number;
    nodes: number;
    /** Ranks whose records are in the report (this node's, or every node's through PromQL). */
    ranks_seen: number;
    /** Operations of the busiest rank. */
    operations: number;
    /** Seconds per rank. */
    time_s: number;
    /** Of the job's communication time, 0..1. */
    share: number;
    alg_bw_Bps: number | null;
    bus_bw_Bps: number | null;
    /** Bus bandwidth over the peak, null without one. */
    of_peak: number | null;
  }[];
  /** Ranks slower than their peers on the same collectives, slowest first (at most 5). */
  slowest_ranks: { comm: string; comm_name: string | null; rank: number; node: string; slowdown: number; straggler: boolean }[];
}

export interface JobReport {
  /** Where the figures come from: this node's store, a PromQL backend, or the summary the slurmctld epilog left in the job's AdminComment
   * (read through sacct). */
  source: 'store' | 'promql' | 'sacct';
  job: JobHeader;
  gpus: GpuRow[];
  totals: Totals;
  /** Jobs that served a model: their engines' figures (the store source only); null otherwise. */
  inference: InferenceFigures | null;
  /** Jobs whose ranks wrote NCCL Inspector data: their communication; null otherwise. */
  communication: CommunicationFigures | null;
  /** Mean utilization of the job's GPUs per minute (ms, 0..1). */
  series: [number, number][];
  notes: Note[];
  /**
   * What the GPUs' own counters (GPM) say of the job, with the reader's [jobs] thresholds (src/jobs/efficiency.ts):
   * laid on by finishReport (src/jobs/show.ts), whatever the source; absent from a raw source's report.
   */
  efficiency?: EfficiencySection | null;
}

/** The Efficiency section's classes (src/jobs/efficiency.ts, docs/jobs.md). */
export type EfficiencyClass =
  'idle' | 'input-bound' | 'memory-bound' | 'tensor-bound' | 'fp64-bound' | 'fp32-bound' | 'low-occupancy' | 'mixed' | 'no-gpm';

/** The means of a GPU or of the job (snake_case, as the report's JSON is). */
export interface EfficiencyMeans {
  /** Seconds with GPM (summed over the GPUs for the job). */
  gpm_s: number;
  sm_active: number | null;
  sm_occupancy: number | null;
  tensor_active: number | null;
  dram_active: number | null;
  fp64_active: number | null;
  fp32_active: number | null;
  fp16_active: number | null;
  nvlink_bytes: number | null;
  pcie_bytes: number | null;
}

export interface EfficiencyIdle {
  basis: IdleBasis;
  /** Idle seconds (GPU-seconds for the job). */
  seconds: number;
  longest_s: number;
  /** ISO time the longest stretch began; null without one. */
  longest_start: string | null;
}

export interface EfficiencyVerdict {
  class: EfficiencyClass;
  /** The rule that matched, with the figures it compared. */
  rule: string;
  /** 0..1 (docs/jobs.md); null without GPM. */
  score: number | null;
}

/** A GPU's part of the section: by UUID (its node is the report's GPU row's, which each source names its own way). */
export interface GpuEfficiency extends EfficiencyVerdict {
  uuid: string;
  index: number | null;
  util_mean: number | null;
  means: EfficiencyMeans | null;
  idle: EfficiencyIdle;
}

export interface EfficiencySection {
  /** GPUs of the job with GPM figures, of all its GPUs. */
  gpus_with_gpm: number;
  gpus: GpuEfficiency[];
  job: EfficiencyVerdict & {
    util_mean: number | null;
    /** Means over the GPUs with GPM, each weighted by its GPM seconds; bytes added up. */
    means: EfficiencyMeans | null;
    idle: EfficiencyIdle & { longest_gpu: string | null };
    /** SM activity across the job's GPUs with GPM (two or more): max over min; ratio null when the least is 0. */
    imbalance: { max: number; min: number; ratio: number | null; max_gpu: string; min_gpu: string } | null;
  };
}
