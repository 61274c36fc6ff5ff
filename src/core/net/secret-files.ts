/**
 * Credentials kept out of l9gpu.ini: a `headers_file` (one `Name: value`
 * header a line, as `curl -H @file` reads it; # starts a comment) and a
 * `token_file` (a bearer token, sent as `Authorization: Bearer <token>`), so
 * that the configuration can stay readable by every user (their `l9gpu
 * jobs` reads it) while the secrets are root's alone.
 *
 * The files are read when the client is made (a file that cannot be read is
 * a configuration error naming its key) and again when they change on disk
 * (a token rotated in place), checked at most once a second; a file that
 * breaks later keeps the last good value and says why (`problem`).
 *
 * For a command run by a user who may not read them (a user's `l9gpu jobs
 * show --source promql` on a node whose PromQL token is root's), `optional`
 * makes an unreadable file no credential rather than an error: the request
 * goes without it, and `unread` says which file it lacked.
 */
import { readFileSync, statSync } from 'node:fs';
import { checkHeader, ConfigError } from '../config/schema.js';
import type { Credentials } from './http-client.js';

export interface SecretSources {
  readonly section: string;
  /** Headers written in the configuration itself (their key: `headers`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The bearer token written in the configuration itself. */
  readonly token?: string | null;
  readonly headersFile?: { readonly key: string; readonly path: string | null };
  readonly tokenFile?: { readonly key: string; readonly path: string | null };
  /** An unreadable file (EACCES) is no credential, not an error (`unread` names it). */
  readonly optional?: boolean;
}

const MAX_SECRET_BYTES = 64 * 1024;

/** A headers file's text as headers; throws naming the line (never a value). */
export function parseHeadersFile(text: string, where: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`${where}:${i + 1}: not "Name: value"`);
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    try {
      checkHeader(name, value);
    } catch (e) {
      throw new Error(`${where}:${i + 1}: ${(e as Error).message}`);
    }
    if (Object.keys(out).some((k) => k.toLowerCase() === name.toLowerCase()))
      throw new Error(`${where}:${i + 1}: header ${name} set twice`);
    out[name] = value;
  });
  return out;
}

function readSecret(path: string): string {
  const st = statSync(path);
  if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
  if (st.size > MAX_SECRET_BYTES)
    throw Object.assign(new Error(`${st.size} bytes, over the 64 KiB a secret file may have`), { code: 'EFBIG' });
  return readFileSync(path, 'utf8');
}

const stampOf = (path: string | null | undefined): string => {
  if (!path) return '';
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? 'gone';
  }
};

/** The credentials of one client: the configuration's headers, then the headers file's, then the token. */
export class SecretHeaders {
  private value: Record<string, string> = {};
  private stamp = '';
  private checked = -Infinity;
  /** Why the files on disk are not what is sent (the last good values are), until they are. */
  problem: string | undefined;
  /** The files that could not be read (optional sources only): no credential came from them. */
  readonly unread: string[] = [];

  constructor(
    private readonly s: SecretSources,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.value = this.read(true);
    this.stamp = stampOf(s.headersFile?.path) + '|' + stampOf(s.tokenFile?.path);
    this.checked = this.now();
  }

  /** Whether any credential is configured (even one this process could not read). */
  get configured(): boolean {
    return !!(Object.keys(this.s.headers ?? {}).length || this.s.token || this.s.headersFile?.path || this.s.tokenFile?.path);
  }

  private read(first: boolean): Record<string, string> {
    const s = this.s;
    const out: Record<string, string> = { ...(s.headers ?? {}) };
    const fail = (key: string, path: string, e: NodeJS.ErrnoException | Error): never => {
      const code = (e as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied' : e.message;
      throw new ConfigError(`[${s.section}] ${key}: cannot read ${path}: ${why}`, { section: s.section, key });
    };
    const take = (f: { key: string; path: string | null } | undefined, use: (text: string, where: string) => void): void => {
      if (!f?.path) return;
      let text: string;
      try {
        text = readSecret(f.path);
      } catch (e) {
        if (s.optional && (e as NodeJS.ErrnoException).code === 'EACCES') {
          if (first) this.unread.push(f.path);
          return;
        }
        return fail(f.key, f.path, e as Error);
      }
      try {
        use(text, f.path);
      } catch (e) {
        throw new ConfigError(`[${s.section}] ${f.key}: ${(e as Error).message}`, { section: s.section, key: f.key });
      }
    };
    take(s.headersFile, (text, where) => Object.assign(out, parseHeadersFile(text, where)));
    let token = s.token ?? null;
    take(s.tokenFile, (text, where) => {
      const t = text.trim();
      if (t === '') throw new Error(`${where} is empty`);
      if (/[\s\x00-\x1f\x7f]/.test(t)) throw new Error(`${where}: a token is one line without spaces or control characters`);
      token = t;
    });
    if (token) {
      for (const k of Object.keys(out)) if (k.toLowerCase() === 'authorization') delete out[k];
      out.authorization = `Bearer ${token}`;
    }
    return out;
  }

  /** The headers to send now (read again if a file changed). */
  get(): Record<string, string> {
    const t = this.now();
    if (t - this.checked < 1000) return this.value;
    this.checked = t;
    const stamp = stampOf(this.s.headersFile?.path) + '|' + stampOf(this.s.tokenFile?.path);
    if (stamp === this.stamp) return this.value;
    try {
      this.value = this.read(false);
      this.stamp = stamp;
      this.problem = undefined;
    } catch (e) {
      this.problem = `${(e as Error).message} (the values read before are sent)`;
    }
    return this.value;
  }

  /** As an HTTP client takes them. */
  get credentials(): Credentials {
    return () => this.get();
  }
}

/** Whether a user other than the owner (and root's group) can read the file: a secret there is no secret. */
export function readableByOthers(path: string): boolean {
  try {
    const st = statSync(path);
    return (st.mode & 0o004) !== 0 || ((st.mode & 0o040) !== 0 && st.gid !== 0);
  } catch {
    return false;
  }
}
