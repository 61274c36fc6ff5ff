/** The [nim] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const NIM_SPEC: ScrapedSpec = {
  name: 'nim',
  description: "NVIDIA NIM for LLMs' /v1/metrics.",
  defaultEndpoints: ['http://127.0.0.1:8000/v1/metrics'],
  // endpoints = auto: the process that serves the page, by its command line
  discover: {
    cmdline: /\bvllm_nvext\b|\bnim[_-]llm\b|\/opt\/nim\//,
    paths: ['/v1/metrics', '/metrics'],
    recognize: /^(?:num_requests_running|time_to_first_token_seconds|prompt_tokens)(?:_total)?$/,
  },
};
export const NIM_SECTION = scrapedSection(NIM_SPEC);
