/**
 * Files and folders in local users' hands, opened by the root daemon. A user
 * can put anything where a file is expected: a FIFO (an open() without
 * O_NONBLOCK waits for a writer forever, and a synchronous open holds the
 * event loop: no sampling, no SIGTERM), a symbolic link to a root-only file,
 * a hard link to one, a device. So a user file is only ever opened here:
 *
 * - O_NOFOLLOW: a link in the last part of the path is refused by the kernel,
 *   not stat()ed first and opened after (the name can change in between);
 * - O_NONBLOCK: a FIFO opens at once (and is then refused), it never waits;
 * - O_CLOEXEC: libuv adds it to every open, so no descriptor leaks into the
 *   tools the daemon runs;
 * - then fstat() on the descriptor, which says what was actually opened: a
 *   regular file, owned by whom the caller expects, or it is closed again.
 *
 * A folder is opened the same way (O_DIRECTORY|O_NOFOLLOW: its last part is
 * no link) and listed through the descriptor (/proc/self/fd/N), so the names
 * are those of the folder whose owner fstat() gave. Links in the parts above
 * are not refused (an admin's /scratch may be one); what keeps a swapped
 * parent from leading root into other users' files is the owner check each
 * file gets on every open.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, type Stats } from 'node:fs';
import { processUid } from './proc-owner.js';
import { processStart } from './process-start.js';

const FILE_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Why a user file was not opened: the first two are budgets (limits.ts); 'gone' is no file there (or unreadable). */
export type Refusal = 'not_regular_file' | 'not_owner' | 'gone';

export type Opened = { readonly fd: number; readonly st: Stats } | { readonly refused: Refusal; readonly detail: string };

/** What a file may be owned by. */
export interface OwnerRule {
  /** The owner of the folder the file is in. */
  readonly folderUid: number;
  /** The owner the file had when first opened: a re-opened name must still be that user's. */
  readonly uid?: number;
}

/**
 * Whether a file owned by `uid` (with `nlink` names) is its folder's to give.
 * In a user's folder only that user's files: a root-owned file there is a hard
 * link to one (users cannot make root files), another user's is not this
 * folder's job. In a root folder (a shared, sticky one) anyone's files, but a
 * root-owned one only with one name: a second name is a hard link a user made.
 */
export function ownerAllowed(uid: number, nlink: number, folderUid: number): boolean {
  if (folderUid !== 0) return uid === folderUid;
  return uid !== 0 || nlink === 1;
}

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** Opens a user's file for reading: a regular file owned as `owner` says, or a refusal (nothing stays open). */
export function openUserFile(path: string, owner?: OwnerRule): Opened {
  let fd: number;
  try {
    fd = openSync(path, FILE_FLAGS);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return { refused: 'not_regular_file', detail: 'a symbolic link' };
    return { refused: 'gone', detail: code ?? 'not opened' };
  }
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (e) {
    closeSync(fd);
    return { refused: 'gone', detail: (e as NodeJS.ErrnoException).code ?? 'no fstat' };
  }
  let why: Opened | undefined;
  if (!st.isFile()) why = { refused: 'not_regular_file', detail: kindOf(st) };
  else if (owner && (!ownerAllowed(st.uid, st.nlink, owner.folderUid) || (owner.uid !== undefined && st.uid !== owner.uid))) {
    why = {
      refused: 'not_owner',
      detail: `owned by uid ${st.uid}${st.nlink > 1 ? ` with ${st.nlink} names` : ''}, in a folder of uid ${owner.folderUid}`,
    };
  }
  if (why) {
    closeSync(fd);
    return why;
  }
  return { fd, st };
}

export type Listed = { readonly names: string[]; readonly st: Stats } | { readonly refused: Refusal; readonly detail: string };

/** A user's folder's names, through a descriptor of the folder itself (its last part no link), and its fstat. */
export function listUserDir(path: string): Listed {
  let fd: number;
  try {
    fd = openSync(path, DIR_FLAGS);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // with O_DIRECTORY a link is ENOTDIR, not ELOOP: which of the two it was, for the message only
    if (code === 'ELOOP' || (code === 'ENOTDIR' && lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()))
      return { refused: 'not_regular_file', detail: 'a symbolic link' };
    if (code === 'ENOTDIR') return { refused: 'not_regular_file', detail: 'not a folder' };
    return { refused: 'gone', detail: code ?? 'not opened' };
  }
  try {
    const st = fstatSync(fd);
    return { names: readdirSync(`/proc/self/fd/${fd}`), st };
  } catch (e) {
    return { refused: 'gone', detail: (e as NodeJS.ErrnoException).code ?? 'not listed' };
  } finally {
    closeSync(fd);
  }
}

/**
 * A process's real uid (the Uid: line of /proc/<pid>/status, written by the
 * kernel) and start time, which together name the process across pid reuse;
 * undefined when there is no such process.
 */
export function processOwner(pid: number, proc = '/proc'): { uid: number; start: string | undefined } | undefined {
  const uid = processUid(pid, proc);
  return uid === undefined ? undefined : { uid, start: processStart(pid, proc) };
}
