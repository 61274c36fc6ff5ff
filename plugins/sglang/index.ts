/**
 * SGLang's /metrics (--enable-metrics; prometheus_client): names from
 * python/sglang/srt/metrics/collector.py. Early builds labelled the model
 * `name`, later ones `model_name`; the scheduler's tp/pp/ep ranks become
 * sglang.* attributes.
 */
import { findMetric, metric } from '../../src/core/metrics/registry.js';
import { engineRules, tableMetrics, type EngineTable } from '../../src/scrape/convert.js';
import { scrapedPlugin } from '../../src/scrape/engine-plugin.js';
import { SGLANG_SECTION, SGLANG_SPEC } from './config.js';

export const SGLANG_TABLE: EngineTable = {
  engine: 'sglang',
  labels: { model_name: 'gen_ai.request.model', name: 'gen_ai.request.model' },
  rules: engineRules(
    'sglang',
    [
      ['requests.running', ['sglang:num_running_reqs']],
      ['requests.waiting', ['sglang:num_queue_reqs']],
      ['tokens.used', ['sglang:num_used_tokens']],
      ['token_usage', ['sglang:token_usage']],
      ['generation.throughput', ['sglang:gen_throughput']],
      ['cache.hit_rate', ['sglang:cache_hit_rate']],
      ['tokens.prompt', ['sglang:prompt_tokens']],
      ['tokens.generation', ['sglang:generation_tokens']],
      ['tokens.cached', ['sglang:cached_tokens']],
      ['requests', ['sglang:num_requests']],
      ['time_to_first_token', ['sglang:time_to_first_token_seconds'], { also: metric('gen_ai.server.time_to_first_token') }],
      [
        'inter_token_latency',
        ['sglang:inter_token_latency_seconds', 'sglang:time_per_output_token_seconds'],
        { also: metric('gen_ai.server.time_per_output_token') },
      ],
      ['request.duration', ['sglang:e2e_request_latency_seconds'], { also: metric('gen_ai.server.request.duration') }],
      ['request.queue_time', ['sglang:queue_time_seconds']],
    ],
    findMetric,
  ),
};

export const sglangPlugin = scrapedPlugin(SGLANG_SPEC, SGLANG_SECTION, SGLANG_TABLE, tableMetrics(SGLANG_TABLE));
