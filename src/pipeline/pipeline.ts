/**
 * plugins -> attribution -> job ledger and health -> every sink. One direction: nothing
 * downstream calls back upstream. A stage that throws is logged once and
 * passed over for that batch (points still go out, without job attributes
 * or ledger output); a sink that throws is counted and skipped.
 */
import { noneProvider, type AttributionProvider } from '../core/attribution.js';
import type { Logger } from '../core/log.js';
import type { Batch, Point } from '../core/metrics/model.js';
import type { Sink } from '../core/sink.js';

/** A stage after attribution as the pipeline sees it (the job ledger, health): an attributed batch in, extra points (job-end summaries,
 * health) out. */
export interface ObserverStage {
  observe(batch: Batch): Point[];
}

/** What the pipeline runs a batch through; each is swapped whole (a reload changes one at a time). */
export interface PipelineStages {
  attribution: AttributionProvider;
  ledger: ObserverStage | undefined;
  /** GPU health (src/health): on every node, attribution or not. */
  health: ObserverStage | undefined;
  sinks: readonly Sink[];
}

export class Pipeline {
  private stages: PipelineStages = { attribution: noneProvider, ledger: undefined, health: undefined, sinks: [] };

  constructor(
    private readonly log: Logger,
    stages: Partial<PipelineStages> = {},
  ) {
    this.configure(stages);
  }

  /** Replaces the stages named (a key given as undefined removes that stage); the others stay as they are. */
  configure(change: Partial<PipelineStages>): void {
    this.stages = { ...this.stages, ...change };
  }

  /** The provider batches are attributed by now (the self-metrics report its status). */
  get attribution(): AttributionProvider {
    return this.stages.attribution;
  }

  publish(batch: Batch): void {
    const { attribution, ledger, health, sinks } = this.stages;
    let out = batch;
    try {
      out = attribution.attribute(batch);
    } catch (e) {
      this.log.once(`attr-${(e as Error).message}`, 'error', 'attribution failed: sending points without job attributes', {
        error: (e as Error).message,
      });
    }
    const attributed = out;
    for (const [stage, what] of [
      [ledger, 'job ledger failed: this batch is not in the job figures'],
      [health, 'health failed: this batch is not judged'],
    ] as const) {
      if (!stage) continue;
      try {
        const extra = stage.observe(attributed);
        if (extra.length) out = { ...out, points: [...out.points, ...extra] };
      } catch (e) {
        this.log.once(`stage-${(e as Error).message}`, 'error', what, { error: (e as Error).message });
      }
    }
    for (const s of sinks) {
      try {
        s.write(out);
      } catch (e) {
        s.stats.errors++;
        s.stats.dropped += out.points.length;
        this.log.once(`sink-${s.name}-${(e as Error).message}`, 'error', 'sink failed to take a batch', {
          sink: s.name,
          error: (e as Error).message,
        });
      }
    }
  }
}
