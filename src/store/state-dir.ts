/**
 * The state folder is written by root (the Slurm hooks, the daemon). A user
 * who can write into it could plant a symbolic link (hooks.log -> a system
 * file, l9gpu.db -> anything) and have root write through it. So before any
 * write: the folder must be a real folder (not a link), owned by us or root,
 * and writable by nobody else; the files we write there must not be links.
 * Once the folder passes, nobody else can add a link to it.
 */
import { constants, lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { makeDirs } from '../core/make-dirs.js';

/** The files l9gpu writes in the state folder. */
export const STATE_FILES = ['l9gpu.db', 'l9gpu.db-wal', 'l9gpu.db-shm', 'hooks.log', 'hooks.log.1', 'daemon.lock'];

/** open(2) flags for appending to a file there without following a link. */
export const APPEND_NOFOLLOW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Creates the folder if needed; throws an error naming what is wrong when writing there is not safe. */
export function assertSafeStateDir(dir: string, uid: number | undefined = process.getuid?.()): void {
  let st = lstatOrNull(dir);
  if (!st) {
    makeDirs(dir);
    st = lstatSync(dir);
  }
  if (st.isSymbolicLink()) throw new Error(`state dir ${dir} is a symbolic link: refusing to write through it`);
  if (!st.isDirectory()) throw new Error(`state dir ${dir} is not a folder`);
  if (uid !== undefined && st.uid !== uid && st.uid !== 0)
    throw new Error(`state dir ${dir} belongs to uid ${st.uid}, not to uid ${uid} or root: refusing to write there`);
  if (st.mode & 0o022)
    throw new Error(`state dir ${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)}): refusing to write there (chmod go-w)`);
  for (const f of STATE_FILES) {
    const fs = lstatOrNull(join(dir, f));
    if (fs && !fs.isFile())
      throw new Error(`${join(dir, f)} is ${fs.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}: refusing to write through it`);
    // a hard link planted while the folder was open to others is another name of someone else's file
    if (fs && fs.nlink > 1) throw new Error(`${join(dir, f)} has ${fs.nlink} names (a hard link): refusing to write through it`);
  }
}
