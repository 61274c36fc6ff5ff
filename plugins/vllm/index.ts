/**
 * vLLM's /metrics (prometheus_client): every series of the families below,
 * every model and engine. Names and renames from vllm/v1/metrics/loggers.py;
 * the current name first, the one it replaced after.
 */
import { findMetric, metric } from '../../src/core/metrics/registry.js';
import { engineRules, tableMetrics, type EngineTable } from '../../src/scrape/convert.js';
import { scrapedPlugin } from '../../src/scrape/engine-plugin.js';
import { VLLM_SECTION, VLLM_SPEC } from './config.js';

export const VLLM_TABLE: EngineTable = {
  engine: 'vllm',
  labels: { model_name: 'gen_ai.request.model' },
  rules: engineRules(
    'vllm',
    [
      ['requests.running', ['vllm:num_requests_running']],
      ['requests.waiting', ['vllm:num_requests_waiting']],
      ['kv_cache.usage', ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc']],
      ['tokens.prompt', ['vllm:prompt_tokens']],
      ['tokens.generation', ['vllm:generation_tokens']],
      ['preemptions', ['vllm:num_preemptions']],
      ['requests.finished', ['vllm:request_success']],
      ['prefix_cache.queries', ['vllm:prefix_cache_queries', 'vllm:gpu_prefix_cache_queries']],
      ['prefix_cache.hits', ['vllm:prefix_cache_hits', 'vllm:gpu_prefix_cache_hits']],
      ['time_to_first_token', ['vllm:time_to_first_token_seconds'], { also: metric('gen_ai.server.time_to_first_token') }],
      [
        'inter_token_latency',
        ['vllm:inter_token_latency_seconds', 'vllm:time_per_output_token_seconds'],
        { also: metric('gen_ai.server.time_per_output_token') },
      ],
      ['request.duration', ['vllm:e2e_request_latency_seconds'], { also: metric('gen_ai.server.request.duration') }],
      ['request.queue_time', ['vllm:request_queue_time_seconds']],
      ['request.prefill_time', ['vllm:request_prefill_time_seconds']],
      ['request.decode_time', ['vllm:request_decode_time_seconds']],
      ['request.prompt_tokens', ['vllm:request_prompt_tokens']],
      ['request.generation_tokens', ['vllm:request_generation_tokens']],
      ['iteration.tokens', ['vllm:iteration_tokens_total']],
    ],
    findMetric,
  ),
};

export const vllmPlugin = scrapedPlugin(VLLM_SPEC, VLLM_SECTION, VLLM_TABLE, tableMetrics(VLLM_TABLE));
