/** The [amdsmi] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const AMDSMI_SECTION = pluginSection('amdsmi', 'AMD GPUs through the amd-smi CLI.', [
  {
    key: 'command',
    type: 'string',
    default: 'amd-smi',
    description: 'amd-smi executable: a name searched in PATH and /opt/rocm/bin, or an absolute path.',
  },
  { key: 'command_timeout', type: 'duration', default: 5, min: 0.1, max: 120, description: 'Longest one amd-smi run may take.' },
  {
    key: 'static_interval',
    type: 'duration',
    default: 300,
    min: 1,
    description: 'How often identity (UUID, PCI address, model, power cap) is re-read.',
  },
  { key: 'processes', type: 'bool', default: true, description: 'Report running processes (amd-smi process --json).' },
]);
