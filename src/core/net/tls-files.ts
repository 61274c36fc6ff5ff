/**
 * A client's TLS material from the files its configuration names (a private
 * CA, a client certificate and its key), read and checked when the client is
 * made, so that a wrong file is a configuration error naming its key rather
 * than every request failing; read again when a file changes on disk
 * (cert-manager, Vault and certbot rotate them in place), at most once a
 * second, keeping the last good material if the new files are broken.
 *
 * And what a TLS failure means: a certificate the client cannot verify, a
 * client certificate the server refused, or a server that speaks no TLS
 * are configuration problems, named with the key that fixes them, never an
 * outage to retry as if the endpoint were down.
 */
import { readFileSync, statSync } from 'node:fs';
import type tls from 'node:tls';
import { requireBuiltin } from '../builtin.js';
import { ConfigError } from '../config/schema.js';

/** The files, and the section and keys that name them (for errors: `[otlp] certificate`). */
export interface TlsFiles {
  readonly section: string;
  readonly keys: { readonly ca: string; readonly cert: string; readonly key: string };
  /** PEM bundle of the CAs the server's certificate is checked against (in place of the system's). */
  readonly ca: string | null;
  /** PEM client certificate (chain) presented to the server. */
  readonly cert: string | null;
  /** PEM private key of the client certificate. */
  readonly key: string | null;
}

export interface TlsMaterial {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

const loadTls = (): typeof tls => requireBuiltin('node:tls') as typeof tls;

const MAX_PEM_BYTES = 1 << 20;

/** Whether anything is configured at all. */
export function hasTls(f: TlsFiles | undefined): f is TlsFiles {
  return !!(f && (f.ca || f.cert || f.key));
}

const fail = (f: TlsFiles, which: 'ca' | 'cert' | 'key', why: string): ConfigError =>
  new ConfigError(`[${f.section}] ${f.keys[which]}: ${why}`, { section: f.section, key: f.keys[which] });

function readPem(f: TlsFiles, which: 'ca' | 'cert' | 'key'): Buffer {
  const path = f[which]!;
  let b: Buffer;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > MAX_PEM_BYTES) throw new Error(`${st.size} bytes, over the 1 MiB a PEM file may have`);
    b = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw fail(
      f,
      which,
      `cannot read ${path}: ${code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied' : (e as Error).message}`,
    );
  }
  if (!b.includes('-----BEGIN ')) throw fail(f, which, `${path} holds no PEM block (-----BEGIN ...)`);
  return b;
}

/**
 * Reads and checks the files: each a readable PEM file, the CA bundle one
 * OpenSSL takes, the certificate and key given together and matching.
 * Throws a ConfigError naming the key.
 */
export function readTlsMaterial(f: TlsFiles): TlsMaterial {
  if (!!f.cert !== !!f.key) {
    const given = f.cert ? 'cert' : 'key';
    throw fail(
      f,
      given,
      `set without ${f.keys[given === 'cert' ? 'key' : 'cert']}: a client certificate needs its key, and the key its certificate`,
    );
  }
  const m: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  if (f.ca) m.ca = readPem(f, 'ca');
  if (f.cert) m.cert = readPem(f, 'cert');
  if (f.key) m.key = readPem(f, 'key');
  const t = loadTls();
  if (m.ca) {
    try {
      t.createSecureContext({ ca: m.ca });
    } catch (e) {
      throw fail(f, 'ca', `${f.ca} is not a CA bundle OpenSSL reads: ${(e as Error).message}`);
    }
  }
  if (m.cert && m.key) {
    try {
      t.createSecureContext({ cert: m.cert, key: m.key });
    } catch (e) {
      const msg = (e as Error).message;
      throw fail(
        f,
        'cert',
        `${f.cert} with ${f.keys.key} ${f.key}: ${/key values mismatch/i.test(msg) ? "the key is not the certificate's" : msg}`,
      );
    }
  }
  return m;
}

/** The files' identity (inode, size, mtime): a change of it is a rotation. */
function stamp(f: TlsFiles): string {
  let s = '';
  for (const path of [f.ca, f.cert, f.key]) {
    if (!path) continue;
    try {
      const st = statSync(path);
      s += `${st.ino}:${st.size}:${st.mtimeMs};`;
    } catch {
      s += 'gone;';
    }
  }
  return s;
}

/**
 * The material, read again when a file changes (checked at most once a
 * second). A rotation whose new files are broken keeps the last good
 * material and says why once (`problem`); `version` counts the changes taken,
 * so that a client makes a new connection pool only when it must.
 */
export class TlsSource {
  private material: TlsMaterial;
  private stamp: string;
  private checked = 0;
  version = 0;
  /** Why the files on disk were not taken (the last good ones are in use), until they are. */
  problem: string | undefined;

  constructor(
    readonly files: TlsFiles,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.material = readTlsMaterial(files);
    this.stamp = stamp(files);
    this.checked = this.now();
  }

  get(): TlsMaterial {
    const t = this.now();
    if (t - this.checked < 1000) return this.material;
    this.checked = t;
    const s = stamp(this.files);
    if (s === this.stamp) return this.material;
    try {
      this.material = readTlsMaterial(this.files);
      this.stamp = s;
      this.version++;
      this.problem = undefined;
    } catch (e) {
      // half a rotation (the certificate written, its key not yet) is seen again a second later
      this.problem = `${(e as Error).message} (the files read before are kept)`;
    }
    return this.material;
  }
}

/** What a TLS failure of a client's request means, or undefined if it is none (a reset, a refused connection). */
export interface TlsProblem {
  /** Which setting fixes it. */
  readonly fix: 'ca' | 'cert' | 'endpoint';
  readonly reason: string;
}

/** OpenSSL's and Node's codes for a server certificate the client could not verify. */
const VERIFY_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Alerts a server sends when it refuses the client's certificate (or the lack of one). */
const CLIENT_CERT_ALERT = new RegExp(
  `ALERT_(${[
    'CERTIFICATE_REQUIRED',
    'BAD_CERTIFICATE',
    'UNKNOWN_CA',
    'CERTIFICATE_UNKNOWN',
    'ACCESS_DENIED',
    'CERTIFICATE_EXPIRED',
    'CERTIFICATE_REVOKED',
    'UNSUPPORTED_CERTIFICATE',
    'DECRYPT_ERROR',
  ].join('|')})`,
);

/**
 * The meaning of a request's error, from its code: a server certificate not
 * verified (fix: the CA), a client certificate refused (fix: the client
 * certificate), or no TLS in common (an http:// endpoint written https://, or
 * the other way round: fix the endpoint).
 */
export function tlsProblem(e: NodeJS.ErrnoException & { reason?: string }): TlsProblem | undefined {
  const code = e.code ?? '';
  if (VERIFY_CODES.has(code)) return { fix: 'ca', reason: `the server's certificate was not verified: ${e.message} (${code})` };
  if (CLIENT_CERT_ALERT.test(code)) return { fix: 'cert', reason: `the server refused the client certificate: ${e.message} (${code})` };
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' || code === 'ERR_SSL_HTTP_REQUEST') {
    return { fix: 'endpoint', reason: `the server does not speak TLS on that port (is the endpoint http://?): ${e.message} (${code})` };
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_'))
    return { fix: 'endpoint', reason: `no TLS session could be set up: ${e.message} (${code})` };
  return undefined;
}

/** The setting a TLS problem is fixed at, as a message names it (`[otlp] certificate`). */
export function tlsFixKey(p: TlsProblem, f: TlsFiles | undefined, section: string, endpointKey: string): string {
  if (p.fix === 'endpoint') return `[${section}] ${endpointKey}`;
  const key = p.fix === 'ca' ? (f?.keys.ca ?? 'certificate') : (f?.keys.cert ?? 'client_certificate');
  return `[${section}] ${key}`;
}
