/** The store's key/value table: what the hooks, the reconciler and the daemon tell each other (last reconcile, the learned node name). */
import type { Db } from './open.js';

export function setMeta(db: Db, key: string, value: string): void {
  db.prepare(
    `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE value IS NOT excluded.value`,
  ).run(key, value);
}

export function getMeta(db: Db, key: string): string | null {
  return (db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value ?? null;
}

/** Every key and its value. */
export function allMeta(db: Db): Map<string, string> {
  return new Map((db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
}

/**
 * The statements reading and writing one key, for a caller that prepares them once (the prune's mark,
 * src/ledger/rollup-writer.ts): the key is the caller's constant, written into the statement.
 */
export function metaKeySql(key: string): { get: string; set: string } {
  if (!/^[\w.]+$/.test(key)) throw new Error(`meta key ${JSON.stringify(key)}: letters, digits, _ and . only`);
  return {
    get: `SELECT value FROM meta WHERE key = '${key}'`,
    set: `INSERT INTO meta (key, value) VALUES ('${key}', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  };
}
