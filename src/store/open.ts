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

/**
 * The store was made by a newer l9gpu (a downgrade): kept as it is. The
 * daemon may still read it, read-only (src/store/open-readonly.ts,
 * openNewerStore): migrations only add, so this l9gpu's queries still hold.
 */
export class StoreNewer extends StoreUnusable {
  constructor(
    readonly path: string,
    readonly version: number,
    readonly supported: number,
  ) {
    super(`store schema version ${version} is newer than this l9gpu (${supported}): upgrade l9gpu (the store is kept as it is)`);
  }
}

const CORRUPT_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

function isCorrupt(e: unknown): boolean {
  const code = (e as { code?: string }).code ?? '';
  return CORRUPT_CODES.has(code) || code.startsWith('SQLITE_CORRUPT_');
}

export interface OpenOptions {
  busyTimeoutMs?: number;
  /**
   * The daemon's open, not the hooks' (a job waits on them): a cheap check of
   * the file (header, schema, length against the header's page count) before
   * anything is written, and a small store made before auto_vacuum is
   * converted to it. Every page is read later, off the start's path
   * (src/store/page-check.ts): a full quick_check took 14 s on 606 MB.
   */
  check?: boolean;
  /** Told when a damaged store was moved aside and a new one started. */
  onRecovered?: (message: string) => void;
  /**
   * What the page check (src/store/page-check.ts) found wrong with the store
   * the caller had open: it is moved aside and a new one started, as a
   * store found damaged at open is. Only if the file is still the one checked
   * (`checkedIno`).
   */
  damaged?: { reason: string; checkedIno: number };
  /** Told what the daemon should say about the store at its start (auto_vacuum converted, or why not). */
  onNotice?: (message: string) => void;
}

/**
 * Live bytes up to which the daemon's open converts a store to
 * auto_vacuum = incremental (a VACUUM, which holds the write lock while it
 * copies the file: a hook waits on it). Measured (bench/store-years.ts) at
 * about 0.1 s per 8 MB here: a hook's wait stays far below its deadline.
 */
export const CONVERT_MAX_BYTES = 32 * 1024 * 1024;

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
    if (o.damaged && ino === o.damaged.checkedIno) throw corrupt(o.damaged.reason);
    return openChecked(path, o);
  } catch (e) {
    if (e instanceof StoreUnusable) throw e;
    if (!isCorrupt(e)) throw new StoreUnusable(`store ${path}: ${(e as Error).message}${folderProblem(path)}`);
    const aside = moveAside(path, ino, e as Error);
    o.onRecovered?.(
      `store ${path} was damaged (${(e as Error).message}): moved to ${aside}, a new store ` +
        `started (the reconciler restores the running jobs' bindings)`,
    );
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
  const db = openFile(path, o);
  try {
    if (o.check) convertToIncremental(db, o.onNotice);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

const corrupt = (message: string): Error => Object.assign(new Error(message), { code: 'SQLITE_CORRUPT' });

/**
 * What can be checked without reading every page: SQLite reads the header
 * and page 1 and parses the schema (garbage fails here), and it refuses a
 * file shorter than its header's page count (cut by a full disk or a bad
 * copy). Damage inside other pages is the page check's (src/store/page-check.ts).
 */
export function cheapCheck(db: Db): void {
  db.prepare('SELECT COUNT(*) FROM sqlite_schema').get();
}

/**
 * auto_vacuum is fixed when the file is made, or changed by a VACUUM that
 * copies the whole file under the write lock. A store made before l9gpu set
 * it: converted here when small; a large one keeps its size (the pages a
 * prune frees are used again by new jobs, so it stops growing) until a
 * VACUUM with the daemon stopped (compactStore), said at every start.
 */
function convertToIncremental(db: Db, notice: OpenOptions['onNotice']): void {
  if ((db.pragma('auto_vacuum', { simple: true }) as number) !== 0) return;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const live =
    ((db.pragma('page_count', { simple: true }) as number) - (db.pragma('freelist_count', { simple: true }) as number)) * pageSize;
  const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;
  if (live > CONVERT_MAX_BYTES) {
    notice?.(
      `store ${db.name} (${mb(live)} in use) was made without auto_vacuum: pruned space is used ` +
        `again but not given back to the filesystem; to give it back, run \`systemctl stop l9gpu; ` +
        `l9gpu daemon --compact-store; systemctl start l9gpu\` (about 20-40 s per GB)`,
    );
    return;
  }
  const before = statSync(db.name).size;
  const t0 = performance.now();
  try {
    compact(db);
  } catch (e) {
    // a hook holding the lock: the next start tries again
    notice?.(`store ${db.name}: not converted to auto_vacuum = incremental this time: ${(e as Error).message}`);
    return;
  }
  notice?.(
    `store ${db.name} converted to auto_vacuum = incremental in ${Math.round(performance.now() - t0)} ` +
      `ms (${mb(before)} before, ${mb(statSync(db.name).size)} after): pruned space is given back ` +
      `from now on`,
  );
}

/** auto_vacuum = incremental and a VACUUM: the whole file copied under the write lock. */
function compact(db: Db): void {
  db.pragma('auto_vacuum = INCREMENTAL');
  db.exec('VACUUM');
  // the copy went through the WAL: back into the file, and the WAL emptied
  db.pragma('wal_checkpoint(TRUNCATE)');
}

/**
 * The store converted to auto_vacuum = incremental and compacted, whatever
 * its size, with nothing else writing (the daemon stopped: hooks wait on the
 * lock meanwhile, up to their busy timeout). Returns the file's bytes
 * before and after.
 */
export function compactStore(stateDir: string): { before: number; after: number } {
  const db = openStore(stateDir);
  try {
    const before = statSync(db.name).size;
    compact(db);
    return { before, after: statSync(db.name).size };
  } finally {
    db.close();
  }
}

function openFile(path: string, o: OpenOptions): Db {
  const fresh = !existsSync(path);
  const db = new Database(path, { timeout: o.busyTimeoutMs ?? BUSY_TIMEOUT_MS, ...nativeBindingOption() });
  try {
    // WAL and auto_vacuum are properties of the file: set once, at creation (one query less per hook run).
    // auto_vacuum must come before the first page is written (journal_mode = WAL writes it)
    if (fresh) {
      db.pragma('auto_vacuum = INCREMENTAL');
      db.pragma('journal_mode = WAL');
    }
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // before the migration writes into a damaged file
    if (o.check && !fresh) cheapCheck(db);
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
  // a newer schema (a downgrade) is read all the same: migrations only add, so this l9gpu's queries still hold
  return db;
}

export function migrate(db: Db): void {
  const v = db.pragma('user_version', { simple: true }) as number;
  if (v > SCHEMA_VERSION) throw new StoreNewer(db.name, v, SCHEMA_VERSION);
  if (v === SCHEMA_VERSION) return;
  // BEGIN IMMEDIATE: concurrent hooks on a fresh node must not both migrate
  db.transaction(() => {
    const cur = db.pragma('user_version', { simple: true }) as number;
    for (let i = cur; i < MIGRATIONS.length; i++) db.exec(MIGRATIONS[i]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}
