/**
 * Pipeline throughput: data points per second from a plugin's emit (registry
 * definitions) through an attribution transform that adds job attributes, to
 * an encoded OTLP/HTTP protobuf request, for 8 GPUs x 60 metrics per batch.
 */
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import type { AttributionProvider } from '../src/core/attribution.js';
import { PointBuffer, type Attributes, type Batch } from '../src/core/metrics/model.js';
import { METRICS, type MetricDef } from '../src/core/metrics/registry.js';
import { toResourceMetrics } from '../src/sinks/resource-metrics.js';
import { encodeMetricsRequest } from '../src/sinks/otlp-proto.js';

const GPUS = 8;
const PER_GPU = 60;

/** 60 series per GPU: every GPU metric of the registry, repeated over attribute variants. */
export function seriesPlan(): { def: MetricDef; extra: Attributes }[] {
  const gpuDefs = METRICS.filter((d) => d.scope === 'gpu');
  const plan: { def: MetricDef; extra: Attributes }[] = [];
  for (let i = 0; plan.length < PER_GPU; i++) {
    const def = gpuDefs[i % gpuDefs.length]!;
    const extra: Attributes = {};
    for (const k of def.attributes) extra[k] = `v${Math.floor(i / gpuDefs.length)}`;
    plan.push({ def, extra });
  }
  return plan;
}

/** Stands in for the Slurm provider: UUID -> job attributes from a map, a copy per point. */
function jobAttribution(uuids: string[]): AttributionProvider {
  const jobs = new Map(
    uuids.map((u, i) => [
      u,
      { 'slurm.job.id': String(1000 + (i >> 1)), 'slurm.user': 'alice', 'slurm.account': 'physics', 'slurm.partition': 'gpu' },
    ]),
  );
  return {
    name: 'slurm',
    status: () => 'bench',
    attribute(b: Batch): Batch {
      const points = b.points.map((p) => {
        const job = jobs.get(p.attributes['gpu.uuid'] as string);
        return job ? { ...p, attributes: { ...p.attributes, ...job } } : p;
      });
      return { ...b, points };
    },
  };
}

export interface PipelineResult {
  pointsPerBatch: number;
  pointsPerSecond: number;
  pointsPerSecondGzip: number;
  /** The same batches through OpenTelemetry's serializer (what the daemon used before its own encoder). */
  pointsPerSecondOtel: number;
  bytesPerBatch: number;
  bytesPerBatchGzip: number;
}

export function benchPipeline(seconds = 2): PipelineResult {
  const plan = seriesPlan();
  const gpus = Array.from({ length: GPUS }, (_, i): Attributes => ({
    'gpu.index': i,
    'gpu.uuid': `GPU-bench-${i}`,
    'gpu.model': 'NVIDIA H100 80GB HBM3',
    'gpu.vendor': 'nvidia',
    'gpu.pci.bus_id': `00000000:${(0x18 + i).toString(16)}:00.0`,
  }));
  // attribute objects are built once per series, as a plugin caches them per GPU
  const attrs = gpus.map((g) => plan.map((s) => ({ ...g, ...s.extra })));
  const attribution = jobAttribution(gpus.map((g) => g['gpu.uuid'] as string));
  const resource = { 'service.name': 'l9gpu', 'host.name': 'gpu001', 'cluster.name': 'bench' };
  const start = Date.now();

  // the daemon's encoder (otlp-proto.ts); OpenTelemetry's serializer alongside, as the baseline of the same run
  const encoders = {
    ours: (batch: Batch) => encodeMetricsRequest([batch], resource, start, '0'),
    otel: (batch: Batch) => ProtobufMetricsSerializer.serializeRequest(toResourceMetrics([batch], resource, start, '0'))!,
  };
  const once = (gzip: boolean, encode: (b: Batch) => Uint8Array = encoders.ours): number => {
    const buf = new PointBuffer();
    for (let g = 0; g < GPUS; g++) for (let s = 0; s < PER_GPU; s++) buf.add(plan[s]!.def, Math.random() * 100, attrs[g]![s]!);
    const batch = attribution.attribute({ source: 'bench', time: Date.now(), intervalMs: 10_000, points: buf.points });
    const body = encode(batch);
    return gzip ? gzipSync(body).length : body.length;
  };
  const run = (gzip: boolean, encode?: (b: Batch) => Uint8Array): { pps: number; bytes: number } => {
    for (let i = 0; i < 200; i++) once(gzip, encode); // warm up the JIT
    let n = 0;
    let bytes = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < seconds * 1000) {
      bytes = once(gzip, encode);
      n++;
    }
    return { pps: (n * GPUS * PER_GPU) / ((performance.now() - t0) / 1000), bytes };
  };
  const plain = run(false);
  const gz = run(true);
  const otel = run(false, encoders.otel);
  return {
    pointsPerBatch: GPUS * PER_GPU,
    pointsPerSecond: plain.pps,
    pointsPerSecondGzip: gz.pps,
    pointsPerSecondOtel: otel.pps,
    bytesPerBatch: plain.bytes,
    bytesPerBatchGzip: gz.bytes,
  };
}
