/** node:http or node:https for a URL, as its protocol says, each loaded at its first use (builtin.ts): every scraping plugin's module imports this, and `gpus` and `doctor` load them all. */
import type http from 'node:http';
import type https from 'node:https';
import { requireBuiltin } from './builtin.js';

/** node:https, loaded on the first call. */
export function loadHttps(): typeof https {
  return requireBuiltin('node:https') as typeof https;
}

export function httpModule(u: URL): typeof http | typeof https {
  return u.protocol === 'https:' ? loadHttps() : (requireBuiltin('node:http') as typeof http);
}
