/**
 * The plugin interface. A plugin knows its source and nothing about
 * attribution, sinks or the store: it writes points into an Emitter.
 */
import type { Config } from './config/load.js';
import type { SectionSpec } from './config/schema.js';
import type { Logger } from './log.js';
import type { Emitter } from './metrics/model.js';

export interface PluginContext {
  readonly config: Config;
  readonly log: Logger;
  readonly hostName: string;
}

export interface Plugin {
  /** One collection. The signal aborts when the collection outlives its timeout or the agent stops. */
  collect(out: Emitter, signal: AbortSignal): Promise<void> | void;
  close?(): Promise<void> | void;
}

export interface ProbeResult {
  /** Whether the plugin's source is there and answering. */
  readonly ok: boolean;
  readonly detail: string;
}

export interface PluginFactory {
  readonly name: string;
  readonly description: string;
  /** The plugin's config section; its name is the plugin's name. */
  readonly section: SectionSpec;
  create(ctx: PluginContext): Plugin | Promise<Plugin>;
  /** Cheap reachability check for `l9gpu doctor`; never throws. */
  probe(ctx: PluginContext): Promise<ProbeResult>;
  /** `plugins = auto` runs it when its probe succeeds (GPU vendors); host always; others never. */
  readonly auto?: 'always' | 'detect';
}
