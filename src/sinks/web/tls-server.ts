/**
 * A web configuration's TLS as Node's TLS takes it: the secure context
 * (certificate, key, versions, OpenSSL's names of the configured cipher
 * suites and curves, the client CAs), whether the handshake asks for a client
 * certificate and fails without one, and the checks exporter-toolkit's Go
 * TLS makes that OpenSSL's options do not say (the chain verified for
 * VerifyClientCertIfGiven and RequireAndVerifyClientCert,
 * client_allowed_sans), made once the handshake is done.
 *
 * Node's TLS accepts every client certificate in OpenSSL's verify callback
 * and keeps OpenSSL's verdict for the application to read: a TLSSocket made
 * by hand (the listener's) neither closes on a bad verdict nor sets
 * `authorized`, so `check` reads the verdict itself. Go sends an alert
 * (unknown_ca, bad_certificate) for a certificate it refuses; here the
 * connection is closed after the handshake, without one, which no option of
 * Node's TLS can change (docs/security.md, the known differences).
 */
import type crypto from 'node:crypto';
import type tls from 'node:tls';
import { isIP } from 'node:net';
import { requireBuiltin } from '../../core/builtin.js';
import { CIPHER_SUITES, CURVES, readPem, TLS_VERSIONS, WebConfigError, type TlsServerSettings } from './web-config.js';

const loadTls = (): typeof tls => requireBuiltin('node:tls') as typeof tls;

export interface ServerTls {
  readonly context: tls.SecureContext;
  /** The handshake asks for a client certificate. */
  readonly requestCert: boolean;
  /**
   * The handshake fails without a client certificate (a hand-made server
   * TLSSocket's rejectUnauthorized sets OpenSSL's FAIL_IF_NO_PEER_CERT and
   * nothing else): RequireAnyClientCert and RequireAndVerifyClientCert, so
   * that a client without one gets the alert Go sends (certificate_required).
   */
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

/**
 * OpenSSL's verdict on the client's chain (against the client CAs, or the
 * default roots without them, for a TLS client's purpose): undefined when it
 * verified. It is what Node's own tls.Server reads into `authorized` and
 * `authorizationError`, from the socket's handle; where a Node.js gives no
 * such verdict the certificate counts as not verified.
 */
export function peerVerifyError(socket: tls.TLSSocket): string | undefined {
  const handle = (socket as unknown as { _handle?: { verifyError?: () => (Error & { code?: string }) | null | undefined } })._handle;
  if (typeof handle?.verifyError !== 'function') return 'no verdict on the certificate from this Node.js';
  const e = handle.verifyError();
  return e ? (e.code ?? e.message) : undefined;
}

/** Why a certificate and key are no pair, in Go's words (tls.X509KeyPair): OpenSSL takes a key of another type beside the certificate. */
function keyPairProblem(cert: Buffer, key: Buffer): string | undefined {
  const C = requireBuiltin('node:crypto') as typeof crypto;
  let x509: crypto.X509Certificate;
  let priv: crypto.KeyObject;
  try {
    x509 = new C.X509Certificate(cert);
    priv = C.createPrivateKey(key);
  } catch (e) {
    return (e as Error).message;
  }
  if (x509.publicKey.asymmetricKeyType !== priv.asymmetricKeyType) return 'tls: private key type does not match public key type';
  if (!x509.checkPrivateKey(priv)) return 'tls: private key does not match public key';
  return undefined;
}

/** The secure context and client checks of a web configuration's tls_server_config; throws a WebConfigError naming the key. */
export function serverTls(file: string, t: TlsServerSettings): ServerTls {
  const cert = readPem(file, 'tls_server_config.cert_file', t.cert);
  const key = readPem(file, 'tls_server_config.key_file', t.key);
  const ca = t.clientCa ? readPem(file, 'tls_server_config.client_ca_file', t.clientCa) : undefined;
  const T = loadTls();
  const certKey = t.cert.path !== undefined ? 'tls_server_config.cert_file' : 'tls_server_config.cert';
  try {
    T.createSecureContext({ cert, key });
  } catch (e) {
    const msg = (e as Error).message;
    throw new WebConfigError(
      file,
      certKey,
      `failed to load X509KeyPair: ${/key values mismatch/i.test(msg) ? 'tls: private key does not match public key' : msg}`,
    );
  }
  const pair = keyPairProblem(cert, key);
  if (pair) throw new WebConfigError(file, certKey, `failed to load X509KeyPair: ${pair}`);
  // TLS 1.3's suites are not configurable in Go (they are always offered): only the TLS 1.2 ones are given to OpenSSL
  const tls12 = t.cipherSuites
    .map((c) => CIPHER_SUITES[c]!)
    .filter((c) => !c.tls13)
    .map((c) => c.openssl);
  const only13 = t.cipherSuites.length > 0 && tls12.length === 0;
  let context: tls.SecureContext;
  try {
    context = T.createSecureContext({
      cert,
      key,
      ...(ca ? { ca } : {}),
      minVersion: TLS_VERSIONS[t.minVersion],
      maxVersion: TLS_VERSIONS[t.maxVersion],
      // Go's CipherSuites holds TLS 1.3 names too: a list of those alone leaves no TLS 1.2 suite, and Go answers a TLS 1.2
      // client handshake_failure. Given no TLS 1.2 suite Node would raise the minimum version to TLS 1.3 instead (a
      // protocol_version alert), so OpenSSL gets one it never chooses: a PSK suite, which needs the PSK callback this
      // server has not
      ...(tls12.length || only13
        ? {
            ciphers: [
              ...(only13 ? ['PSK-AES128-GCM-SHA256'] : tls12),
              'TLS_AES_128_GCM_SHA256',
              'TLS_AES_256_GCM_SHA384',
              'TLS_CHACHA20_POLY1305_SHA256',
            ].join(':'),
          }
        : {}),
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
    rejectUnauthorized: mode === 'RequireAnyClientCert' || mode === 'RequireAndVerifyClientCert',
    check(socket) {
      // Go asks no certificate then, and checks client_allowed_sans only on what a client sends when asked
      if (mode === 'NoClientCert') return undefined;
      const peer = socket.getPeerCertificate();
      const has = !!peer && Object.keys(peer).length > 0;
      if (!has && (mode === 'RequireAnyClientCert' || mode === 'RequireAndVerifyClientCert')) return 'no client certificate';
      if (has && (mode === 'VerifyClientCertIfGiven' || mode === 'RequireAndVerifyClientCert')) {
        const why = peerVerifyError(socket);
        if (why) return `client certificate not verified: ${why}`;
      }
      if (sans) {
        if (!has) return 'no client certificate to check client_allowed_sans against';
        const found = certificateSans(peer);
        if (!found.some((s) => sans.includes(s)))
          return `could not find allowed SANs in client cert (it has ${found.length ? found.join(', ') : 'none'})`;
      }
      return undefined;
    },
  };
}
