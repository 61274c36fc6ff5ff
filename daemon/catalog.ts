/**
 * The composition root, loaded: every plugin and sink manifest of the one
 * table (schema.ts, where a new plugin or sink is its one row; a new
 * provider is a line in its ATTRIBUTIONS), and who emits each metric.
 * Importing this file loads every plugin's and sink's code: the daemon, the
 * docs and the tests do; the CLI's light commands use schema.ts's loaders.
 * Only the CLI, bench and tests import it (test/unit/layers.test.ts holds
 * everyone to it).
 */
import type { PluginManifest } from '../src/core/plugin.js';
import type { SinkManifest } from '../src/core/sink.js';
import { LEDGER_METRICS } from '../src/ledger/ledger.js';
import { COST_METRICS } from '../src/ledger/cost-rate.js';
import { HEALTH_METRICS } from '../src/health/tracker.js';
import { SELF_METRICS } from './self-metrics.js';
import {
  ALL_SECTIONS,
  ATTRIBUTIONS,
  ATTRIBUTION_NAMES,
  PLUGIN_NAMES,
  SINK_NAMES,
  loadAgentConfig,
  loadPlugins,
  loadSinks,
  resolveAgentAttribution,
  selectAgentPlugins,
} from './schema.js';
import type { Manifests } from './selection.js';

export const PLUGINS: readonly PluginManifest[] = await loadPlugins();
export const SINKS: readonly SinkManifest[] = await loadSinks();
export {
  ALL_SECTIONS,
  ATTRIBUTIONS,
  ATTRIBUTION_NAMES,
  PLUGIN_NAMES,
  SINK_NAMES,
  loadAgentConfig,
  resolveAgentAttribution,
  selectAgentPlugins,
};

export const MANIFESTS: Manifests = { plugins: PLUGINS, sinks: SINKS, attributions: ATTRIBUTIONS };

/** Metric name -> who emits it: every plugin, provider, the job ledger and the agent itself (docs/metrics.md). */
export const METRIC_EMITTERS: ReadonlyMap<string, readonly string[]> = (() => {
  const m = new Map<string, string[]>();
  const add = (who: string, names: readonly string[]) => {
    for (const n of names) m.set(n, [...(m.get(n) ?? []), who]);
  };
  for (const p of PLUGINS) add(p.name, p.metrics);
  for (const a of ATTRIBUTIONS) add(`${a.name} attribution`, a.metrics);
  add('job ledger', LEDGER_METRICS);
  add('job ledger', COST_METRICS);
  add('health', HEALTH_METRICS);
  add('agent', SELF_METRICS);
  return m;
})();
