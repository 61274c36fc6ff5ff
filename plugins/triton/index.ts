/**
 * NVIDIA Triton's metrics port (prometheus-cpp): counters without _total,
 * labels model and version; the cumulative *_duration_us counters are
 * microseconds, converted to seconds. Its GPU gauges (nv_gpu_*) are left to
 * the nvml plugin, which reads the same GPUs by UUID.
 */
import { findMetric } from '../../src/core/metrics/registry.js';
import { engineRules, tableMetrics, type EngineTable } from '../../src/scrape/convert.js';
import { scrapedPlugin } from '../../src/scrape/engine-plugin.js';
import { TRITON_SECTION, TRITON_SPEC } from './config.js';

const US = 1e-6;

export const TRITON_TABLE: EngineTable = {
  engine: 'triton',
  labels: { model: 'gen_ai.request.model', version: 'triton.model.version' },
  rules: engineRules(
    'triton',
    [
      ['requests.succeeded', ['nv_inference_request_success']],
      ['requests.failed', ['nv_inference_request_failure']],
      ['inferences', ['nv_inference_count']],
      ['executions', ['nv_inference_exec_count']],
      ['requests.pending', ['nv_inference_pending_request_count']],
      ['request.time', ['nv_inference_request_duration_us'], { scale: US }],
      ['queue.time', ['nv_inference_queue_duration_us'], { scale: US }],
      ['compute.time', ['nv_inference_compute_input_duration_us'], { scale: US, attributes: { 'triton.phase': 'input' } }],
      ['compute.time', ['nv_inference_compute_infer_duration_us'], { scale: US, attributes: { 'triton.phase': 'infer' } }],
      ['compute.time', ['nv_inference_compute_output_duration_us'], { scale: US, attributes: { 'triton.phase': 'output' } }],
    ],
    findMetric,
  ),
};

export const tritonPlugin = scrapedPlugin(TRITON_SPEC, TRITON_SECTION, TRITON_TABLE, tableMetrics(TRITON_TABLE));
