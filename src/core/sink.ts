/** The sink contract. Sinks know nothing about plugins or attribution: they get batches. */
import type { Config } from './config/load.js';
import type { SectionSpec } from './config/schema.js';
import type { Logger } from './log.js';
import type { Attributes, Batch, Emitter } from './metrics/model.js';
import type { ProbeResult } from './plugin.js';

/** Counters a sink keeps for the self-metrics and doctor. */
export class SinkStats {
  exported = 0;
  dropped = 0;
  errors = 0;
  queueBytes = 0;
}

export interface SinkContext {
  readonly config: Config;
  readonly log: Logger;
  readonly resource: Attributes;
  /** Start of cumulative series whose plugin gave none (ms since epoch). */
  readonly startTime: number;
}

export interface Sink {
  readonly name: string;
  readonly stats: SinkStats;
  /** Binds ports, opens files. A sink that cannot start is reported and left out; the daemon goes on. */
  start?(): Promise<void>;
  /** Takes a batch; never blocks on the network. */
  write(batch: Batch): void;
  /** Delivers what is buffered, giving up at the deadline (ms since epoch). */
  flush(deadline: number): Promise<void>;
  close(deadline: number): Promise<void>;
  /** The sink's own figures for the self-metrics (the pull endpoint's connections and refusals). */
  collectSelf?(out: Emitter): void;
}

export interface SinkManifest {
  readonly name: string;
  readonly description: string;
  readonly section: SectionSpec;
  create(ctx: SinkContext): Sink;
  /** Doctor's line: where the data goes. */
  describe(cfg: Config): string;
  /** Whether the destination is usable, without sending data. */
  probe(cfg: Config): Promise<ProbeResult>;
}
