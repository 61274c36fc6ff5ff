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
