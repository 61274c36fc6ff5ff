/** The [nim] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const NIM_SPEC: ScrapedSpec = { name: 'nim', description: "NVIDIA NIM for LLMs' /v1/metrics.", defaultEndpoints: ['http://127.0.0.1:8000/v1/metrics'] };
export const NIM_SECTION = scrapedSection(NIM_SPEC);
