/** The [dcgm] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { defineSection } from '../../src/core/config/schema.js';
import { scrapedSection, type ScrapedSpec } from '../../src/scrape/section.js';

export const DCGM_SPEC: ScrapedSpec = {
  name: 'dcgm',
  description: "NVIDIA dcgm-exporter's /metrics: GPU fields onto the gpu.* metrics, keyed by UUID (and GPU instance on MIG).",
  defaultEndpoints: ['http://127.0.0.1:9400/metrics'],
};
const scraped = scrapedSection(DCGM_SPEC);
export const DCGM_SECTION = defineSection({
  ...scraped,
  keys: [
    ...scraped.keys,
    {
      key: 'gpu_fields',
      type: 'enum',
      values: ['auto', 'always', 'never'],
      default: 'auto',
      description:
        'Whether the gpu.* fields (utilization, memory, power, energy, clocks, temperatures) go ' +
        'out: auto = not while the nvml plugin runs ([daemon] plugins names nvml or auto), which ' +
        'reads them itself, so that no GPU is counted twice; the profiling fields (dcgm.prof.*) ' +
        'always go out.',
    },
  ],
});
