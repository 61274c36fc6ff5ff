/** Every plugin l9gpu has, by name. A new plugin is one folder plus one line here. */
import type { PluginFactory } from '../src/plugin.js';
import { amdsmiPlugin } from './amdsmi/index.js';
import { hlsmiPlugin } from './hlsmi/index.js';
import { hostPlugin } from './host/index.js';
import { nvmlPlugin } from './nvml/index.js';
import { simPlugin } from './sim/index.js';

export const PLUGINS: readonly PluginFactory[] = [hostPlugin, nvmlPlugin, amdsmiPlugin, hlsmiPlugin, simPlugin];
