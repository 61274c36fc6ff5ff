import { loadAgentConfig } from '../../daemon/catalog.js';
import type { Config } from '../../src/core/config/load.js';

/** A Config as the daemon would build it, from INI text given inline (no file on disk needed). */
export function configFrom(values: Record<string, Record<string, string>>, env: NodeJS.ProcessEnv = {}): Config {
  const overrides = Object.entries(values).flatMap(([section, kv]) =>
    Object.entries(kv).map(([key, raw]) => ({ section, key, raw, flag: `test:${section}.${key}` })),
  );
  return loadAgentConfig({ env: { L9GPU_CONFIG: '', ...env }, defaultPath: '/nonexistent/l9gpu.ini', overrides });
}
