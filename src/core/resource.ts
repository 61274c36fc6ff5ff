/** Resource attributes every sink attaches: who sent the data. */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Config } from './config/load.js';
import { readSection } from './config/read.js';
import { DAEMON_SECTION } from './config/sections.js';
import type { Attributes } from './metrics/model.js';

export const VERSION: string = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

export function resourceAttributes(cfg: Config): Attributes {
  const d = readSection(cfg, DAEMON_SECTION);
  const attrs: Attributes = { ...d.resource_attributes };
  attrs['service.name'] = d.service_name ?? 'l9gpu';
  attrs['service.version'] = VERSION;
  attrs['host.name'] = d.host_name ?? hostname();
  if (d.cluster) attrs['cluster.name'] = d.cluster;
  return attrs;
}
