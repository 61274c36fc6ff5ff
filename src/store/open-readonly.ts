/**
 * A store made by a newer l9gpu (a downgrade): read, never written, so
 * that GPU metrics keep their job attributes and users' `l9gpu jobs` keeps
 * answering (openNewerStore), and said at every start and by `doctor`
 * (newerStore).
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { storePath, type Db } from './open.js';
import { SCHEMA_VERSION } from './schema.js';
import { nativeBindingOption } from './native-binding.js';

/** A store newer than this l9gpu, as the daemon's start and `doctor` say it. */
export interface NewerStore {
  path: string;
  version: number;
  supported: number;
  /** One line: what it is, what goes on, what does not, what to do. */
  message: string;
}

const newerMessage = (path: string, version: number): string =>
  `store ${path} has schema version ${version}, newer than this l9gpu (${SCHEMA_VERSION}): a downgrade. ` +
  `It is opened read-only and never written: GPU metrics keep the jobs the store already binds and users' l9gpu jobs answers from it, ` +
  `but new jobs are not recorded (the hooks leave it as it is) and no job figures are kept. Upgrade l9gpu to the version that made it`;

/**
 * The store's schema when it is newer than this l9gpu, else undefined (no
 * store, or one this l9gpu writes). A read-only connection, not the file's
 * header bytes: a newer daemon's migration may still be in the WAL. `doctor`
 * asks it of the node's store while the daemon runs: it reads, never waits
 * long (50 ms) and writes nothing.
 */
export function newerStore(stateDir: string): NewerStore | undefined {
  const path = storePath(stateDir);
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st || st.size < 100) return undefined;
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: 50, ...nativeBindingOption() });
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    return version > SCHEMA_VERSION ? { path, version, supported: SCHEMA_VERSION, message: newerMessage(path, version) } : undefined;
  } finally {
    db.close();
  }
}

/**
 * A store newer than this l9gpu, opened read-only for the daemon (the
 * provider reads its bindings, users' questions its jobs): SQLITE_OPEN_READONLY
 * and PRAGMA query_only, so that not even a stray write of this l9gpu's code
 * can reach it. Throws when it is not newer (the caller opens it for
 * writing then).
 */
export function openNewerStore(stateDir: string, busyTimeoutMs = 50): { db: Db; newer: NewerStore } {
  const path = storePath(stateDir);
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs, ...nativeBindingOption() });
  try {
    db.pragma('query_only = ON');
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version <= SCHEMA_VERSION)
      throw new Error(`store ${path} has schema version ${version}, not newer than this l9gpu (${SCHEMA_VERSION}): open it for writing`);
    return { db, newer: { path, version, supported: SCHEMA_VERSION, message: newerMessage(path, version) } };
  } catch (e) {
    db.close();
    throw e;
  }
}
