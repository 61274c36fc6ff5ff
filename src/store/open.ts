/**
 * Opening the store: WAL, a busy timeout, migrations, and file modes. The
 * store holds every user's jobs, and Slurm's PrivateData=jobs means users may
 * not read each other's: its files are root's alone (0600, whatever umask
 * slurmd or systemd set), and users' `l9gpu jobs` asks the daemon, which
 * answers by the caller's uid (src/jobs/server.ts). Kept small: the Slurm
 * hooks load it on every job start.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';
import { assertSafeStateDir } from './state-dir.js';

export type Db = Database.Database;
export const STORE_FILE = 'l9gpu.db';
const BUSY_TIMEOUT_MS = 2000;

export function storePath(stateDir: string): string {
  return join(stateDir, STORE_FILE);
}

/**
 * better-sqlite3's own lookup of its .node file (the "bindings" package) walks
 * a dozen paths and a stack trace: the hooks, started on every job, name it.
 */
let nativeBinding: string | undefined;
export function useNativeBinding(path: string | undefined): void {
  nativeBinding = path && existsSync(path) ? path : undefined;
}

/** Opens (and creates or migrates) the store for writing. */
export function openStore(stateDir: string, busyTimeoutMs = BUSY_TIMEOUT_MS): Db {
  assertSafeStateDir(stateDir);
  const path = storePath(stateDir);
  const fresh = !existsSync(path);
  const db = new Database(path, { timeout: busyTimeoutMs, ...(nativeBinding ? { nativeBinding } : {}) });
  // WAL is a property of the file: set once, at creation (one query less per hook run)
  if (fresh) db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  migrate(db);
  // every time: a store made by an older l9gpu (0644) is closed to users at the first open
  for (const f of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(f, 0o600);
    } catch {
      /* not there */
    }
  }
  return db;
}

/**
 * Opens the store read-only (users' `l9gpu jobs`). While a writer (the
 * daemon) is connected, the WAL files exist and a read-only connection works
 * directly. With no writer connected SQLite has removed them, and a reader
 * that cannot write the folder cannot create the -shm: then the database file
 * is fully checkpointed, and a private copy of it is read instead.
 */
export function openStoreReadOnly(stateDir: string): Db {
  const path = storePath(stateDir);
  if (!existsSync(path)) throw new Error(`no l9gpu store at ${path}: is the daemon running on this node, and [daemon] state_dir the same?`);
  let db: Db;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS, ...(nativeBinding ? { nativeBinding } : {}) });
    db.pragma('user_version', { simple: true });
  } catch (e) {
    if (!/readonly|unable to open/i.test((e as Error).message) || existsSync(`${path}-wal`)) throw e;
    const dir = mkdtempSync(join(tmpdir(), 'l9gpu-store-'));
    copyFileSync(path, join(dir, STORE_FILE));
    db = new Database(join(dir, STORE_FILE), { fileMustExist: true, ...(nativeBinding ? { nativeBinding } : {}) });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  const v = db.pragma('user_version', { simple: true }) as number;
  if (v > SCHEMA_VERSION) throw new Error(`${path} has schema version ${v}, newer than this l9gpu (${SCHEMA_VERSION}): upgrade l9gpu`);
  return db;
}

export function migrate(db: Db): void {
  const v = db.pragma('user_version', { simple: true }) as number;
  if (v > SCHEMA_VERSION) throw new Error(`store schema version ${v} is newer than this l9gpu (${SCHEMA_VERSION}): upgrade l9gpu`);
  if (v === SCHEMA_VERSION) return;
  // BEGIN IMMEDIATE: concurrent hooks on a fresh node must not both migrate
  db.transaction(() => {
    const cur = db.pragma('user_version', { simple: true }) as number;
    for (let i = cur; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}
