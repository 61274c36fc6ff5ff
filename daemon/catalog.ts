/**
 * The composition root: every plugin, sink and attribution provider l9gpu
 * has, one line each. A new collector is its folder under plugins/ plus one
 * line in PLUGINS; a new provider is its folder plus one line in
 * ATTRIBUTIONS. Config sections, flag and help lists, doctor, `l9gpu gpus`
 * and the generated docs all come from these lists. Only the CLI, bench and
 * tests import this file (test/layers.test.ts holds everyone to it).
 */
import type { AttributionManifest } from '../src/core/attribution.js';
import { loadConfig, type Config, type LoadOptions } from '../src/core/config/load.js';
import type { SectionSpec } from '../src/core/config/schema.js';
import { daemonSection } from '../src/core/config/sections.js';
import type { PluginContext, PluginManifest } from '../src/core/plugin.js';
import type { SinkManifest } from '../src/core/sink.js';
import { JOBS_SECTION } from '../src/jobs/config.js';
import { fileSink } from '../src/sinks/file.js';
import { otlpSink } from '../src/sinks/otlp.js';
import { prometheusSink } from '../src/sinks/prometheus.js';
import { stdoutSink } from '../src/sinks/stdout.js';
import { webhookSink } from '../src/sinks/webhook.js';
import { amdsmiPlugin } from '../plugins/amdsmi/index.js';
import { hlsmiPlugin } from '../plugins/hlsmi/index.js';
import { hostPlugin } from '../plugins/host/index.js';
import { nvmlPlugin } from '../plugins/nvml/index.js';
import { simPlugin } from '../plugins/sim/index.js';
import { slurmAttribution } from '../slurm/manifest.js';
import { LEDGER_METRICS } from '../src/ledger/ledger.js';
import { SELF_METRICS } from './self-metrics.js';
import { checkNames, resolveAttribution, selectPlugins, type Manifests, type PluginSelection, type ResolvedAttribution } from './selection.js';

export const PLUGINS: readonly PluginManifest[] = [hostPlugin, nvmlPlugin, amdsmiPlugin, hlsmiPlugin, simPlugin];
export const SINKS: readonly SinkManifest[] = [otlpSink, prometheusSink, stdoutSink, fileSink, webhookSink];
export const ATTRIBUTIONS: readonly AttributionManifest[] = [slurmAttribution];

export const MANIFESTS: Manifests = { plugins: PLUGINS, sinks: SINKS, attributions: ATTRIBUTIONS };

export const PLUGIN_NAMES = PLUGINS.map((p) => p.name);
export const SINK_NAMES = SINKS.map((s) => s.name);
export const ATTRIBUTION_NAMES = ATTRIBUTIONS.map((a) => a.name);

export const ALL_SECTIONS: readonly SectionSpec[] = (() => {
  const all = [
    daemonSection({ plugins: PLUGIN_NAMES, sinks: SINK_NAMES, attributions: ATTRIBUTION_NAMES }),
    ...ATTRIBUTIONS.flatMap((a) => a.sections),
    JOBS_SECTION,
    ...PLUGINS.map((p) => p.section),
    ...SINKS.map((s) => s.section),
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

export const selectAgentPlugins = (cfg: Config, ctx: PluginContext): Promise<PluginSelection> => selectPlugins(MANIFESTS, cfg, ctx);
export const resolveAgentAttribution = (cfg: Config, env: NodeJS.ProcessEnv = process.env): ResolvedAttribution => resolveAttribution(MANIFESTS, cfg, env);

/** Metric name -> who emits it: every plugin, provider, the job ledger and the agent itself (docs/metrics.md). */
export const METRIC_EMITTERS: ReadonlyMap<string, readonly string[]> = (() => {
  const m = new Map<string, string[]>();
  const add = (who: string, names: readonly string[]) => {
    for (const n of names) m.set(n, [...(m.get(n) ?? []), who]);
  };
  for (const p of PLUGINS) add(p.name, p.metrics);
  for (const a of ATTRIBUTIONS) add(`${a.name} attribution`, a.metrics);
  add('job ledger', LEDGER_METRICS);
  add('agent', SELF_METRICS);
  return m;
})();
