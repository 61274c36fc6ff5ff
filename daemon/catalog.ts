/**
 * The composition root: every plugin, sink and attribution provider l9gpu
 * has, one line each. A new collector is its folder under plugins/ plus one
 * line in PLUGINS (plugin-catalog.ts) and its config section's line in schema.ts (a check
 * fails at load when the two differ); a new provider is its folder plus one
 * line in schema.ts ATTRIBUTIONS. Config sections, flag and help lists, doctor, `l9gpu gpus`
 * and the generated docs all come from these lists. Only the CLI, bench and
 * tests import this file (test/layers.test.ts holds everyone to it).
 */
import type { SinkManifest } from '../src/core/sink.js';
import { fileSink } from '../src/sinks/file.js';
import { otlpSink } from '../src/sinks/otlp.js';
import { prometheusSink } from '../src/sinks/prometheus.js';
import { stdoutSink } from '../src/sinks/stdout.js';
import { webhookSink } from '../src/sinks/webhook.js';
import { LEDGER_METRICS } from '../src/ledger/ledger.js';
import { COST_METRICS } from '../src/ledger/cost-rate.js';
import { HEALTH_METRICS } from '../src/health/tracker.js';
import { SELF_METRICS } from './self-metrics.js';
import { PLUGINS, selectAgentPlugins } from './plugin-catalog.js';
import { ALL_SECTIONS, ATTRIBUTIONS, ATTRIBUTION_NAMES, PLUGIN_NAMES, SINK_NAMES, SINK_SECTIONS, loadAgentConfig, resolveAgentAttribution } from './schema.js';
import type { Manifests } from './selection.js';

export { PLUGINS, selectAgentPlugins };
export const SINKS: readonly SinkManifest[] = [otlpSink, prometheusSink, stdoutSink, fileSink, webhookSink];
export { ALL_SECTIONS, ATTRIBUTIONS, ATTRIBUTION_NAMES, PLUGIN_NAMES, SINK_NAMES, loadAgentConfig, resolveAgentAttribution };

export const MANIFESTS: Manifests = { plugins: PLUGINS, sinks: SINKS, attributions: ATTRIBUTIONS };

// the light schema (what the CLI reads a configuration with) and the manifests list the same sections
if (SINKS.length !== SINK_SECTIONS.length || SINKS.some((m, i) => m.section !== SINK_SECTIONS[i] || m.name !== SINK_SECTIONS[i]!.name)) {
  throw new Error('catalog: the sink manifests and daemon/schema.ts list different sections');
}

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
