/** The [host] section of the configuration: apart from the plugin's code, so that reading a configuration loads no plugin. */
import { pluginSection } from '../../src/core/config/sections.js';

export const HOST_SECTION = pluginSection('host', 'Host CPU, memory and load from /proc.', [
  {
    key: 'proc_path',
    type: 'path',
    required: true,
    default: '/proc',
    description: "Where procfs is mounted (a container may mount the host's elsewhere).",
  },
]);
