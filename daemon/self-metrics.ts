/** The agent's own health as metrics: per-plugin and per-sink counters, RSS and CPU. */
import type { AttributionProvider } from '../src/core/attribution.js';
import { metric } from '../src/core/metrics/registry.js';
import type { Emitter } from '../src/core/metrics/model.js';
import type { Plugin } from '../src/core/plugin.js';
import type { Sink } from '../src/core/sink.js';
import type { PluginRunner } from './runner.js';
import type { BudgetLedger } from '../src/core/limits.js';

const DURATION = metric('l9gpu.collector.duration');
const POINTS = metric('l9gpu.collector.points');
const ERRORS = metric('l9gpu.collector.errors');
const SKIPPED = metric('l9gpu.collector.skipped');
const EXPORTED = metric('l9gpu.sink.exported');
const DROPPED = metric('l9gpu.sink.dropped');
const SINK_ERRORS = metric('l9gpu.sink.errors');
const QUEUE = metric('l9gpu.sink.queue.size');
const RSS = metric('l9gpu.process.memory.rss');
const CPU = metric('l9gpu.process.cpu.time');

/** Registry names of what the agent reports about itself. */
export const SELF_METRICS = [
  DURATION,
  POINTS,
  ERRORS,
  SKIPPED,
  EXPORTED,
  DROPPED,
  SINK_ERRORS,
  QUEUE,
  RSS,
  CPU,
  metric('l9gpu.budget.exceeded'),
  metric('l9gpu.listener.connections'),
  metric('l9gpu.listener.refused'),
].map((d) => d.name);

export function selfMetricsPlugin(
  runners: () => Iterable<PluginRunner>,
  sinks: () => Iterable<Sink>,
  attribution: () => AttributionProvider,
  budgets?: BudgetLedger,
): Plugin {
  return {
    collect(out: Emitter) {
      for (const r of runners()) {
        const a = { 'l9gpu.plugin': r.name };
        out.add(DURATION, r.stats.lastDurationS, a);
        out.add(POINTS, r.stats.points, a);
        out.add(ERRORS, r.stats.errors, a);
        out.add(SKIPPED, r.stats.skipped, a);
      }
      for (const s of sinks()) {
        const a = { 'l9gpu.sink': s.name };
        out.add(EXPORTED, s.stats.exported, a);
        out.add(DROPPED, s.stats.dropped, a);
        out.add(SINK_ERRORS, s.stats.errors, a);
        out.add(QUEUE, s.stats.queueBytes, a);
        s.collectSelf?.(out);
      }
      attribution().collectSelf?.(out);
      budgets?.collect(out);
      out.add(RSS, process.memoryUsage.rss(), {});
      const cpu = process.cpuUsage();
      out.add(CPU, cpu.user / 1e6, { 'cpu.mode': 'user' });
      out.add(CPU, cpu.system / 1e6, { 'cpu.mode': 'system' });
    },
  };
}
