/**
 * plugins -> attribution -> every sink. One direction: sinks never call back
 * into plugins. A sink that throws is counted and skipped for that batch.
 */
import type { AttributionProvider } from '../attribution/provider.js';
import type { Logger } from '../log.js';
import type { Batch } from '../metrics/model.js';
import type { Sink } from '../sinks/sink.js';

export class Pipeline {
  constructor(
    public attribution: AttributionProvider,
    public sinks: readonly Sink[],
    private readonly log: Logger,
  ) {}

  publish(batch: Batch): void {
    let out = batch;
    try {
      out = this.attribution.attribute(batch);
    } catch (e) {
      this.log.once(`attr-${(e as Error).message}`, 'error', 'attribution failed: sending points without job attributes', { error: (e as Error).message });
    }
    for (const s of this.sinks) {
      try {
        s.write(out);
      } catch (e) {
        s.stats.errors++;
        s.stats.dropped += out.points.length;
        this.log.once(`sink-${s.name}-${(e as Error).message}`, 'error', 'sink failed to take a batch', { sink: s.name, error: (e as Error).message });
      }
    }
  }
}
