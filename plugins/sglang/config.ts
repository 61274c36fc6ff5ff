/** The [sglang] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const SGLANG_SPEC: ScrapedSpec = {
  name: 'sglang',
  description: "SGLang's /metrics (sglang.launch_server --enable-metrics).",
  defaultEndpoints: ['http://127.0.0.1:30000/metrics'],
  // endpoints = auto: the process that serves the page, by its command line
  discover: { cmdline: /\bsglang(?:\.launch_server\b|\s+serve\b)/, paths: ['/metrics'], recognize: /^sglang:/ },
};
export const SGLANG_SECTION = scrapedSection(SGLANG_SPEC);
