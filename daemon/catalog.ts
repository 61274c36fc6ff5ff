/** The whole configuration surface: core, plugin and sink sections, and loading with name checks. */
import { DAEMON_SECTION } from '../src/config/sections.js';
import { loadConfig, type Config, type LoadOptions } from '../src/config/load.js';
import { ConfigError, closest, type SectionSpec } from '../src/config/schema.js';
import { SINKS } from '../src/sinks/index.js';
import { PLUGINS } from '../plugins/index.js';

export const ALL_SECTIONS: readonly SectionSpec[] = (() => {
  const all = [DAEMON_SECTION, ...PLUGINS.map((p) => p.section), ...SINKS.map((s) => s.section)];
  const seen = new Set<string>();
  for (const s of all) {
    if (seen.has(s.name)) throw new Error(`config schema: section [${s.name}] defined twice`);
    seen.add(s.name);
  }
  return all;
})();

export const PLUGIN_NAMES = PLUGINS.map((p) => p.name);
export const SINK_NAMES = SINKS.map((s) => s.name);

function checkNames(cfg: Config, key: 'plugins' | 'sinks', known: readonly string[]): void {
  for (const name of cfg.list('daemon', key)) {
    if (known.includes(name)) continue;
    const p = cfg.sourceOf('daemon', key);
    const where = p.source === 'default' ? '[daemon] ' + key : `${p.detail}${p.source === 'file' ? ` [daemon] ${key}` : ''}`;
    const hint = closest(name, known);
    throw new ConfigError(`${where}: unknown ${key.slice(0, -1)} "${name}"${hint ? ` (did you mean ${hint}?)` : ''}; known: ${known.join(', ')}`, { section: 'daemon', key });
  }
}

/** Loads and validates the agent's configuration; throws ConfigError naming file, section and key. */
export function loadAgentConfig(opts: Omit<LoadOptions, 'sections'>): Config {
  const cfg = loadConfig({ ...opts, sections: ALL_SECTIONS });
  checkNames(cfg, 'plugins', PLUGIN_NAMES);
  checkNames(cfg, 'sinks', SINK_NAMES);
  return cfg;
}
