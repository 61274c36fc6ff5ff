/**
 * A web configuration's TLS as Node's TLS takes it: the secure context
 * (certificate, key, versions, OpenSSL's names of the configured cipher
 * suites and curves, the client CAs), whether the handshake asks for a client
 * certificate and fails without a verified one, and the checks
 * exporter-toolkit's Go TLS makes that OpenSSL's options do not say
 * (RequireAnyClientCert, VerifyClientCertIfGiven, client_allowed_sans),
 * made once the handshake is done.
 */
import type tls from 'node:tls';
import { isIP } from 'node:net';
import { requireBuiltin } from '../../core/builtin.js';
import { CIPHER_SUITES, CURVES, readPem, TLS_VERSIONS, WebConfigError, type TlsServerSettings } from './web-config.js';

const loadTls = (): typeof tls => requireBuiltin('node:tls') as typeof tls;

export interface ServerTls {
  readonly context: tls.SecureContext;
  readonly requestCert: boolean;
  readonly rejectUnauthorized: boolean;
  /** After the handshake: why this client may not go on, or undefined. */
  check(socket: tls.TLSSocket): string | undefined;
}

/** The SANs of a peer certificate as Go's x509 lists them: DNS names, e-mail addresses, IPs (canonical), URIs. */
export function certificateSans(cert: tls.PeerCertificate): string[] {
  const text = cert.subjectaltname;
  if (!text) return [];
  const out: string[] = [];
  // Node writes `DNS:a, IP Address:1.2.3.4, email:x@y, URI:spiffe://...`, a value with a comma or quote as a JSON string
  for (const m of text.matchAll(/(DNS|IP Address|email|URI):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
    let v = m[2]!;
    if (v.startsWith('"')) {
      try {
        v = JSON.parse(v) as string;
      } catch {
        continue;
      }
    }
    if (m[1] === 'IP Address' && isIP(v) === 6) v = new URL(`http://[${v}]/`).hostname.slice(1, -1);
    out.push(v);
  }
  return out;
}

/** The secure context and client checks of a web configuration's tls_server_config; throws a WebConfigError naming the key. */
export function serverTls(file: string, t: TlsServerSettings): ServerTls {
  const cert = readPem(file, 'tls_server_config.cert_file', t.cert);
  const key = readPem(file, 'tls_server_config.key_file', t.key);
  const ca = t.clientCa ? readPem(file, 'tls_server_config.client_ca_file', t.clientCa) : undefined;
  const T = loadTls();
  try {
    T.createSecureContext({ cert, key });
  } catch (e) {
    const msg = (e as Error).message;
    throw new WebConfigError(file, t.cert.path !== undefined ? 'tls_server_config.cert_file' : 'tls_server_config.cert', `failed to load X509KeyPair: ${/key values mismatch/i.test(msg) ? 'private key does not match public key' : msg}`);
  }
  // TLS 1.3's suites are not configurable in Go (they are always offered): only the TLS 1.2 ones are given to OpenSSL
  const tls12 = t.cipherSuites.map((c) => CIPHER_SUITES[c]!).filter((c) => !c.tls13).map((c) => c.openssl);
  const only13 = t.cipherSuites.length > 0 && tls12.length === 0;
  let context: tls.SecureContext;
  try {
    context = T.createSecureContext({
      cert,
      key,
      ...(ca ? { ca } : {}),
      minVersion: TLS_VERSIONS[t.minVersion],
      maxVersion: TLS_VERSIONS[t.maxVersion],
      // Go's CipherSuites holds TLS 1.3 names too: a list of those alone leaves no TLS 1.2 suite
      ...(tls12.length ? { ciphers: [...tls12, 'TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'].join(':') } : only13 ? { minVersion: 'TLSv1.3' as const } : {}),
      ...(t.curves.length ? { ecdhCurve: t.curves.map((c) => CURVES[c]!).join(':') } : {}),
      honorCipherOrder: t.preferServerCipherSuites,
    });
  } catch (e) {
    throw new WebConfigError(file, 'tls_server_config', `OpenSSL refuses these settings: ${(e as Error).message}`);
  }
  const mode = t.clientAuth;
  const sans = t.clientAllowedSans;
  return {
    context,
    requestCert: mode !== 'NoClientCert',
    rejectUnauthorized: mode === 'RequireAndVerifyClientCert',
    check(socket) {
      if (mode === 'NoClientCert' && !sans) return undefined;
      const peer = socket.getPeerCertificate();
      const has = !!peer && Object.keys(peer).length > 0;
      if (mode === 'RequireAnyClientCert' && !has) return 'no client certificate';
      if (mode === 'VerifyClientCertIfGiven' && has && !socket.authorized) return `client certificate not verified: ${String(socket.authorizationError)}`;
      if (sans) {
        if (!has) return 'no client certificate to check client_allowed_sans against';
        const found = certificateSans(peer);
        if (!found.some((s) => sans.includes(s))) return `could not find allowed SANs in client cert (it has ${found.length ? found.join(', ') : 'none'})`;
      }
      return undefined;
    },
  };
}
