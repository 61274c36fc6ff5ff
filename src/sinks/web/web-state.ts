/**
 * The web configuration in effect, taken again when its file or the files it
 * names change on disk (a certificate renewed by certbot or cert-manager, a
 * user added): looked at, at most once a second, when a connection or a
 * request comes, as exporter-toolkit reads its file at every connection and
 * request. Unlike exporter-toolkit, a file that breaks (half written, a key
 * that does not match) does not fail the requests: the one in use is kept,
 * and why the new one was not taken is logged once.
 */
import { statSync } from 'node:fs';
import type { Logger } from '../../core/log.js';
import { BasicAuth } from './basic-auth.js';
import { serverTls, type ServerTls } from './tls-server.js';
import { readWebConfig, type WebConfig } from './web-config.js';
import { TokenBuckets } from '../../core/token-buckets.js';

interface Taken {
  readonly config: WebConfig;
  readonly tls: ServerTls | null;
}

/** A web configuration and the TLS it makes; throws a WebConfigError naming the key. */
export function takeWebConfig(file: string): Taken {
  const config = readWebConfig(file);
  return { config, tls: config.tls ? serverTls(file, config.tls) : null };
}

function stampOf(paths: readonly string[]): string {
  let s = '';
  for (const p of paths) {
    try {
      const st = statSync(p);
      s += `${st.ino}:${st.size}:${st.mtimeMs};`;
    } catch (e) {
      s += `${(e as NodeJS.ErrnoException).code ?? 'gone'};`;
    }
  }
  return s;
}

/** The files a configuration is made of: itself and the PEM files it names. */
function filesOf(c: WebConfig): string[] {
  const t = c.tls;
  return [c.file, ...(t ? [t.cert.path, t.key.path, t.clientCa?.path].filter((p): p is string => !!p) : [])];
}

export class WebState {
  private taken: Taken;
  private stamp: string;
  private checked: number;
  readonly auth: BasicAuth;
  private limiter: TokenBuckets | undefined;
  /** Bumped when a new configuration is taken. */
  version = 0;

  constructor(
    readonly file: string,
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.taken = takeWebConfig(file);
    this.stamp = stampOf(filesOf(this.taken.config));
    this.checked = this.now();
    this.auth = new BasicAuth(this.taken.config.users);
    this.limiter = this.makeLimiter();
  }

  private makeLimiter(): TokenBuckets | undefined {
    const r = this.taken.config.rateLimit;
    // golang.org/x/time/rate: one token every interval, at most burst of them (a burst of 0 lets nothing through)
    return r ? new TokenBuckets(r.burst, r.intervalMs, 1) : undefined;
  }

  get config(): WebConfig {
    return this.taken.config;
  }

  get tls(): ServerTls | null {
    return this.taken.tls;
  }

  /** Whether the page needs credentials: basic auth, or a verified client certificate. */
  get authenticated(): boolean {
    const c = this.taken.config;
    return c.users.size > 0 || c.tls?.clientAuth === 'RequireAndVerifyClientCert';
  }

  /** The rate_limit's answer for one request (exporter-toolkit's one limiter for the whole endpoint). */
  allow(): boolean {
    return this.limiter ? this.limiter.take('') : true;
  }

  /** Takes the files again if they changed (at most once a second). */
  refresh(): void {
    const t = this.now();
    if (t - this.checked < 1000) return;
    this.checked = t;
    const stamp = stampOf(filesOf(this.taken.config));
    if (stamp === this.stamp) return;
    try {
      const next = takeWebConfig(this.file);
      this.stamp = stampOf(filesOf(next.config));
      const limitChanged = JSON.stringify(next.config.rateLimit) !== JSON.stringify(this.taken.config.rateLimit);
      this.taken = next;
      this.auth.setUsers(next.config.users);
      if (limitChanged) this.limiter = this.makeLimiter();
      this.version++;
      this.log.info('web_config taken again', { file: this.file, tls: !!next.tls, users: next.config.users.size });
    } catch (e) {
      // said once per stamp: the same broken files are not logged at every connection
      this.stamp = stamp;
      this.log.error('web_config changed but cannot be used: keeping the one in use', { error: (e as Error).message });
    }
  }

  close(): void {
    this.auth.close();
  }
}
