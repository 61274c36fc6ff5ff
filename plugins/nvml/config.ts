/** The [nvml] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const DEFAULT_LIBRARY = 'libnvidia-ml.so.1';

export const NVML_SECTION = pluginSection('nvml', 'NVIDIA GPUs through NVML.', [
    { key: 'library', type: 'string', default: DEFAULT_LIBRARY, env: [{ name: 'L9GPU_NVML_LIBRARY' }], description: 'NVML library: a file name searched like dlopen does, or an absolute path.' },
    { key: 'processes', type: 'bool', default: true, description: 'Report running compute processes (count, and memory per pid).' },
    { key: 'events', type: 'bool', default: true, description: 'Count Xid errors from an NVML event set (waited on off the event loop, 1 s at a time).' },
  ]);
