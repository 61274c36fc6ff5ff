/** The [hlsmi] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const HLSMI_SECTION = pluginSection('hlsmi', 'Intel Gaudi accelerators through hl-smi.', [
  { key: 'command', type: 'string', default: 'hl-smi', description: 'hl-smi executable: a name searched in PATH, or an absolute path.' },
  { key: 'command_timeout', type: 'duration', default: 5, min: 0.1, max: 120, description: 'Longest one hl-smi run may take.' },
]);
