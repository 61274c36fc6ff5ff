/** Who may see which jobs: root and the [jobs] admin_group see all, everyone else their own. */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { requireTool, runTool } from '../core/tool.js';

export interface Viewer {
  name: string;
  privileged: boolean;
}

function groupGid(name: string): number | undefined {
  try {
    const line = readFileSync('/etc/group', 'utf8')
      .split('\n')
      .find((l) => l.split(':')[0] === name);
    return line ? Number(line.split(':')[2]) : undefined;
  } catch {
    return undefined;
  }
}

export function viewer(adminGroup: string | null): Viewer {
  const name = userInfo().username;
  if (process.getuid?.() === 0) return { name, privileged: true };
  const gid = adminGroup ? groupGid(adminGroup) : undefined;
  return { name, privileged: gid !== undefined && (process.getgroups?.() ?? []).includes(gid) };
}

/** What NSS says of a uid: its name ('' for none) and its groups' names. */
export interface UidInfo {
  name: string;
  groups: string[];
}

/** NSS through `id`, so that LDAP and SSSD users count, not /etc files alone. */
export async function lookupUid(uid: number): Promise<UidInfo> {
  const id = (args: string[]) =>
    Promise.resolve()
      .then(() => runTool(requireTool('id', ['/usr/bin', '/bin'], 'coreutils'), args, 2000))
      .then(
        (out) => out.trim(),
        () => '',
      );
  const [name, groups] = await Promise.all([id(['-nu', String(uid)]), id(['-nG', String(uid)])]);
  return { name, groups: groups.split(/\s+/).filter(Boolean) };
}

export interface ViewerCacheOptions {
  lookup?: (uid: number) => Promise<UidInfo>;
  ttlMs?: number;
  /** Lookups running at once, all uids together. */
  concurrency?: number;
  /** Uids remembered; past it the oldest answer is forgotten. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The viewer behind a uid the kernel vouched for (a socket peer). Every
 * connection asks, and NSS is a child process (or an LDAP round trip): the
 * answer is kept per uid for a while, one lookup per uid is in flight at a
 * time, and only a few run at once, so that a user's burst of requests costs
 * a lookup, not a process each.
 */
export class ViewerCache {
  private readonly known = new Map<number, { info: UidInfo; at: number }>();
  private readonly pending = new Map<number, Promise<UidInfo>>();
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private readonly lookup: (uid: number) => Promise<UidInfo>;
  private readonly ttlMs: number;
  private readonly concurrency: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(o: ViewerCacheOptions = {}) {
    this.lookup = o.lookup ?? lookupUid;
    this.ttlMs = o.ttlMs ?? 60_000;
    this.concurrency = o.concurrency ?? 4;
    this.maxEntries = o.maxEntries ?? 4096;
    this.now = o.now ?? Date.now;
  }

  /** The name NSS gave this uid, if it is known now (no lookup). */
  nameOf(uid: number): string | undefined {
    return uid === 0 ? 'root' : this.known.get(uid)?.info.name || undefined;
  }

  async viewer(uid: number, adminGroup: string | null): Promise<Viewer> {
    if (uid === 0) return { name: 'root', privileged: true };
    const info = await this.info(uid);
    // a uid without a name still gets its own jobs only: none match it
    return { name: info.name || `#${uid}`, privileged: !!adminGroup && info.groups.includes(adminGroup) };
  }

  private info(uid: number): Promise<UidInfo> {
    const k = this.known.get(uid);
    if (k && this.now() - k.at < this.ttlMs) return Promise.resolve(k.info);
    let p = this.pending.get(uid);
    if (!p) {
      p = this.limited(() => this.lookup(uid))
        .catch((): UidInfo => ({ name: '', groups: [] }))
        .then((info) => {
          this.known.delete(uid);
          if (this.known.size >= this.maxEntries) this.known.delete(this.known.keys().next().value!);
          // no name (NSS down, or the uid is gone) is asked again sooner: a passing LDAP outage must not hide a user's jobs for long
          this.known.set(uid, { info, at: info.name ? this.now() : this.now() - this.ttlMs + Math.min(this.ttlMs, 5000) });
          return info;
        })
        .finally(() => this.pending.delete(uid));
      this.pending.set(uid, p);
    }
    return p;
  }

  private async limited<T>(fn: () => Promise<T>): Promise<T> {
    // a finished lookup hands its slot to the next waiting one, so that a newcomer cannot slip in between
    if (this.running >= this.concurrency) await new Promise<void>((r) => this.waiting.push(r));
    else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
