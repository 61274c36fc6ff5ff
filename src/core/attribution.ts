/**
 * The attribution contract: one pure transform applied to every batch between
 * the plugins and the job ledger, adding job attributes to GPU points (like
 * dcgm-exporter's "transformations") and saying which jobs hold each GPU and
 * with what share. It writes nothing: the ledger downstream keeps rollups,
 * inventory and job-end summaries from the attributed batch alone, so Slurm,
 * Kubernetes and any later provider share it.
 */
import type { Database } from 'better-sqlite3';
import type { Config } from './config/load.js';
import type { SectionSpec } from './config/schema.js';
import type { BudgetLedger } from './limits.js';
import type { JobLabels } from './job-labels.js';
import type { Logger } from './log.js';
import type { Attributes, Batch, Emitter } from './metrics/model.js';

export interface AttributionProvider {
  readonly name: string;
  /**
   * The batch with job attributes on its GPU points (a point of a shared GPU
   * is emitted once per job) and `jobs` set: every bound GPU's jobs and shares.
   */
  attribute(batch: Batch): Batch;
  /** One line for doctor and logs. */
  status(): string;
  /** The provider's own health for the self-metrics. */
  collectSelf?(out: Emitter): void;
  close?(): void;
}

export const noneProvider: AttributionProvider = {
  name: 'none',
  attribute: (b) => b,
  status: () => 'none: GPU points carry no job attributes',
};

export interface AttributionContext {
  readonly config: Config;
  readonly log: Logger;
  readonly env: NodeJS.ProcessEnv;
  /** The node's store, opened by the agent when the manifest asks for it; the job ledger shares the connection. */
  readonly store: Database;
  /** [limits] label_length, and the agent's ledger: job names and pod labels are users' (default: 256, a ledger of its own). */
  readonly labelLength?: number;
  readonly budgets?: BudgetLedger;
  /** [attribution]: whether GPU points carry the runs' attributes, and which (default: all, on every point). */
  readonly jobLabels?: JobLabels;
  /**
   * The store is another daemon's (`daemon --once` beside it), opened
   * read-only: attribute from the runs it holds, write nothing (no
   * reconciler, no pod sync).
   */
  readonly readOnly?: boolean;
}

export interface Detection {
  /** `attribution = auto` picks the first provider (in the root's order) that detects its scheduler here. */
  readonly ok: boolean;
  readonly detail: string;
}

/** What doctor shows of a provider: lines for people, a value for --json, and how many problems it found. */
export interface DoctorSection {
  readonly lines: readonly string[];
  readonly json: unknown;
  readonly problems: number;
}

export interface AttributionManifest {
  readonly name: string;
  readonly description: string;
  readonly sections: readonly SectionSpec[];
  /** Registry names of the metrics the provider itself emits (shares, its own health). */
  readonly metrics: readonly string[];
  detect(cfg: Config, env: NodeJS.ProcessEnv): Detection;
  create(ctx: AttributionContext): Promise<AttributionProvider>;
  doctor(cfg: Config, env: NodeJS.ProcessEnv): Promise<DoctorSection>;
  /** The jobs holding each GPU now, by GPU UUID, as their points' attributes (for `l9gpu gpus`). */
  jobsByGpu(cfg: Config): Promise<ReadonlyMap<string, readonly Attributes[]>>;
  /** This node's name in the scheduler, as job reports label it (from the store the report reads). */
  nodeName(cfg: Config, env: NodeJS.ProcessEnv, store: Database): string;
}
