/**
 * node:http or node:https for a URL, as its protocol says. node:https (and tls
 * under it) is loaded only when a URL asks for it: `l9gpu doctor` and `gpus`
 * build every sink and plugin without connecting, and loading tls cost them
 * about a tenth of their start-up.
 */
import http from 'node:http';
import type https from 'node:https';
import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

/** node:https, loaded on the first call (require keeps it once loaded). */
export function loadHttps(): typeof https {
  return load('node:https') as typeof https;
}

export function httpModule(u: URL): typeof http | typeof https {
  return u.protocol === 'https:' ? loadHttps() : http;
}
