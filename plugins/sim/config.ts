/** The [sim] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const SIM_SECTION = pluginSection('sim', 'Simulated GPUs for demos; never enable on real GPU nodes.', [
  { key: 'gpus', type: 'int', default: 8, min: 1, max: 256, description: 'Number of simulated GPUs.' },
  { key: 'model', type: 'string', default: 'l9gpu Sim H100 80GB', description: 'gpu.model of every simulated GPU.' },
  {
    key: 'memory',
    type: 'bytes',
    default: 85_899_345_920,
    min: 1_048_576,
    example: '80GiB',
    description: 'Device memory of each simulated GPU.',
  },
  { key: 'power_limit', type: 'number', default: 700, min: 100, max: 2000, description: 'Power limit of each simulated GPU, W.' },
  { key: 'seed', type: 'int', default: null, example: '42', description: 'Random seed (default: from the host name).' },
]);
