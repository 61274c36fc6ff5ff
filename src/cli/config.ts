/** The configuration as every command loads it, from --config (or $L9GPU_CONFIG, or the default path) and flag overrides. */
import { loadAgentConfig } from '../../daemon/schema.js';
import type { Config, Override } from '../core/config/load.js';

/** Throws ConfigError naming the file, section and key: commands turn it into exit code 2 (errors.ts). */
export function loadCliConfig(configPath: string | undefined, overrides: Override[] = []): Config {
  return loadAgentConfig({ configPath, overrides });
}
