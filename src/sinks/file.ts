/**
 * JSON lines appended to a file, rotated by size: path -> path.1 -> ... ->
 * path.<max_files>, the oldest deleted. Synchronous writes: a tick is a few
 * hundred lines, and a rotation must not interleave with a write.
 */
import { FILE_SECTION } from './sections.js';
import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../core/config/schema.js';
import type { Config } from '../core/config/load.js';
import type { Batch } from '../core/metrics/model.js';
import { jsonLines } from './jsonl.js';
import { makeDirs } from '../core/make-dirs.js';
import { dirWritable } from '../core/probe.js';
import { SinkStats, type Sink, type SinkContext, type SinkManifest } from '../core/sink.js';

class FileSink implements Sink {
  readonly name = 'file';
  readonly stats = new SinkStats();
  private fd = -1;
  private size = 0;
  private readonly path: string;
  private readonly maxBytes: number;
  private readonly maxFiles: number;
  private readonly withResource: boolean;

  constructor(private readonly ctx: SinkContext) {
    const p = ctx.config.str('file', 'path');
    if (!p) throw new ConfigError('[file] path: required when the file sink is enabled', { section: 'file', key: 'path' });
    this.path = p;
    this.maxBytes = ctx.config.num('file', 'max_bytes')!;
    this.maxFiles = ctx.config.num('file', 'max_files')!;
    this.withResource = ctx.config.bool('file', 'resource');
  }

  async start(): Promise<void> {
    makeDirs(dirname(this.path));
    this.open();
  }

  private open(): void {
    this.fd = openSync(this.path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
  }

  private rotate(): void {
    closeSync(this.fd);
    if (this.maxFiles === 0) rmSync(this.path, { force: true });
    else {
      rmSync(`${this.path}.${this.maxFiles}`, { force: true });
      for (let i = this.maxFiles - 1; i >= 1; i--) {
        try {
          renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        }
      }
      renameSync(this.path, `${this.path}.1`);
    }
    this.open();
  }

  write(batch: Batch): void {
    if (batch.points.length === 0) return;
    const data = Buffer.from(jsonLines(batch, this.withResource ? this.ctx.resource : undefined));
    try {
      if (this.fd < 0) this.open();
      if (this.size > 0 && this.size + data.length > this.maxBytes) this.rotate();
      let off = 0;
      while (off < data.length) off += writeSync(this.fd, data, off);
      this.size += data.length;
      this.stats.exported += batch.points.length;
    } catch (e) {
      this.stats.errors++;
      this.stats.dropped += batch.points.length;
      this.ctx.log.once(`file-${(e as NodeJS.ErrnoException).code ?? 'error'}`, 'error', 'cannot write metrics file', { path: this.path, error: (e as Error).message });
      if (this.fd >= 0) {
        try {
          closeSync(this.fd);
        } catch {
          /* already broken */
        }
      }
      this.fd = -1; // reopen on the next batch
    }
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

export const fileSink: SinkManifest = {
  name: 'file',
  description: 'JSON lines appended to a file with size rotation',
  section: FILE_SECTION,
  create: (ctx) => new FileSink(ctx),
  describe: (c: Config) => `${c.str('file', 'path') ?? '(no [file] path set)'} rotated at ${c.num('file', 'max_bytes')} bytes, ${c.num('file', 'max_files')} kept`,
  probe: async (c: Config) => (c.str('file', 'path') ? dirWritable(dirname(c.str('file', 'path')!)) : { ok: false, detail: '[file] path is not set' }),
};
