/** node:http or node:https for a URL, as its protocol says; node:https loaded only when a URL asks for it (builtin.ts). */
import http from 'node:http';
import type https from 'node:https';
import { requireBuiltin } from './builtin.js';

/** node:https, loaded on the first call. */
export function loadHttps(): typeof https {
  return requireBuiltin('node:https') as typeof https;
}

export function httpModule(u: URL): typeof http | typeof https {
  return u.protocol === 'https:' ? loadHttps() : http;
}
