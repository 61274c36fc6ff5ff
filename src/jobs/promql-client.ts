/**
 * The PromQL HTTP API client of the job reports (`jobs show --source
 * promql`, `jobs --waste --source promql`, the slurmctld epilog): instant
 * queries through the core's HTTP client, bounded in time and bytes,
 * redirects followed within the backend's origin.
 *
 * Credentials and TLS: the configured ones ([jobs] promql_headers,
 * promql_headers_file, promql_token_file, promql_certificate, the client
 * certificate) belong to [jobs] promql_url's origin and go to no other: a
 * URL given on the command line at another origin gets none of them, only
 * the --header values given with it (promqlOptions).
 */
import { printable } from '../core/printable.js';
import { redactUrl } from '../core/redact.js';
import { createHttpClient, HttpFailure, type Credentials, type HttpClient } from '../core/net/http-client.js';
import { SecretHeaders } from '../core/net/secret-files.js';
import type { TlsFiles } from '../core/net/tls-files.js';
import type { Config } from '../core/config/load.js';
import { readSection } from '../core/config/read.js';
import { secretSourcesOf, tlsFilesOf } from '../core/config/client-keys.js';
import { JOBS_SECTION } from './config.js';

const ELSEWHERE = '; set [jobs] promql_url to where the API is';

export interface Series {
  metric: Record<string, string>;
  values: [number, string][];
}

export interface PromqlOptions {
  url: string;
  window: string;
  /** Headers sent with every query to `url` (the command line's --header). */
  headers?: Record<string, string>;
  /** The configured credentials, for `url` (promqlOptions gives them only where `url` is promql_url's origin). */
  credentials?: Credentials;
  /** The configured TLS files, likewise. */
  tls?: TlsFiles;
  timeoutMs?: number;
  /** The largest answer read (default 64 MiB). */
  maxBytes?: number;
  /** Said with a refusal (401/403): the configured credentials were left out for this origin, or could not be read. */
  credentialsNote?: string;
}

/** A week of 15 s samples of every GPU metric of a 64-GPU job is a few MB of JSON: far beyond that is not an answer to read. */
const MAX_ANSWER_BYTES = 64 << 20;

/** Same-origin redirects followed at most (a proxy's trailing-slash or path rewrite); the next is an error. */
const MAX_REDIRECTS = 5;

/** One client per options object: its connections are reused by every query of a report. */
const clients = new WeakMap<PromqlOptions, HttpClient>();

function clientOf(o: PromqlOptions): HttpClient {
  let c = clients.get(o);
  if (!c) {
    const given = o.headers ?? {};
    const configured = o.credentials;
    c = createHttpClient({
      url: o.url,
      what: 'PromQL',
      timeoutMs: o.timeoutMs ?? 30_000,
      maxResponseBytes: o.maxBytes ?? MAX_ANSWER_BYTES,
      credentials: () => ({ ...(configured?.() ?? {}), ...given }),
      ...(o.tls ? { tls: o.tls } : {}),
      maxSockets: 8,
      redirects: MAX_REDIRECTS,
    });
    clients.set(o, c);
  }
  return c;
}

/** Ends the options' connections (a command's last query done). */
export function closePromql(o: PromqlOptions): void {
  clients.get(o)?.close();
  clients.delete(o);
}

/** An instant query, at `at` (ms since epoch; default: the backend's now). */
export async function query(o: PromqlOptions, q: string, at?: number): Promise<Series[]> {
  const params = new URLSearchParams(at === undefined ? { query: q } : { query: q, time: (at / 1000).toFixed(3) });
  const u = `${o.url.replace(/\/+$/, '')}/api/v1/query?${params}`;
  const where = redactUrl(o.url);
  const client = clientOf(o);
  let r;
  try {
    r = await client.request({ url: u });
  } catch (e) {
    const f = e as HttpFailure;
    const msg = f instanceof HttpFailure ? f.message.replace(/^PromQL: /, '').replace(client.where + ': ', '') : (e as Error).message;
    const fix =
      f instanceof HttpFailure && f.tls
        ? ` (fix [jobs] ${f.tls.fix === 'ca' ? 'promql_certificate' : f.tls.fix === 'cert' ? 'promql_client_certificate' : 'promql_url'})`
        : '';
    throw new Error(
      `PromQL ${where}: ` +
        `${msg}${f instanceof HttpFailure && f.kind === 'redirect' && msg.includes('another origin') ? ELSEWHERE : ''}${fix}`,
    );
  }
  const max = o.maxBytes ?? MAX_ANSWER_BYTES;
  if (r.cut === 'too-large')
    throw new Error(
      `PromQL ${where}: the answer is larger than ${(max / 1048576).toFixed(0)} MiB (query: ${q}): ` +
        `stopped reading it; a shorter --window asks for less`,
    );
  if (r.cut) throw new Error(`PromQL ${where}: HTTP ${r.status}, ${r.cutReason ?? 'the answer broke off'}`);
  const text = r.body.toString('utf8');
  let j: { status?: string; error?: string; data?: { resultType: string; result: (Series & { value?: [number, string] })[] } };
  try {
    j = JSON.parse(text);
  } catch {
    // the answer of a backend (or a proxy before it) may echo the request's credentials
    const note = (r.status === 401 || r.status === 403) && o.credentialsNote ? ` (${o.credentialsNote})` : '';
    throw new Error(`PromQL ${where}: HTTP ${r.status}${note}, not a PromQL API answer: ${printable(client.mask(text).slice(0, 120))}`);
  }
  if (j.status !== 'success')
    throw new Error(`PromQL ${where}: ${j.error === undefined ? `HTTP ${r.status}` : client.mask(String(j.error))} (query: ${q})`);
  if (j.data?.resultType === 'matrix') return j.data.result;
  // an instant vector (last_over_time): one sample a series
  return j.data?.resultType === 'vector' ? j.data.result.map((r) => ({ metric: r.metric, values: r.value ? [r.value] : [] })) : [];
}

/**
 * The options a command queries with: `url` (--url) or [jobs] promql_url;
 * the configured credentials and TLS files only where the URL is at
 * promql_url's origin. `optional`: a command any user runs, for whom root's
 * secret files are unreadable: the query goes without them (and a refusal
 * says so) instead of failing.
 */
export function promqlOptions(
  cfg: Config,
  o: { url?: string | undefined; window: string; headers?: Record<string, string>; optional?: boolean },
): PromqlOptions | undefined {
  const jobs = readSection(cfg, JOBS_SECTION);
  const url = o.url ?? jobs.promql_url;
  if (!url) return undefined;
  const configured = jobs.promql_url ? new URL(jobs.promql_url).origin : undefined;
  const base: PromqlOptions = { url, window: o.window, ...(o.headers && Object.keys(o.headers).length ? { headers: o.headers } : {}) };
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    throw new Error(`"${printable(url.slice(0, 80))}" is not a URL`);
  }
  if (origin !== configured) {
    const secrets = Object.keys(jobs.promql_headers).length || jobs.promql_headers_file || jobs.promql_token_file;
    return secrets && configured
      ? { ...base, credentialsNote: `the configured [jobs] promql_* credentials are for ${configured} and were not sent to ${origin}` }
      : base;
  }
  const secrets = new SecretHeaders(secretSourcesOf('jobs', 'promql_', jobs, { headers: jobs.promql_headers }, o.optional));
  const unread = secrets.unread.length ? `no credential from ${secrets.unread.join(', ')}: not readable by this user` : undefined;
  return {
    ...base,
    credentials: secrets.credentials,
    tls: tlsFilesOf('jobs', 'promql_', jobs),
    ...(unread ? { credentialsNote: unread } : {}),
  };
}
