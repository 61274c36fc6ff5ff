/** Resource attributes every sink attaches: who sent the data. */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Config } from './config/load.js';
import type { Attributes } from './metrics/model.js';

export const VERSION: string = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export function resourceAttributes(cfg: Config): Attributes {
  const attrs: Attributes = { ...cfg.map('daemon', 'resource_attributes') };
  attrs['service.name'] = cfg.str('daemon', 'service_name') ?? 'l9gpu';
  attrs['service.version'] = VERSION;
  attrs['host.name'] = cfg.str('daemon', 'host_name') ?? hostname();
  const cluster = cfg.str('daemon', 'cluster');
  if (cluster) attrs['cluster.name'] = cluster;
  return attrs;
}
