/** The [tgi] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const TGI_SPEC: ScrapedSpec = {
  name: 'tgi',
  description: "Hugging Face Text Generation Inference's /metrics (text-generation-launcher).",
  defaultEndpoints: ['http://127.0.0.1:80/metrics'],
  // endpoints = auto: the process that serves the page, by its command line
  discover: { cmdline: /\btext-generation-router\b/, paths: ['/metrics'], recognize: /^tgi_/ },
};
export const TGI_SECTION = scrapedSection(TGI_SPEC);
