/** The [nvml] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const DEFAULT_LIBRARY = 'libnvidia-ml.so.1';

export const NVML_SECTION = pluginSection('nvml', 'NVIDIA GPUs through NVML.', [
  {
    key: 'library',
    type: 'string',
    default: DEFAULT_LIBRARY,
    env: [{ name: 'L9GPU_NVML_LIBRARY' }],
    description: 'NVML library: a file name searched like dlopen does, or an absolute path.',
  },
  { key: 'processes', type: 'bool', default: true, description: 'Report running compute processes (count, and memory per pid).' },
  {
    key: 'state_interval',
    type: 'duration',
    default: 60,
    min: 0,
    max: 3600,
    description:
      "How often each GPU's state is read: MIG mode and instances, graphics and memory clocks, " +
      'performance state, fan. Activity (utilization, memory, power, temperature, SM clock, ' +
      'throttling, errors, processes) is read every tick. A call that stops being supported, or a ' +
      'MIG instance that fails, reads the state again at the next tick. 0: every tick.',
  },
  {
    key: 'events',
    type: 'bool',
    default: true,
    description: 'Count Xid errors from an NVML event set (read without waiting at the end of each sample).',
  },
]);
