/**
 * The plugin contract. A plugin knows its source and nothing about
 * attribution, sinks or the store: it writes points into an Emitter. Its
 * manifest is everything the rest of the program needs to know about it: the
 * composition root lists manifests, and config sections, flags, help, doctor,
 * `l9gpu gpus` and the generated docs are all derived from them.
 */
import type { Config } from './config/load.js';
import { readSection } from './config/read.js';
import type { SectionSpec } from './config/schema.js';
import { DAEMON_SECTION } from './config/sections.js';
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
  /** A GPU plugin's: how many GPUs its source sees. */
  readonly gpus?: number;
}

/** What says a GPU vendor's GPUs belong on this node even while its plugin reads none (a driver not loaded). */
export interface GpuHardware {
  /** The gpu.vendor of its GPUs: the store's inventory having seen one of them says so. */
  readonly vendor: string;
  /** The vendor's driver library or tool as found on the node, in words, without loading or running it; undefined: not there. */
  installed(ctx: PluginContext): string | undefined;
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
  /** `plugins = auto` runs it when its probe succeeds ('detect', GPU vendors; an absent one is probed again), always (host), or never
   * (unset). */
  readonly auto?: 'always' | 'detect';
  /** A GPU vendor's: no GPU read where its software is installed (or [daemon] expect_gpus says more) is a problem. */
  readonly hardware?: GpuHardware;
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
    hostName: readSection(config, DAEMON_SECTION).host_name ?? '',
    ...(o.oneShot ? { oneShot: true } : {}),
    limits: limitsFrom(config),
    budgets: o.budgets ?? new BudgetLedger(log),
  };
}
