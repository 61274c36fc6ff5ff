/** The whole configuration surface: core, plugin and sink sections, and loading with name checks. */
import { DAEMON_SECTION } from '../src/config/sections.js';
import { loadConfig, type Config, type LoadOptions } from '../src/config/load.js';
import { ConfigError, closest, type SectionSpec } from '../src/config/schema.js';
import type { PluginContext, ProbeResult } from '../src/plugin.js';
import { SINKS } from '../src/sinks/index.js';
import { PLUGINS } from '../plugins/index.js';
import { SLURM_SECTION } from '../slurm/config.js';
import { JOBS_SECTION } from '../src/jobs/config.js';

export const ALL_SECTIONS: readonly SectionSpec[] = (() => {
  const all = [DAEMON_SECTION, SLURM_SECTION, JOBS_SECTION, ...PLUGINS.map((p) => p.section), ...SINKS.map((s) => s.section)];
  const seen = new Set<string>();
  for (const s of all) {
    if (seen.has(s.name)) throw new Error(`config schema: section [${s.name}] defined twice`);
    seen.add(s.name);
  }
  return all;
})();

export const PLUGIN_NAMES = PLUGINS.map((p) => p.name);
export const AUTO = 'auto';
export const SINK_NAMES = SINKS.map((s) => s.name);

function checkNames(cfg: Config, key: 'plugins' | 'sinks', known: readonly string[]): void {
  for (const name of cfg.list('daemon', key)) {
    if (known.includes(name) || (key === 'plugins' && name === AUTO)) continue;
    const p = cfg.sourceOf('daemon', key);
    const where = p.source === 'default' ? '[daemon] ' + key : `${p.detail}${p.source === 'file' ? ` [daemon] ${key}` : ''}`;
    const hint = closest(name, known);
    throw new ConfigError(`${where}: unknown ${key.slice(0, -1)} "${name}"${hint ? ` (did you mean ${hint}?)` : ''}; known: ${key === 'plugins' ? `${AUTO}, ` : ''}${known.join(', ')}`, { section: 'daemon', key });
  }
}

export interface PluginSelection {
  /** Plugins to run, in catalog order. */
  readonly names: string[];
  /** For `auto`: what each detectable plugin's probe said. */
  readonly detected: Record<string, ProbeResult>;
}

/** Expands `auto` into host plus the GPU plugins whose source answers now. */
export async function selectPlugins(cfg: Config, ctx: PluginContext): Promise<PluginSelection> {
  const listed = new Set(cfg.list('daemon', 'plugins'));
  const detected: Record<string, ProbeResult> = {};
  if (listed.delete(AUTO)) {
    await Promise.all(
      PLUGINS.filter((p) => p.auto).map(async (p) => {
        if (p.auto === 'always') return void listed.add(p.name);
        const r = await p.probe(ctx).catch((e: Error) => ({ ok: false, detail: e.message }));
        detected[p.name] = r;
        if (r.ok) listed.add(p.name);
      }),
    );
  }
  return { names: PLUGIN_NAMES.filter((n) => listed.has(n)), detected };
}

/** Loads and validates the agent's configuration; throws ConfigError naming file, section and key. */
export function loadAgentConfig(opts: Omit<LoadOptions, 'sections'>): Config {
  const cfg = loadConfig({ ...opts, sections: ALL_SECTIONS });
  checkNames(cfg, 'plugins', PLUGIN_NAMES);
  checkNames(cfg, 'sinks', SINK_NAMES);
  return cfg;
}
