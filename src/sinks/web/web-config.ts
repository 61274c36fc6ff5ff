/**
 * `[prometheus] web_config`: the web configuration file of Prometheus'
 * exporter-toolkit (`--web.config.file` of node_exporter, dcgm-exporter 4.x
 * and every exporter built on it), read as exporter-toolkit reads it, so that
 * the file a site already gives node_exporter works here unchanged and a file
 * it refuses is refused here too (docs/security.md's conformance table runs
 * both on the same files):
 *
 * - YAML 1.1 (Go's yaml.v2: `yes` is a boolean), strict: an unknown key, a
 *   key set twice or a value of the wrong type is an error naming the key;
 * - `tls_server_config`: TLS when any of cert, key, client CA or
 *   client_auth_type is set, then cert and key required and matching;
 *   relative paths from the file's folder; `client_ca_file` read (its
 *   content is not checked, as Go's AppendCertsFromPEM does not);
 *   client_auth_type one of Go's five; a client CA without a policy that
 *   uses it refused; cipher suites by Go's names (the secure ones,
 *   crypto/tls CipherSuites()), curves CurveP256/P384/P521 and X25519,
 *   versions TLS10..TLS13; with HTTP/2 on (the default), a cipher list
 *   without an AES-128-GCM suite refused, as Go's http2 refuses it;
 * - `basic_auth_users`: bcrypt hashes, each one bcrypt's own parser takes
 *   (golang.org/x/crypto/bcrypt Cost: the version, the cost 4..31, 59
 *   bytes at least);
 * - `http_server_config`: `http2`, and `headers` only among the five
 *   exporter-toolkit allows, X-Content-Type-Options and X-Frame-Options
 *   with their allowed values;
 * - `rate_limit`: interval (a Go duration) and burst.
 *
 * The YAML parser is loaded at the first read (only a configured web_config
 * needs it).
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type YAML from 'yaml';
import { requireBuiltin } from '../../core/builtin.js';

export type ClientAuth =
  'NoClientCert' | 'RequestClientCert' | 'RequireAnyClientCert' | 'VerifyClientCertIfGiven' | 'RequireAndVerifyClientCert';
export type TlsVersion = 'TLS10' | 'TLS11' | 'TLS12' | 'TLS13';

/** A PEM given as a file or inline in the YAML. */
export interface PemSource {
  readonly path?: string;
  readonly inline?: string;
}

export interface TlsServerSettings {
  readonly cert: PemSource;
  readonly key: PemSource;
  readonly clientCa: PemSource | null;
  readonly clientAuth: ClientAuth;
  /** Go's names, as written. */
  readonly cipherSuites: readonly string[];
  readonly curves: readonly string[];
  readonly minVersion: TlsVersion;
  readonly maxVersion: TlsVersion;
  readonly preferServerCipherSuites: boolean;
  /** null: any SAN (no check). */
  readonly clientAllowedSans: readonly string[] | null;
}

export interface WebConfig {
  readonly file: string;
  /** null: plain HTTP. */
  readonly tls: TlsServerSettings | null;
  /** user -> bcrypt hash; empty: no basic authentication. */
  readonly users: ReadonlyMap<string, string>;
  readonly headers: Readonly<Record<string, string>>;
  readonly http2: boolean;
  /** null: no rate limit. */
  readonly rateLimit: { readonly intervalMs: number; readonly burst: number } | null;
}

export class WebConfigError extends Error {
  constructor(
    readonly file: string,
    /** The key, as a path in the YAML (tls_server_config.cert_file). */
    readonly key: string | undefined,
    message: string,
  ) {
    super(`${file}${key ? `: ${key}` : ''}: ${message}`);
    this.name = 'WebConfigError';
  }
}

const CLIENT_AUTH: Record<string, ClientAuth> = {
  '': 'NoClientCert',
  NoClientCert: 'NoClientCert',
  RequestClientCert: 'RequestClientCert',
  RequireAnyClientCert: 'RequireAnyClientCert',
  // kept by exporter-toolkit for backwards compatibility
  RequireClientCert: 'RequireAnyClientCert',
  VerifyClientCertIfGiven: 'VerifyClientCertIfGiven',
  RequireAndVerifyClientCert: 'RequireAndVerifyClientCert',
};

/** Go's crypto/tls CipherSuites() (the secure ones exporter-toolkit takes), by Go's name: OpenSSL's name, and whether it is TLS 1.3's. */
export const CIPHER_SUITES: Readonly<Record<string, { readonly openssl: string; readonly tls13: boolean }>> = {
  TLS_AES_128_GCM_SHA256: { openssl: 'TLS_AES_128_GCM_SHA256', tls13: true },
  TLS_AES_256_GCM_SHA384: { openssl: 'TLS_AES_256_GCM_SHA384', tls13: true },
  TLS_CHACHA20_POLY1305_SHA256: { openssl: 'TLS_CHACHA20_POLY1305_SHA256', tls13: true },
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: { openssl: 'ECDHE-ECDSA-AES128-SHA', tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: { openssl: 'ECDHE-ECDSA-AES256-SHA', tls13: false },
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: { openssl: 'ECDHE-RSA-AES128-SHA', tls13: false },
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: { openssl: 'ECDHE-RSA-AES256-SHA', tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: { openssl: 'ECDHE-ECDSA-AES128-GCM-SHA256', tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: { openssl: 'ECDHE-ECDSA-AES256-GCM-SHA384', tls13: false },
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: { openssl: 'ECDHE-RSA-AES128-GCM-SHA256', tls13: false },
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: { openssl: 'ECDHE-RSA-AES256-GCM-SHA384', tls13: false },
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: { openssl: 'ECDHE-RSA-CHACHA20-POLY1305', tls13: false },
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: { openssl: 'ECDHE-ECDSA-CHACHA20-POLY1305', tls13: false },
};

/** exporter-toolkit's curves: OpenSSL's names. */
export const CURVES: Readonly<Record<string, string>> = { CurveP256: 'P-256', CurveP384: 'P-384', CurveP521: 'P-521', X25519: 'X25519' };

export const TLS_VERSIONS: Readonly<Record<TlsVersion, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'>> = {
  TLS10: 'TLSv1',
  TLS11: 'TLSv1.1',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
};

/** The response headers exporter-toolkit lets a site set, and the values allowed where it restricts them. */
const EXTRA_HEADERS: Readonly<Record<string, readonly string[] | null>> = {
  'Strict-Transport-Security': null,
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': null,
  'Content-Security-Policy': null,
};

/** Go's http2 needs one of these in a configured TLS 1.2 cipher list (http2.ConfigureServer). */
const HTTP2_REQUIRED = ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256'];

const MAX_FILE_BYTES = 1 << 20;

/**
 * Whether golang.org/x/crypto/bcrypt's parser takes the hash (its Cost()):
 * at least 59 bytes, `$`, a major version no newer than 2, an optional minor
 * letter, a two-digit cost from 4 to 31. Only the form: the hash itself is
 * checked by bcrypt when a password is compared.
 */
export function bcryptHashProblem(hash: string): string | undefined {
  const b = Buffer.from(hash, 'utf8');
  if (b.length < 59) return 'crypto/bcrypt: hashedSecret too short to be a bcrypted password';
  if (b[0] !== 0x24)
    return `crypto/bcrypt: bcrypt hashes must start with '$', but hashedSecret started with '${String.fromCharCode(b[0]!)}'`;
  if (b[1]! > 0x32)
    return `crypto/bcrypt: bcrypt algorithm version '${String.fromCharCode(b[1]!)}' requested is newer than current version '2'`;
  const at = b[2] === 0x24 ? 3 : 4;
  const digits = b.subarray(at, at + 2).toString('latin1');
  // strconv.Atoi: an optional sign, then digits only
  if (!/^[+-]?\d+$/.test(digits)) return `strconv.Atoi: parsing "${digits}": invalid syntax`;
  const cost = Number(digits);
  if (cost < 4 || cost > 31) return `crypto/bcrypt: cost ${cost} is outside allowed inclusive range 4..31`;
  return undefined;
}

/**
 * The hash in the form bcryptjs reads, for the comparison Go's bcrypt makes:
 * Go takes any version up to 2 with any minor letter or none (`$2$`, `$2x$`,
 * `$2y$`) and computes each as 2a and 2b do (the key NUL-terminated), reads
 * the two bytes of the cost with strconv.Atoi and passes over the byte after
 * them; bcryptjs throws on a letter other than a, b, y, and computes `$2$`
 * without the NUL. So the prefix is written `$2b$` with the cost in two
 * digits, the salt and digest unchanged. For a hash bcryptHashProblem took.
 */
export function bcryptjsHash(hash: string): string {
  const at = hash[2] === '$' ? 3 : 4;
  return `$2b$${String(Number(hash.slice(at, at + 2))).padStart(2, '0')}$${hash.slice(at + 3)}`;
}

/** A Go time.Duration as yaml.v2 takes it: a duration string, or an integer of nanoseconds. */
function goDurationMs(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v / 1e6;
  if (typeof v !== 'string') return undefined;
  if (v === '0') return 0;
  const m = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.exec(v);
  if (!m) return undefined;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 };
  let ms = 0;
  for (const part of v.replace(/^[+-]/, '').matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    ms += Number(part[1]) * unit[part[2]!]!;
  return m[1] === '-' ? -ms : ms;
}

const loadYaml = (): typeof YAML => requireBuiltin('yaml') as typeof YAML;

type Obj = Record<string, unknown>;

/**
 * The fields of one YAML mapping, read as Go's strict unmarshal into a struct
 * does: from the document as YAML 1.1 types it (`o`: booleans, integers) and
 * from the same document with each scalar as its text (`t`), since yaml.v2
 * decodes any scalar into a string as the text written (a user `0100`, a
 * header value `0x10`, a key `yes`), where the typed value would be 64, 16
 * and true.
 */
class Fields {
  private readonly seen = new Set<string>();
  constructor(
    private readonly file: string,
    private readonly at: string,
    private readonly o: Obj,
    private readonly t: Obj,
  ) {}

  private err(key: string | undefined, msg: string): WebConfigError {
    return new WebConfigError(this.file, key === undefined ? this.at || undefined : this.at ? `${this.at}.${key}` : key, msg);
  }

  private take(key: string): unknown {
    this.seen.add(key);
    return this.o[key];
  }

  private text(key: string): unknown {
    this.seen.add(key);
    return this.t[key];
  }

  /** Unknown keys (as written): yaml.v2's UnmarshalStrict refuses them. */
  done(): void {
    for (const k of Object.keys(this.t))
      if (!this.seen.has(k)) throw this.err(k, `field ${k} not found in type ${this.at || 'web.Config'}`);
  }

  string(key: string): string {
    const v = this.text(key);
    if (v === undefined || v === null) return '';
    // yaml.v2 decodes any scalar into a string field as its text
    if (typeof v === 'string') return v;
    throw this.err(key, `cannot unmarshal a ${Array.isArray(v) ? 'sequence' : 'mapping'} into a string`);
  }

  bool(key: string, dflt: boolean): boolean {
    if (!(key in this.o)) {
      this.seen.add(key);
      return dflt;
    }
    const v = this.take(key);
    if (v === null) return false;
    if (typeof v === 'boolean') return v;
    throw this.err(key, `cannot unmarshal ${JSON.stringify(v)} into a boolean (true or false)`);
  }

  int(key: string): number {
    const v = this.take(key);
    if (v === undefined || v === null) return 0;
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    throw this.err(key, `cannot unmarshal ${JSON.stringify(v)} into an int`);
  }

  strings(key: string): string[] | null {
    const v = this.text(key);
    if (v === undefined || v === null) return null;
    if (!Array.isArray(v)) throw this.err(key, `cannot unmarshal ${JSON.stringify(v)} into a list`);
    return v.map((x, i) => {
      if (x === null) return '';
      if (typeof x === 'string') return x;
      throw this.err(`${key}[${i}]`, 'cannot unmarshal a collection into a string');
    });
  }

  mapping(key: string): Fields | null {
    const v = this.take(key);
    if (v === undefined || v === null) return null;
    if (typeof v !== 'object' || Array.isArray(v)) throw this.err(key, `cannot unmarshal ${JSON.stringify(v).slice(0, 40)} into a mapping`);
    return new Fields(this.file, this.at ? `${this.at}.${key}` : key, v as Obj, this.t[key] as Obj);
  }

  stringMap(key: string): Map<string, string> {
    const v = this.text(key);
    const out = new Map<string, string>();
    if (v === undefined || v === null) return out;
    if (typeof v !== 'object' || Array.isArray(v))
      throw this.err(key, `cannot unmarshal ${JSON.stringify(v).slice(0, 40)} into a mapping of strings`);
    for (const [k, x] of Object.entries(v as Obj)) {
      if (x === null || x === undefined) out.set(k, '');
      else if (typeof x === 'string') out.set(k, x);
      else throw this.err(`${key}.${k}`, 'cannot unmarshal a collection into a string');
    }
    return out;
  }

  raw(key: string): unknown {
    return this.take(key);
  }

  /** A scalar's text (null: a YAML null), as a Go type's UnmarshalYAML reads it into a string. */
  scalarText(key: string): unknown {
    return this.text(key);
  }

  error(key: string, msg: string): WebConfigError {
    return this.err(key, msg);
  }
}

/** A path of the file as exporter-toolkit's SetDirectory joins it: relative to the web config's folder. */
const joinDir = (dir: string, p: string): string => (p === '' || isAbsolute(p) ? p : join(dir, p));

function readText(file: string): string {
  let st;
  try {
    st = statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new WebConfigError(
      file,
      undefined,
      code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied' : (e as Error).message,
    );
  }
  if (!st.isFile()) throw new WebConfigError(file, undefined, 'not a regular file');
  if (st.size > MAX_FILE_BYTES) throw new WebConfigError(file, undefined, `${st.size} bytes, over the 1 MiB limit`);
  return readFileSync(file, 'utf8');
}

/** Reads a file a PEM key names (cert_file...), as ConfigToTLSConfig reads them at start. */
export function readPem(file: string, key: string, src: PemSource): Buffer {
  if (src.path === undefined) return Buffer.from(src.inline ?? '');
  try {
    const st = statSync(src.path);
    if (!st.isFile()) throw Object.assign(new Error('not a regular file'), {});
    if (st.size > MAX_FILE_BYTES) throw new Error(`${st.size} bytes, over the 1 MiB limit`);
    return readFileSync(src.path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new WebConfigError(
      file,
      key,
      `failed to read ${src.path}: ` +
        `${code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : (e as Error).message}`,
    );
  }
}

/**
 * A scalar node's text as yaml.v2 decodes it into a string: a string as it
 * reads (quotes and escapes undone), a number, boolean or date as written;
 * null and the merge key (`<<`, a symbol) as they are.
 */
function textOf(Y: typeof YAML, node: unknown): unknown {
  if (!Y.isScalar(node)) return node;
  const v = node.value;
  return typeof v === 'string' || typeof v === 'symbol' || v === null ? v : (node.source ?? String(v));
}

/** The path of the first key set twice in a mapping of the document (keys compared by their text, as yaml.v2 does). */
function duplicateKey(Y: typeof YAML, node: unknown, at: string): string | undefined {
  if (Y.isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const k = String(textOf(Y, pair.key));
      const path = at ? `${at}.${k}` : k;
      if (seen.has(k)) return path;
      seen.add(k);
      const inner = duplicateKey(Y, pair.value, path);
      if (inner) return inner;
    }
  } else if (Y.isSeq(node)) {
    for (const [i, item] of node.items.entries()) {
      const inner = duplicateKey(Y, item, `${at}[${i}]`);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** Reads and checks a web configuration file; throws a WebConfigError naming the key. */
export function readWebConfig(file: string): WebConfig {
  const text = readText(file);
  const Y = loadYaml();
  const doc = Y.parseDocument(text, { version: '1.1', uniqueKeys: (a, b) => textOf(Y, a) === textOf(Y, b), prettyErrors: false });
  if (doc.errors.length) {
    // yaml.v2 names the key set twice (`field tls_server_config already set`, `key "alice" already set in map`)
    const twice = doc.errors[0]!.code === 'DUPLICATE_KEY' ? duplicateKey(Y, doc.contents, '') : undefined;
    if (twice) throw new WebConfigError(file, twice, 'set twice in one mapping');
    throw new WebConfigError(file, undefined, `not YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
  }
  let top: unknown;
  let textTop: unknown;
  try {
    top = doc.toJS({ maxAliasCount: 100 });
    const asText = doc.clone();
    Y.visit(asText, {
      Scalar(_key, node) {
        node.value = textOf(Y, node);
      },
    });
    textTop = asText.toJS({ maxAliasCount: 100 });
  } catch (e) {
    throw new WebConfigError(file, undefined, `not YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (top !== null && top !== undefined && (typeof top !== 'object' || Array.isArray(top))) {
    throw new WebConfigError(
      file,
      undefined,
      'cannot unmarshal the document into web.Config: it is not a mapping of tls_server_config, ' +
        'http_server_config, basic_auth_users and rate_limit',
    );
  }
  const root = new Fields(file, '', (top ?? {}) as Obj, (textTop ?? {}) as Obj);
  const dir = dirname(file);

  const t = root.mapping('tls_server_config') ?? new Fields(file, 'tls_server_config', {}, {});
  const certInline = t.string('cert');
  const keyInline = t.string('key');
  const caInline = t.string('client_ca');
  const certFile = joinDir(dir, t.string('cert_file'));
  const keyFile = joinDir(dir, t.string('key_file'));
  const clientAuthRaw = t.string('client_auth_type');
  const caFile = joinDir(dir, t.string('client_ca_file'));
  const cipherNames = t.strings('cipher_suites') ?? [];
  cipherNames.forEach((c, i) => {
    if (!CIPHER_SUITES[c]) throw t.error(`cipher_suites[${i}]`, `unknown cipher: ${c}`);
  });
  const curves = t.strings('curve_preferences') ?? [];
  curves.forEach((c, i) => {
    if (!CURVES[c]) throw t.error(`curve_preferences[${i}]`, `unknown curve: ${c}`);
  });
  const version = (key: string, dflt: TlsVersion): TlsVersion => {
    const v = t.scalarText(key);
    if (v === undefined) return dflt;
    const s = v === null ? '' : String(v);
    if (!(s in TLS_VERSIONS)) throw t.error(key, `unknown TLS version: ${s} (TLS10, TLS11, TLS12 or TLS13)`);
    return s as TlsVersion;
  };
  const minVersion = version('min_version', 'TLS12');
  const maxVersion = version('max_version', 'TLS13');
  const prefer = t.bool('prefer_server_cipher_suites', true);
  const sans = t.strings('client_allowed_sans');
  t.done();

  const h = root.mapping('http_server_config') ?? new Fields(file, 'http_server_config', {}, {});
  const http2 = h.bool('http2', true);
  const headers = Object.fromEntries(h.stringMap('headers'));
  h.done();
  for (const [k, v] of Object.entries(headers)) {
    if (!(k in EXTRA_HEADERS))
      throw new WebConfigError(
        file,
        `http_server_config.headers.${k}`,
        `HTTP header "${k}" can not be configured (only ${Object.keys(EXTRA_HEADERS).join(', ')})`,
      );
    const allowed = EXTRA_HEADERS[k];
    if (allowed && !allowed.includes(v))
      throw new WebConfigError(
        file,
        `http_server_config.headers.${k}`,
        `invalid value for ${k}. Expected one of: ${allowed.map((a) => JSON.stringify(a)).join(', ')}, but got: ${JSON.stringify(v)}`,
      );
  }

  const users = root.stringMap('basic_auth_users');
  for (const [u, hash] of users) {
    const p = bcryptHashProblem(hash);
    if (p) throw new WebConfigError(file, `basic_auth_users.${u}`, `${p} (the value is a bcrypt hash: htpasswd -nBC 10 "" | tr -d ':\\n')`);
  }

  const r = root.mapping('rate_limit') ?? new Fields(file, 'rate_limit', {}, {});
  const intervalRaw = r.raw('interval');
  const intervalMs = intervalRaw === undefined || intervalRaw === null ? 0 : goDurationMs(intervalRaw);
  if (intervalMs === undefined)
    throw r.error('interval', `time: invalid duration ${JSON.stringify(intervalRaw)} (a Go duration: 100ms, 1s, 2m)`);
  const burst = r.int('burst');
  r.done();
  root.done();

  // ConfigToTLSConfig: TLS once any of these is set, and then complete
  const enabled =
    certFile !== '' || certInline !== '' || keyFile !== '' || keyInline !== '' || caFile !== '' || caInline !== '' || clientAuthRaw !== '';
  let tls: TlsServerSettings | null = null;
  if (enabled) {
    if (certFile === '' && certInline === '') throw new WebConfigError(file, 'tls_server_config', 'missing one of cert or cert_file');
    if (keyFile === '' && keyInline === '') throw new WebConfigError(file, 'tls_server_config', 'missing one of key or key_file');
    const clientAuth = CLIENT_AUTH[clientAuthRaw];
    if (!clientAuth)
      throw new WebConfigError(
        file,
        'tls_server_config.client_auth_type',
        `invalid ClientAuth: ${clientAuthRaw} (NoClientCert, RequestClientCert, ` +
          `RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert)`,
      );
    if ((caFile !== '' || caInline !== '') && clientAuth === 'NoClientCert')
      throw new WebConfigError(
        file,
        'tls_server_config.client_ca_file',
        "client CA's have been configured without a Client Auth Policy (set client_auth_type)",
      );
    if (http2 && cipherNames.length > 0 && minVersion !== 'TLS13' && !cipherNames.some((c) => HTTP2_REQUIRED.includes(c))) {
      throw new WebConfigError(
        file,
        'tls_server_config.cipher_suites',
        `http2: TLSConfig.CipherSuites is missing an HTTP/2-required AES_128_GCM_SHA256 cipher ` +
          `(need at least one of ${HTTP2_REQUIRED.join(' or ')}; or set http_server_config.http2: ` +
          `false)`,
      );
    }
    tls = {
      cert: certFile !== '' ? { path: certFile } : { inline: certInline },
      key: keyFile !== '' ? { path: keyFile } : { inline: keyInline },
      clientCa: caFile !== '' ? { path: caFile } : caInline !== '' ? { inline: caInline } : null,
      clientAuth,
      cipherSuites: cipherNames,
      curves,
      minVersion,
      maxVersion,
      preferServerCipherSuites: prefer,
      clientAllowedSans: sans,
    };
  }
  return { file, tls, users, headers, http2, rateLimit: intervalMs > 0 ? { intervalMs, burst } : null };
}
