/**
 * The configuration schema and the attribution providers, apart from the
 * plugins' and sinks' code: what `l9gpu jobs` needs to read a configuration
 * and name the node, without loading any plugin or sink (the CLI starts in
 * a fraction of the time). catalog.ts checks that its manifests carry these
 * very sections, so the two cannot drift apart.
 */
import type { AttributionManifest } from '../src/core/attribution.js';
import { loadConfig, type Config, type LoadOptions } from '../src/core/config/load.js';
import type { SectionSpec } from '../src/core/config/schema.js';
import { daemonSection } from '../src/core/config/sections.js';
import { JOBS_SECTION } from '../src/jobs/config.js';
import { HEALTH_SECTION } from '../src/health/config.js';
import { LIMITS_SECTION } from '../src/core/limits.js';
import { FILE_SECTION, OTLP_SECTION, PROMETHEUS_SECTION, STDOUT_SECTION, WEBHOOK_SECTION } from '../src/sinks/sections.js';
import { AMDSMI_SECTION } from '../plugins/amdsmi/config.js';
import { HLSMI_SECTION } from '../plugins/hlsmi/config.js';
import { HOST_SECTION } from '../plugins/host/config.js';
import { NVML_SECTION } from '../plugins/nvml/config.js';
import { SIM_SECTION } from '../plugins/sim/config.js';
import { VLLM_SECTION } from '../plugins/vllm/config.js';
import { SGLANG_SECTION } from '../plugins/sglang/config.js';
import { TGI_SECTION } from '../plugins/tgi/config.js';
import { TRITON_SECTION } from '../plugins/triton/config.js';
import { NIM_SECTION } from '../plugins/nim/config.js';
import { DCGM_SECTION } from '../plugins/dcgm/config.js';
import { NCCL_SECTION } from '../plugins/nccl/config.js';
import { slurmAttribution } from '../slurm/manifest.js';
import { kubernetesAttribution } from '../src/attribution/kubernetes/manifest.js';
import { checkNames, resolveAttribution, type ResolvedAttribution } from './selection.js';

/** In the order the catalog lists the plugins and sinks (doctor, docs). */
export const PLUGIN_SECTIONS: readonly SectionSpec[] = [HOST_SECTION, NVML_SECTION, AMDSMI_SECTION, HLSMI_SECTION, SIM_SECTION, VLLM_SECTION, SGLANG_SECTION, TGI_SECTION, TRITON_SECTION, NIM_SECTION, DCGM_SECTION, NCCL_SECTION];
export const SINK_SECTIONS: readonly SectionSpec[] = [OTLP_SECTION, PROMETHEUS_SECTION, STDOUT_SECTION, FILE_SECTION, WEBHOOK_SECTION];
export const ATTRIBUTIONS: readonly AttributionManifest[] = [slurmAttribution, kubernetesAttribution];

export const PLUGIN_NAMES = PLUGIN_SECTIONS.map((s) => s.name);
export const SINK_NAMES = SINK_SECTIONS.map((s) => s.name);
export const ATTRIBUTION_NAMES = ATTRIBUTIONS.map((a) => a.name);

export const ALL_SECTIONS: readonly SectionSpec[] = (() => {
  const all = [
    daemonSection({ plugins: PLUGIN_NAMES, sinks: SINK_NAMES, attributions: ATTRIBUTION_NAMES }),
    ...ATTRIBUTIONS.flatMap((a) => a.sections),
    JOBS_SECTION,
    HEALTH_SECTION,
    LIMITS_SECTION,
    ...PLUGIN_SECTIONS,
    ...SINK_SECTIONS,
  ];
  const seen = new Set<string>();
  for (const s of all) {
    if (seen.has(s.name)) throw new Error(`config schema: section [${s.name}] defined twice`);
    seen.add(s.name);
  }
  return all;
})();

/** Loads and validates the agent's configuration; throws ConfigError naming file, section and key. */
export function loadAgentConfig(opts: Omit<LoadOptions, 'sections'>): Config {
  const cfg = loadConfig({ ...opts, sections: ALL_SECTIONS });
  checkNames(cfg, 'plugins', PLUGIN_NAMES);
  checkNames(cfg, 'sinks', SINK_NAMES);
  return cfg;
}

export const resolveAgentAttribution = (cfg: Config, env: NodeJS.ProcessEnv = process.env): ResolvedAttribution =>
  resolveAttribution({ plugins: [], sinks: [], attributions: ATTRIBUTIONS }, cfg, env);
