/** The [vllm] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const VLLM_SPEC: ScrapedSpec = {
  name: 'vllm',
  description: "vLLM's OpenAI-compatible server /metrics (vllm serve).",
  defaultEndpoints: ['http://127.0.0.1:8000/metrics'],
  // endpoints = auto: the process that serves the page, by its command line
  discover: { cmdline: /\bvllm(?:\s+serve\b|\.entrypoints\.)/, paths: ['/metrics'], recognize: /^vllm:/ },
};
export const VLLM_SECTION = scrapedSection(VLLM_SPEC);
