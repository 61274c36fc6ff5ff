/**
 * Who owns a process: the real uid of /proc/<pid>/status, and the name the
 * system's user database (NSS: passwd files, LDAP, sssd) gives it. A page
 * served by a user's process is that user's to answer for: its series count
 * against their budget and carry their name.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The process's real uid (the user who started it), or undefined when it is gone. */
export function processUid(pid: number, proc = '/proc'): number | undefined {
  let s: string;
  try {
    s = readFileSync(`${proc}/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  }
  const m = /^Uid:\s+(\d+)/m.exec(s);
  return m ? Number(m[1]) : undefined;
}

type GetPwUid = (uid: number) => unknown;
let getpwuid: GetPwUid | null | undefined;
let decode: ((p: unknown, type: string) => string) | undefined;
/** A uid's name, or its digits while the user database had none (asked again after UNNAMED_RETRY_MS). */
const names = new Map<number, { name: string; until: number }>();
/** An unnamed uid may be a database that was down (sssd restarting, LDAP away), not a user without a name. */
const UNNAMED_RETRY_MS = 60_000;

/**
 * A uid's user name, or the uid as a string where the user database has
 * none. getpwuid through NSS, not /etc/passwd alone: cluster users are in
 * LDAP. Kept per uid (a lookup may go to the network); bounded.
 */
export function userName(uid: number, now = Date.now()): string {
  const known = names.get(uid);
  if (known !== undefined && now < known.until) return known.name;
  let name: string | undefined;
  if (getpwuid === undefined) {
    try {
      const koffi = createRequire(import.meta.url)('koffi') as {
        load(lib: string): { func(sig: string): GetPwUid };
        decode(p: unknown, type: string): string;
      };
      getpwuid = koffi.load('libc.so.6').func('void *getpwuid(uint32_t uid)');
      decode = koffi.decode.bind(koffi);
    } catch {
      getpwuid = null; // not glibc, or no koffi: uids stand for names
    }
  }
  if (getpwuid && decode) {
    try {
      const p = getpwuid(uid);
      // struct passwd's first field is pw_name
      if (p) name = decode(p, 'const char *') || undefined;
    } catch {
      /* the uid stands */
    }
  }
  if (names.size >= 4096) names.clear();
  names.set(
    uid,
    name === undefined ? { name: String(uid), until: getpwuid ? now + UNNAMED_RETRY_MS : Infinity } : { name, until: Infinity },
  );
  return name ?? String(uid);
}
