/**
 * What runs on this node, decided from the configuration and the manifests
 * the composition root lists: which plugins (`auto` expanded by probing) and
 * which attribution provider (`auto` resolved by detection). The daemon,
 * doctor and `l9gpu gpus` decide the same way because they call this.
 */
import type { AttributionManifest } from '../src/core/attribution.js';
import type { Config } from '../src/core/config/load.js';
import { ConfigError, closest } from '../src/core/config/schema.js';
import type { PluginContext, PluginManifest, ProbeResult } from '../src/core/plugin.js';
import type { SinkManifest } from '../src/core/sink.js';
import { readSection } from '../src/core/config/read.js';
import { DAEMON_SECTION } from '../src/core/config/sections.js';

export interface Manifests {
  readonly plugins: readonly PluginManifest[];
  readonly sinks: readonly SinkManifest[];
  /** In `attribution = auto` order: the first that detects its scheduler wins. */
  readonly attributions: readonly AttributionManifest[];
}

export const AUTO = 'auto';

export interface PluginSelection {
  /** Plugins to run, in manifest order. */
  readonly names: string[];
  /** For `auto`: what each detectable plugin's probe said. */
  readonly detected: Record<string, ProbeResult>;
}

/** Expands `auto` into the always-on plugins plus those whose source answers now. */
export async function selectPlugins(m: Pick<Manifests, 'plugins'>, cfg: Config, ctx: PluginContext): Promise<PluginSelection> {
  const daemon = readSection(cfg, DAEMON_SECTION);
  const listed = new Set(daemon.plugins);
  const detected: Record<string, ProbeResult> = {};
  if (listed.delete(AUTO)) {
    await Promise.all(
      m.plugins
        .filter((p) => p.auto)
        .map(async (p) => {
          if (p.auto === 'always') return void listed.add(p.name);
          const r = await p.probe(ctx).catch((e: Error) => ({ ok: false, detail: e.message }));
          detected[p.name] = r;
          if (r.ok) listed.add(p.name);
        }),
    );
  }
  if (daemon.engines === 'auto') for (const p of m.plugins) if (p.engine) listed.add(p.name);
  return { names: m.plugins.filter((p) => listed.has(p.name)).map((p) => p.name), detected };
}

export interface ResolvedAttribution {
  /** As configured: auto, none or a provider's name. */
  readonly mode: string;
  /** What it means here: a provider's name, or none. */
  readonly resolved: string;
  readonly manifest: AttributionManifest | undefined;
  /** Why, for doctor (auto: what detection found). */
  readonly detail: string;
}

export function resolveAttribution(m: Manifests, cfg: Config, env: NodeJS.ProcessEnv = process.env): ResolvedAttribution {
  const mode = readSection(cfg, DAEMON_SECTION).attribution;
  if (mode === 'none') return { mode, resolved: 'none', manifest: undefined, detail: 'configured' };
  if (mode !== AUTO) {
    const manifest = m.attributions.find((a) => a.name === mode)!;
    return { mode, resolved: mode, manifest, detail: manifest.detect(cfg, env).detail };
  }
  const found: string[] = [];
  for (const a of m.attributions) {
    const d = a.detect(cfg, env);
    if (d.ok) return { mode, resolved: a.name, manifest: a, detail: d.detail };
    found.push(d.detail);
  }
  return { mode, resolved: 'none', manifest: undefined, detail: found.join('; ') || 'no attribution provider' };
}

/** Every `[daemon] plugins` / `sinks` name must be one the root lists. */
export function checkNames(cfg: Config, key: 'plugins' | 'sinks', known: readonly string[]): void {
  for (const name of readSection(cfg, DAEMON_SECTION)[key]) {
    if (known.includes(name) || (key === 'plugins' && name === AUTO)) continue;
    const p = cfg.sourceOf('daemon', key);
    const where = p.source === 'default' ? '[daemon] ' + key : `${p.detail}${p.source === 'file' ? ` [daemon] ${key}` : ''}`;
    const hint = closest(name, known);
    throw new ConfigError(
      `${where}: unknown ${key.slice(0, -1)} "${name}"${hint ? ` (did you mean ${hint}?)` : ''}; ` +
        `known: ${key === 'plugins' ? `${AUTO}, ` : ''}${known.join(', ')}`,
      { section: 'daemon', key },
    );
  }
}
