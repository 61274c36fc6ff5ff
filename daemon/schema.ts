/**
 * The composition root's one table: every plugin and sink l9gpu has, one row
 * each, with its config section and a loader of its manifest, and the
 * attribution providers. Reading a configuration needs the sections alone:
 * `l9gpu jobs` names the node and reads its settings without loading any
 * plugin's or sink's code (the CLI starts in a fraction of the time); the
 * loaders bring the code in when the daemon, doctor or `l9gpu gpus` need it
 * (catalog.ts: every manifest, loaded).
 */
import type { AttributionManifest } from '../src/core/attribution.js';
import type { PluginContext, PluginManifest } from '../src/core/plugin.js';
import type { SinkManifest } from '../src/core/sink.js';
import { loadConfig, type Config, type LoadOptions } from '../src/core/config/load.js';
import type { SectionSpec } from '../src/core/config/schema.js';
import { daemonSection } from '../src/core/config/sections.js';
import { JOBS_SECTION } from '../src/jobs/config.js';
import { HEALTH_SECTION } from '../src/health/config.js';
import { LIMITS_SECTION } from '../src/core/limits.js';
import { ATTRIBUTION_SECTION } from '../src/core/job-labels.js';
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
import { checkNames, resolveAttribution, selectPlugins, type PluginSelection, type ResolvedAttribution } from './selection.js';

/** A plugin or sink: its config section (named as it is), and its manifest's module, loaded when called. */
interface Row<M> {
  readonly section: SectionSpec;
  readonly load: () => Promise<M>;
}

/** In this order doctor and the docs list them. */
const PLUGIN_ROWS: readonly Row<PluginManifest>[] = [
  { section: HOST_SECTION, load: async () => (await import('../plugins/host/index.js')).hostPlugin },
  { section: NVML_SECTION, load: async () => (await import('../plugins/nvml/index.js')).nvmlPlugin },
  { section: AMDSMI_SECTION, load: async () => (await import('../plugins/amdsmi/index.js')).amdsmiPlugin },
  { section: HLSMI_SECTION, load: async () => (await import('../plugins/hlsmi/index.js')).hlsmiPlugin },
  { section: SIM_SECTION, load: async () => (await import('../plugins/sim/index.js')).simPlugin },
  { section: VLLM_SECTION, load: async () => (await import('../plugins/vllm/index.js')).vllmPlugin },
  { section: SGLANG_SECTION, load: async () => (await import('../plugins/sglang/index.js')).sglangPlugin },
  { section: TGI_SECTION, load: async () => (await import('../plugins/tgi/index.js')).tgiPlugin },
  { section: TRITON_SECTION, load: async () => (await import('../plugins/triton/index.js')).tritonPlugin },
  { section: NIM_SECTION, load: async () => (await import('../plugins/nim/index.js')).nimPlugin },
  { section: DCGM_SECTION, load: async () => (await import('../plugins/dcgm/index.js')).dcgmPlugin },
  { section: NCCL_SECTION, load: async () => (await import('../plugins/nccl/index.js')).ncclPlugin },
];
const SINK_ROWS: readonly Row<SinkManifest>[] = [
  { section: OTLP_SECTION, load: async () => (await import('../src/sinks/otlp.js')).otlpSink },
  { section: PROMETHEUS_SECTION, load: async () => (await import('../src/sinks/prometheus.js')).prometheusSink },
  { section: STDOUT_SECTION, load: async () => (await import('../src/sinks/stdout.js')).stdoutSink },
  { section: FILE_SECTION, load: async () => (await import('../src/sinks/file.js')).fileSink },
  { section: WEBHOOK_SECTION, load: async () => (await import('../src/sinks/webhook.js')).webhookSink },
];
export const ATTRIBUTIONS: readonly AttributionManifest[] = [slurmAttribution, kubernetesAttribution];

/**
 * Every row's manifest, in the table's order, loaded once. A loader that
 * answers with another section's manifest (a row copied and half edited)
 * throws naming the row.
 */
function loader<M extends { readonly name: string; readonly section: SectionSpec }>(rows: readonly Row<M>[]): () => Promise<readonly M[]> {
  let loaded: Promise<readonly M[]> | undefined;
  const one = async (r: Row<M>): Promise<M> => {
    const m = await r.load();
    if (m.section !== r.section || m.name !== r.section.name)
      throw new Error(`daemon/schema.ts: the row of [${r.section.name}] loads the manifest of "${m.name}" ([${m.section.name}])`);
    return m;
  };
  return () => (loaded ??= Promise.all(rows.map(one)));
}

export const loadPlugins = loader(PLUGIN_ROWS);
export const loadSinks = loader(SINK_ROWS);
export const selectAgentPlugins = async (cfg: Config, ctx: PluginContext): Promise<PluginSelection> =>
  selectPlugins({ plugins: await loadPlugins() }, cfg, ctx);

const PLUGIN_SECTIONS = PLUGIN_ROWS.map((r) => r.section);
const SINK_SECTIONS = SINK_ROWS.map((r) => r.section);
export const PLUGIN_NAMES = PLUGIN_SECTIONS.map((s) => s.name);
export const SINK_NAMES = SINK_SECTIONS.map((s) => s.name);
export const ATTRIBUTION_NAMES = ATTRIBUTIONS.map((a) => a.name);

export const ALL_SECTIONS: readonly SectionSpec[] = (() => {
  const all = [
    daemonSection({ plugins: PLUGIN_NAMES, sinks: SINK_NAMES, attributions: ATTRIBUTION_NAMES }),
    ATTRIBUTION_SECTION,
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
