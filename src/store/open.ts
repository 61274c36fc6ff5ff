/**
 * Opening the store: WAL, a busy timeout, migrations, and file modes. The
 * store holds every user's jobs, and Slurm's PrivateData=jobs means users may
 * not read each other's: its files are root's alone (0600, whatever umask
 * slurmd or systemd set), and users' `l9gpu jobs` asks the daemon, which
 * answers by the caller's uid (src/jobs/server.ts). Kept small: the Slurm
 * hooks load it on every job start.
 */
import { accessSync, chmodSync, constants, copyFileSync, existsSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';
import { nativeBindingOption } from './native-binding.js';
import { assertSafeStateDir } from './state-dir.js';

export type Db = Database.Database;
export const STORE_FILE = 'l9gpu.db';
const BUSY_TIMEOUT_MS = 2000;

export function storePath(stateDir: string): string {
  return join(stateDir, STORE_FILE);
}

/**
 * A store that cannot be used as it is and cannot be started again either:
 * made by a newer l9gpu (kept, since a downgrade must not lose it), or on a
 * read-only or full disk, locked, in an unsafe folder. Nothing to do but say
 * so and try later. (A damaged store is no such error: it is moved aside.)
 */
export class StoreUnusable extends Error {}

const CORRUPT_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

function isCorrupt(e: unknown): boolean {
  const code = (e as { code?: string }).code ?? '';
  return CORRUPT_CODES.has(code) || code.startsWith('SQLITE_CORRUPT_');
}

export interface OpenOptions {
  busyTimeoutMs?: number;
  /** Reads every page at open (PRAGMA quick_check): the daemon's start, not the hooks' (a job waits on them). */
  check?: boolean;
  /** Told when a damaged store was moved aside and a new one started. */
  onRecovered?: (message: string) => void;
}

/**
 * Opens (and creates or migrates) the store for writing. A store that is
 * not a database or is damaged is renamed to l9gpu.db.corrupt-<time> (kept
 * for a post-mortem) and a new one is started: bindings come back from the
 * reconciler. Throws StoreUnusable, naming the file and the cause, when that
 * is not possible or the store is newer than this l9gpu.
 */
export function openStore(stateDir: string, o: OpenOptions = {}): Db {
  try {
    assertSafeStateDir(stateDir);
  } catch (e) {
    throw new StoreUnusable((e as Error).message);
  }
  const path = storePath(stateDir);
  let ino: number | undefined;
  try {
    ino = statSync(path, { throwIfNoEntry: false })?.ino;
    return openChecked(path, o);
  } catch (e) {
    if (e instanceof StoreUnusable) throw e;
    if (!isCorrupt(e)) throw new StoreUnusable(`store ${path}: ${(e as Error).message}${folderProblem(path)}`);
    const aside = moveAside(path, ino, e as Error);
    o.onRecovered?.(`store ${path} was damaged (${(e as Error).message}): moved to ${aside}, a new store started (the reconciler restores the running jobs' bindings)`);
    try {
      return openChecked(path, o);
    } catch (e2) {
      throw new StoreUnusable(`store ${path}: ${(e2 as Error).message}`);
    }
  }
}

/** SQLite says "unable to open database file" or "attempt to write a readonly database": the folder says why. */
function folderProblem(path: string): string {
  try {
    accessSync(dirname(path), constants.W_OK);
    return '';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'EROFS' ? ` (${dirname(path)} is on a read-only filesystem)` : ` (${dirname(path)}: ${(e as Error).message})`;
  }
}

/**
 * Renames a damaged store and its WAL files out of the way, only if the file
 * is still the one found damaged (a concurrent hook may have started the new
 * one already).
 */
function moveAside(path: string, ino: number | undefined, cause: Error): string {
  const aside = `${path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    if (ino !== undefined && statSync(path).ino !== ino) return '(already moved by another l9gpu process)';
    renameSync(path, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '(already moved by another l9gpu process)';
    throw new StoreUnusable(`store ${path} is damaged (${cause.message}) and cannot be moved aside: ${(e as Error).message}`);
  }
  for (const f of ['-wal', '-shm']) {
    try {
      renameSync(`${path}${f}`, `${aside}${f}`);
    } catch {
      /* not there */
    }
  }
  return aside;
}

function openChecked(path: string, o: OpenOptions): Db {
  const db = openFile(path, o.busyTimeoutMs ?? BUSY_TIMEOUT_MS);
  try {
    if (o.check) {
      const r = db.pragma('quick_check', { simple: true }) as string;
      if (r !== 'ok') throw Object.assign(new Error(`quick_check: ${r}`), { code: 'SQLITE_CORRUPT' });
    }
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

function openFile(path: string, busyTimeoutMs: number): Db {
  const fresh = !existsSync(path);
  const db = new Database(path, { timeout: busyTimeoutMs, ...nativeBindingOption() });
  try {
    // WAL is a property of the file: set once, at creation (one query less per hook run)
    if (fresh) db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
  } catch (e) {
    db.close();
    throw e;
  }
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
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS, ...nativeBindingOption() });
    db.pragma('user_version', { simple: true });
  } catch (e) {
    if (!/readonly|unable to open/i.test((e as Error).message) || existsSync(`${path}-wal`)) throw e;
    const dir = mkdtempSync(join(tmpdir(), 'l9gpu-store-'));
    copyFileSync(path, join(dir, STORE_FILE));
    db = new Database(join(dir, STORE_FILE), { fileMustExist: true, ...nativeBindingOption() });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  const v = db.pragma('user_version', { simple: true }) as number;
  if (v > SCHEMA_VERSION) throw new Error(`${path} has schema version ${v}, newer than this l9gpu (${SCHEMA_VERSION}): upgrade l9gpu`);
  return db;
}

export function migrate(db: Db): void {
  const v = db.pragma('user_version', { simple: true }) as number;
  if (v > SCHEMA_VERSION) throw new StoreUnusable(`store schema version ${v} is newer than this l9gpu (${SCHEMA_VERSION}): upgrade l9gpu (the store is kept as it is)`);
  if (v === SCHEMA_VERSION) return;
  // BEGIN IMMEDIATE: concurrent hooks on a fresh node must not both migrate
  db.transaction(() => {
    const cur = db.pragma('user_version', { simple: true }) as number;
    for (let i = cur; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}
