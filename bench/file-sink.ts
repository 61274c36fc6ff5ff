/**
 * The file sink's synchronous write, which blocks the event loop for its
 * duration: per batch of 8 GPUs x 60 points, with the checks made before each
 * batch (lstat of the path, fstat of the fd), against a bare writeSync of the
 * same bytes to a file opened once (baseline: the write the old sink made).
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadAgentConfig } from '../daemon/catalog.js';
import { createLogger } from '../src/core/log.js';
import type { Batch } from '../src/core/metrics/model.js';
import { pointJson } from '../src/sinks/jsonl.js';
import { fileSink } from '../src/sinks/file.js';
import { seriesPlan } from './pipeline.js';

export interface FileSinkCost {
  pointsPerBatch: number;
  bytesPerBatch: number;
  /** ms per batch through the sink: mean and worst, which is how long the event loop waits. */
  sinkMeanMs: number;
  sinkMaxMs: number;
  /** ms per batch, writeSync of the same bytes alone: mean and worst. */
  bareMeanMs: number;
  bareMaxMs: number;
}

export async function benchFileSink(batches = 2000): Promise<FileSinkCost> {
  const dir = mkdtempSync(join(tmpdir(), 'l9gpu-bench-file-'));
  try {
    const plan = seriesPlan();
    const batch = (t: number): Batch => ({
      source: 'bench',
      time: 1_795_000_000_000 + t * 10_000,
      intervalMs: 10_000,
      points: Array.from({ length: 8 }, (_, g) =>
        plan.map(({ def, extra }) => ({ metric: def, value: t + g, attributes: { 'gpu.index': g, 'gpu.uuid': `GPU-${g}`, ...extra } })),
      ).flat(),
    });
    const resource = { 'service.name': 'l9gpu', 'host.name': 'gpu001' };
    const config = loadAgentConfig({
      env: { L9GPU_CONFIG: '' },
      defaultPath: '/nonexistent/l9gpu.ini',
      overrides: [
        { section: 'file', key: 'path', raw: join(dir, 'sink.jsonl'), flag: 'bench' },
        { section: 'file', key: 'max_bytes', raw: '100GiB', flag: 'bench' },
      ],
    });
    const sink = fileSink.create({ config, log: createLogger('error'), resource, startTime: 0 });
    await sink.start!();
    const fd = openSync(join(dir, 'bare.jsonl'), 'a');
    let total = 0;
    let max = 0;
    let bare = 0;
    let bareMax = 0;
    let bytes = 0;
    // interleaved, so that warm-up and the disk's moods fall on both alike
    for (let i = 0; i < batches; i++) {
      const b = batch(i);
      let t0 = performance.now();
      sink.write(b);
      const dt = performance.now() - t0;
      total += dt;
      if (dt > max) max = dt;
      t0 = performance.now();
      const data = Buffer.from(pointJson(b, resource).join('\n') + '\n');
      for (let off = 0; off < data.length;) off += writeSync(fd, data, off);
      const bt = performance.now() - t0;
      bare += bt;
      if (bt > bareMax) bareMax = bt;
      bytes = data.length;
    }
    closeSync(fd);
    await sink.close(Date.now());
    return {
      pointsPerBatch: batch(0).points.length,
      bytesPerBatch: bytes,
      sinkMeanMs: total / batches,
      sinkMaxMs: max,
      bareMeanMs: bare / batches,
      bareMaxMs: bareMax,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
