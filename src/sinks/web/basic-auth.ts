/**
 * Basic authentication against a web configuration's bcrypt hashes, kept off
 * the scrape path: bcrypt is slow by design (70 ms at cost 10 in this
 * process's bcrypt, doubling per step of cost), so
 *
 * - a verified answer is cached, as exporter-toolkit caches it: keyed by a
 *   SHA-256 of the user, the hash and the password (the hash in the key: a
 *   changed web_config verifies again), right and wrong answers alike, so a
 *   scraper sending the same credentials every interval costs one hash
 *   lookup after its first scrape, and the same wrong password repeated costs
 *   nothing either;
 * - the comparisons the cache cannot answer run one at a time on a worker
 *   thread (made at the first, ended after a minute without one), never on
 *   the thread that serves scrapes and collects;
 * - each peer may make a few such comparisons (a burst of 5, then one every
 *   10 s): a client trying passwords gets 401 without costing a
 *   comparison past that, counted as `auth_throttled`;
 * - an unknown user is compared against a fixed hash, as exporter-toolkit
 *   does, so that the time of the answer does not tell which users exist.
 */
import { createHash } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { requireBuiltin } from '../../core/builtin.js';
import { TokenBuckets } from '../../core/token-buckets.js';
import { bcryptjsHash } from './web-config.js';

/** exporter-toolkit's: bcrypt of "fakepassword", cost 10. */
const DUMMY_HASH = '$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi';
const CACHE_MAX = 256;
const WORKER_IDLE_MS = 60_000;
/** Comparisons waiting for the worker; past it a request is refused (401) without one. */
const QUEUE_MAX = 16;

export type AuthResult = 'ok' | 'denied' | 'throttled';

/** The user and password of an Authorization: Basic header, as Go's Request.BasicAuth reads it. */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  if (!header) return undefined;
  const m = /^basic /i.exec(header);
  if (!m) return undefined;
  const raw = Buffer.from(header.slice(6), 'base64').toString('utf8');
  // Go's base64.StdEncoding refuses what is not padded base64; Node's decoder passes over it: written back, it must be the same
  if (Buffer.from(header.slice(6), 'base64').toString('base64') !== header.slice(6)) return undefined;
  const colon = raw.indexOf(':');
  if (colon < 0) return undefined;
  return { user: raw.slice(0, colon), password: raw.slice(colon + 1) };
}

export class BasicAuth {
  private readonly cache = new Map<string, boolean>();
  private worker: Worker | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, (ok: boolean | undefined) => void>();
  private readonly budget = new TokenBuckets(5, 10_000);

  constructor(private users: ReadonlyMap<string, string>) {}

  /** The users of a web_config read again (a changed file): cached answers stay keyed by their hashes. */
  setUsers(users: ReadonlyMap<string, string>): void {
    this.users = users;
  }

  get enabled(): boolean {
    return this.users.size > 0;
  }

  /** Whether the request's Authorization header names a user of the file with its password. */
  async check(header: string | undefined, peer: string): Promise<AuthResult> {
    const creds = parseBasic(header);
    if (!creds) return 'denied';
    const known = this.users.get(creds.user);
    const hash = known ?? DUMMY_HASH;
    const key = createHash('sha256').update(creds.user).update('\0').update(hash).update('\0').update(creds.password).digest('base64');
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached && known !== undefined ? 'ok' : 'denied';
    if (!this.budget.take(peer) || this.waiting.size >= QUEUE_MAX) return 'throttled';
    const ok = await this.compare(creds.password, hash);
    // a comparison that did not happen (the worker died) is no answer to keep
    if (ok === undefined) return 'denied';
    if (this.cache.size >= CACHE_MAX) {
      // a tenth out, the oldest first: a scraper's entry is used every interval and comes back at once if dropped
      let n = Math.max(1, CACHE_MAX / 10);
      for (const k of this.cache.keys()) {
        this.cache.delete(k);
        if (--n === 0) break;
      }
    }
    this.cache.set(key, ok);
    return ok && known !== undefined ? 'ok' : 'denied';
  }

  /** bcrypt's answer, or undefined when the worker could not give one. */
  private compare(password: string, hash: string): Promise<boolean | undefined> {
    clearTimeout(this.idleTimer);
    if (!this.worker) {
      const { Worker } = requireBuiltin('node:worker_threads') as typeof import('node:worker_threads');
      const w = new Worker(new URL('./bcrypt-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: 16 } });
      w.unref();
      w.on('message', (m: { id: number; ok: boolean }) => {
        const done = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        done?.(m.ok);
        if (this.waiting.size === 0) this.idleLater();
      });
      const fail = (): void => {
        // a worker that died answers no one: its waiting requests are refused, the next makes a new one
        for (const done of this.waiting.values()) done(undefined);
        this.waiting.clear();
        if (this.worker === w) this.worker = undefined;
      };
      w.on('error', fail);
      w.on('exit', fail);
      this.worker = w;
    }
    const id = this.nextId++;
    return new Promise<boolean | undefined>((resolve) => {
      this.waiting.set(id, resolve);
      this.worker!.postMessage({ id, password, hash: bcryptjsHash(hash) });
    });
  }

  private idleLater(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(), WORKER_IDLE_MS);
    this.idleTimer.unref();
  }

  close(): void {
    clearTimeout(this.idleTimer);
    const w = this.worker;
    this.worker = undefined;
    void w?.terminate();
  }
}
