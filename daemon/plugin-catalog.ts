/**
 * The composition root's plugin half: every plugin l9gpu has, one line each
 * (daemon/catalog.ts adds the sinks and re-exports these). `l9gpu gpus`
 * imports this alone: no sink's module (http, zlib) loads to list GPUs.
 */
import type { Config } from '../src/core/config/load.js';
import type { PluginContext, PluginManifest } from '../src/core/plugin.js';
import { amdsmiPlugin } from '../plugins/amdsmi/index.js';
import { hlsmiPlugin } from '../plugins/hlsmi/index.js';
import { hostPlugin } from '../plugins/host/index.js';
import { nvmlPlugin } from '../plugins/nvml/index.js';
import { simPlugin } from '../plugins/sim/index.js';
import { vllmPlugin } from '../plugins/vllm/index.js';
import { sglangPlugin } from '../plugins/sglang/index.js';
import { tgiPlugin } from '../plugins/tgi/index.js';
import { tritonPlugin } from '../plugins/triton/index.js';
import { nimPlugin } from '../plugins/nim/index.js';
import { dcgmPlugin } from '../plugins/dcgm/index.js';
import { ncclPlugin } from '../plugins/nccl/index.js';
import { PLUGIN_SECTIONS } from './schema.js';
import { selectPlugins, type PluginSelection } from './selection.js';

export const PLUGINS: readonly PluginManifest[] = [hostPlugin, nvmlPlugin, amdsmiPlugin, hlsmiPlugin, simPlugin, vllmPlugin, sglangPlugin, tgiPlugin, tritonPlugin, nimPlugin, dcgmPlugin, ncclPlugin];

// the light schema (what the CLI reads a configuration with) and the manifests list the same sections
if (PLUGINS.length !== PLUGIN_SECTIONS.length || PLUGINS.some((m, i) => m.section !== PLUGIN_SECTIONS[i] || m.name !== PLUGIN_SECTIONS[i]!.name)) {
  throw new Error('catalog: the plugin manifests and daemon/schema.ts list different sections');
}

export const selectAgentPlugins = (cfg: Config, ctx: PluginContext): Promise<PluginSelection> => selectPlugins({ plugins: PLUGINS }, cfg, ctx);
