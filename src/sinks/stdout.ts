/** JSON lines on stdout (the contract in jsonl.ts); logs go to stderr. */
import { STDOUT_SECTION } from './sections.js';
import { readSection } from '../core/config/read.js';
import type { Batch } from '../core/metrics/model.js';
import { jsonLines } from './jsonl.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';

class StdoutSink implements Sink {
  readonly name = 'stdout';
  readonly stats = new SinkStats();
  private broken = false;
  private readonly withResource: boolean;
  private readonly maxBuffer: number;

  constructor(
    private readonly ctx: SinkContext,
    private readonly out: NodeJS.WriteStream = process.stdout,
  ) {
    const s = readSection(ctx.config, STDOUT_SECTION);
    this.withResource = s.resource;
    this.maxBuffer = s.max_buffer_bytes;
    // EPIPE (reader went away, e.g. `| head`) must not kill the daemon
    out.on('error', (e) => {
      this.broken = true;
      ctx.log.once('stdout-broken', 'warn', 'stdout is closed: stdout sink stops writing', { error: e.message });
    });
  }

  write(batch: Batch): void {
    if (batch.points.length === 0) return;
    if (this.broken || this.out.writableLength > this.maxBuffer) {
      this.stats.dropped += batch.points.length;
      return;
    }
    this.out.write(jsonLines(batch, this.withResource ? this.ctx.resource : undefined));
    this.stats.exported += batch.points.length;
  }

  async flush(deadline: number): Promise<void> {
    while (this.out.writableLength > 0 && !this.broken && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  }

  close(deadline: number): Promise<void> {
    return this.flush(deadline);
  }
}

export const stdoutSink: SinkManifest = {
  name: 'stdout',
  description: 'JSON lines on standard output',
  section: STDOUT_SECTION,
  create: (ctx) => new StdoutSink(ctx),
  describe: () => 'JSON lines on standard output',
  probe: async () => ({ ok: true, detail: 'standard output' }),
};
