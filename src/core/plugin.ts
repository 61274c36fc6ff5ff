/**
 * The plugin contract. A plugin knows its source and nothing about
 * attribution, sinks or the store: it writes points into an Emitter. Its
 * manifest is everything the rest of the program needs to know about it: the
 * composition root lists manifests, and config sections, flags, help, doctor,
 * `l9gpu gpus` and the generated docs are all derived from them.
 */
import type { Config } from './config/load.js';
import type { SectionSpec } from './config/schema.js';
import { BudgetLedger, limitsFrom, type Limits } from './limits.js';
import type { Logger } from './log.js';
import type { Emitter } from './metrics/model.js';

export interface PluginContext {
  readonly config: Config;
  readonly log: Logger;
  readonly hostName: string;
  /** One collection, then close (`l9gpu gpus`, `daemon --once`): nothing that only pays off later (NVML's Xid event wait). */
  readonly oneShot?: boolean;
  /** The [limits] bounds on what local users control, and the ledger that counts their hits (one per agent). */
  readonly limits: Limits;
  readonly budgets: BudgetLedger;
}

export interface Plugin {
  /** One collection. The signal aborts when the collection outlives its timeout or the agent stops. */
  collect(out: Emitter, signal: AbortSignal): Promise<void> | void;
  close?(): Promise<void> | void;
}

export interface ProbeResult {
  /** Whether the source is there and answering. */
  readonly ok: boolean;
  readonly detail: string;
}

export interface PluginManifest {
  readonly name: string;
  readonly description: string;
  /** The plugin's config section; its name is the plugin's name. */
  readonly section: SectionSpec;
  /** Registry names of every metric it may emit: docs/metrics.md says who emits what, and the tests hold the plugin to it. */
  readonly metrics: readonly string[];
  /** Its points describe GPUs: `l9gpu gpus` samples it. */
  readonly reportsGpus: boolean;
  /** `plugins = auto` runs it when its probe succeeds ('detect', GPU vendors), always (host), or never (unset). */
  readonly auto?: 'always' | 'detect';
  /** An inference engine's scraper: `[daemon] engines = auto` runs it, finding the engines on the node. */
  readonly engine?: boolean;
  create(ctx: PluginContext): Plugin | Promise<Plugin>;
  /** Doctor's line for it: whether the source is there and answering, without side effects; never throws. */
  probe(ctx: PluginContext): Promise<ProbeResult>;
}

/** A context on a configuration: its [limits], and a ledger of its own unless the caller shares one (the agent does). */
export function pluginContext(config: Config, log: Logger, o: { oneShot?: boolean; budgets?: BudgetLedger } = {}): PluginContext {
  return {
    config,
    log,
    hostName: config.str('daemon', 'host_name') ?? '',
    ...(o.oneShot ? { oneShot: true } : {}),
    limits: limitsFrom(config),
    budgets: o.budgets ?? new BudgetLedger(log),
  };
}
