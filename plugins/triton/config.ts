/** The [triton] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const TRITON_SPEC: ScrapedSpec = {
  name: 'triton',
  description: "NVIDIA Triton Inference Server's metrics port (tritonserver, :8002/metrics).",
  defaultEndpoints: ['http://127.0.0.1:8002/metrics'],
  // endpoints = auto: the process that serves the page, by its command line
  discover: { cmdline: /\btritonserver\b/, paths: ['/metrics'], recognize: /^nv_inference_/ },
};
export const TRITON_SECTION = scrapedSection(TRITON_SPEC);
