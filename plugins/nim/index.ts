/**
 * NVIDIA NIM for LLMs' /v1/metrics: unprefixed names (not the nvidia_nim_*
 * the original l9gpu expected, which NIM does not expose).
 */
import { findMetric, metric } from '../../src/core/metrics/registry.js';
import { engineRules, tableMetrics, type EngineTable } from '../../src/scrape/convert.js';
import { scrapedPlugin } from '../../src/scrape/engine-plugin.js';
import { NIM_SECTION, NIM_SPEC } from './config.js';

export const NIM_TABLE: EngineTable = {
  engine: 'nim',
  labels: { model_name: 'gen_ai.request.model' },
  rules: engineRules(
    'nim',
    [
      ['requests.running', ['num_requests_running']],
      ['requests.waiting', ['num_requests_waiting']],
      ['requests.max', ['num_request_max']],
      ['kv_cache.usage', ['gpu_cache_usage_perc']],
      ['tokens.prompt', ['prompt_tokens']],
      ['tokens.generation', ['generation_tokens']],
      ['requests.finished', ['request_finish']],
      ['requests.succeeded', ['request_success']],
      ['requests.failed', ['request_failure']],
      ['time_to_first_token', ['time_to_first_token_seconds'], { also: metric('gen_ai.server.time_to_first_token') }],
      ['time_per_output_token', ['time_per_output_token_seconds'], { also: metric('gen_ai.server.time_per_output_token') }],
      ['request.duration', ['e2e_request_latency_seconds'], { also: metric('gen_ai.server.request.duration') }],
      ['request.prompt_tokens', ['request_prompt_tokens']],
      ['request.generation_tokens', ['request_generation_tokens']],
    ],
    findMetric,
  ),
};

export const nimPlugin = scrapedPlugin(NIM_SPEC, NIM_SECTION, NIM_TABLE, tableMetrics(NIM_TABLE));
