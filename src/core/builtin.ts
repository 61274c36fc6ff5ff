/**
 * Node's built-in modules that cost a command's start-up and that it may never use (tls under
 * node:https, net under node:child_process): required at their first use instead of imported.
 * An ESM import is evaluated when the importing module is, and the light CLI bundle evaluates
 * most of its modules whatever the command (measured on Node 24: tls and https ~10 % of
 * `doctor`'s start-up, child_process and net ~5 % of every light command's).
 */
import { createRequire } from 'node:module';

export const requireBuiltin = createRequire(import.meta.url);
