/**
 * Hugging Face TGI's /metrics (Rust metrics-exporter-prometheus): counters
 * without _total, no model label (one model per server: the endpoint says
 * which). Its bucketless histograms are summaries and are not read.
 */
import { findMetric, metric } from '../../src/core/metrics/registry.js';
import { engineRules, tableMetrics, type EngineTable } from '../../src/scrape/convert.js';
import { scrapedPlugin } from '../../src/scrape/engine-plugin.js';
import { TGI_SECTION, TGI_SPEC } from './config.js';

export const TGI_TABLE: EngineTable = {
  engine: 'tgi',
  labels: {},
  rules: engineRules(
    'tgi',
    [
      ['queue.size', ['tgi_queue_size']],
      ['batch.size', ['tgi_batch_current_size']],
      ['batch.max_tokens', ['tgi_batch_current_max_tokens']],
      ['requests', ['tgi_request_count']],
      ['requests.succeeded', ['tgi_request_success']],
      ['requests.failed', ['tgi_request_failure']],
      ['request.duration', ['tgi_request_duration'], { also: metric('gen_ai.server.request.duration') }],
      ['request.queue_duration', ['tgi_request_queue_duration']],
      ['request.inference_duration', ['tgi_request_inference_duration']],
      ['request.time_per_token', ['tgi_request_mean_time_per_token_duration'], { also: metric('gen_ai.server.time_per_output_token') }],
      ['request.generated_tokens', ['tgi_request_generated_tokens']],
      ['request.input_length', ['tgi_request_input_length']],
    ],
    findMetric,
  ),
};

export const tgiPlugin = scrapedPlugin(TGI_SPEC, TGI_SECTION, TGI_TABLE, tableMetrics(TGI_TABLE));
