/**
 * docs/security.md's conformance table: the same web configuration files
 * given to node_exporter 1.11.1 (exporter-toolkit, Go's TLS) and to l9gpu's
 * daemon, each started on its own port. For each case both must accept the
 * file at start or both refuse it; for a file both accept, the same requests
 * (plain HTTP, HTTPS with and without client certificates, TLS 1.2 or 1.3
 * alone, basic-auth credentials) must get the same class of answer: the
 * status and the headers a web_config sets, or what ended the connection. A
 * difference that Node's TLS cannot remove is written down with its reason
 * (a case's `known`) and asserted exactly. The table measured must be the one in
 * docs/security.md (L9GPU_UPDATE_DOCS=1 writes it). Last, Prometheus 3.5
 * scrapes l9gpu over TLS with a client certificate and basic auth.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { makePki, type Pki } from '../helpers/certs.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { freePort } from '../helpers/net.js';
import { ROOT, tempDir } from '../helpers/paths.js';
import { stopProcess } from '../helpers/process.js';
import { Prometheus } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/wait.js';

const NODE_EXPORTER =
  process.env.L9GPU_TEST_NODE_EXPORTER_BIN ?? join(ROOT, '.cache', 'sid-peers', 'usr', 'bin', 'prometheus-node-exporter');
const DOC = join(ROOT, 'docs', 'security.md');
const START = '<!-- conformance:start -->';
const END = '<!-- conformance:end -->';
/** Cases measured at once (each starts two servers). */
const AT_ONCE = 4;

/** What a case's file is made from. */
interface Fixture {
  readonly pki: Pki;
  /** The folder of all cases (the PKI is in pki/ under it). */
  readonly root: string;
  /** bcrypt hashes of "secret" by htpasswd: alice's $2y$ (cost 10), bob's the same form with the $2a$ prefix (cost 5). */
  readonly alice: string;
  readonly bob: string;
  /** A file's text, indented for a YAML block scalar. */
  readonly inline: (path: string) => string;
}

/** A request's answer on one server differing in a way no code of l9gpu can remove: both answers, and why. */
interface Known {
  readonly nodeExporter: string;
  readonly l9gpu: string;
  readonly why: string;
}

/** Why a client certificate refused gets an alert from Go and a closed connection from l9gpu. */
const VERDICT_AFTER_HANDSHAKE =
  'Go checks the client certificate (its chain against the client CAs, then ' +
  'client_allowed_sans) inside the handshake and refuses it with an alert (unknown_ca, ' +
  'bad_certificate). ' +
  "Node's TLS gives OpenSSL a verify callback that accepts every certificate, keeping " +
  "OpenSSL's verdict for the application to read once the handshake is done, and has no hook " +
  'inside the handshake; ' +
  'so l9gpu reads the verdict and the SANs when the handshake is done and closes the ' +
  'connection, with no alert: one sent then would have to be encrypted by OpenSSL, and Node ' +
  'has no call for it. ' +
  'Either way the client gets no answer to its request.';
const refusedLate = (alert: string): Known => ({ nodeExporter: `tls alert ${alert}`, l9gpu: 'closed', why: VERDICT_AFTER_HANDSHAKE });
const UNKNOWN_CA = refusedLate('unknown ca (48)');
const BAD_CERT = refusedLate('bad certificate (42)');

interface Case {
  readonly id: string;
  /** What the file has, in the table's words. */
  readonly has: string;
  /** The file's text; absent: `path` says what the servers are pointed at instead of a file. */
  readonly yaml?: (f: Fixture) => string;
  readonly path?: (caseDir: string) => string;
  /** Where the file is written, under the case's folder ('' by default). */
  readonly subdir?: string;
  /** Where both refuse it: the YAML key l9gpu's error names ('' for the file itself). */
  readonly key?: string;
  /**
   * Where both accept it: the requests, in order, each `http` or `https` then
   * options: cert=client (the CA's client certificate: DNS:scraper.example,
   * URI:spiffe://example/prometheus), cert=client2 (the second CA's:
   * DNS:other.example), tls=1.2 or tls=1.3 (the client offers that version
   * alone), user=NAME:PASSWORD (basic auth).
   */
  readonly requests?: readonly string[];
  readonly known?: Readonly<Record<string, Known>>;
}

const tls = (f: Fixture, extra = ''): string =>
  `tls_server_config:\n  cert_file: ${f.pki.server}\n  key_file: ${f.pki.serverKey}\n${extra}`;
const users = (f: Fixture): string => `basic_auth_users:\n  alice: ${f.alice}\n  bob: ${f.bob}\n`;
const AUTH_REQUESTS = ['user=', 'user=alice:wrong', 'user=alice:secret', 'user=bob:secret', 'user=carol:secret'];

const CASES: readonly Case[] = [
  // the file itself
  { id: 'empty-file', has: 'nothing (an empty file)', yaml: () => '', requests: ['http', 'https'] },
  { id: 'junk-text', has: 'text that is not YAML', yaml: () => 'tls_server_config: [this is: not\n', key: '' },
  { id: 'scalar-document', has: 'a YAML string, not a mapping', yaml: () => 'just some words\n', key: '' },
  { id: 'web-config-missing', has: 'no file at the path', path: (d) => join(d, 'absent.yml'), key: '' },
  { id: 'web-config-directory', has: 'a directory at the path (unreadable as a file)', path: (d) => d, key: '' },
  // certificate and key
  {
    id: 'cert-key-files',
    has: 'cert_file, key_file (absolute)',
    yaml: (f) => tls(f),
    requests: ['http', 'https', 'https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'cert-key-inline',
    has: 'cert, key inline',
    yaml: (f) => `tls_server_config:\n  cert: |\n${f.inline(f.pki.server)}  key: |\n${f.inline(f.pki.serverKey)}`,
    requests: ['http', 'https'],
  },
  {
    id: 'relative-paths',
    has: "cert_file, key_file relative to the file's folder (../../pki/...)",
    subdir: 'conf',
    yaml: () => 'tls_server_config:\n  cert_file: ../../pki/server.pem\n  key_file: ../../pki/server-key.pem\n',
    requests: ['https'],
  },
  {
    id: 'rsa-cert',
    has: 'an RSA certificate and key',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.pki.rsaServer}\n  key_file: ${f.pki.rsaServerKey}\n`,
    requests: ['https', 'https tls=1.2'],
  },
  {
    id: 'expired-cert',
    has: 'an expired certificate',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.pki.expired}\n  key_file: ${f.pki.expiredKey}\n`,
    requests: ['https'],
  },
  {
    id: 'cert-without-key',
    has: 'cert_file, no key',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.pki.server}\n`,
    key: 'tls_server_config',
  },
  {
    id: 'key-without-cert',
    has: 'key_file, no cert',
    yaml: (f) => `tls_server_config:\n  key_file: ${f.pki.serverKey}\n`,
    key: 'tls_server_config',
  },
  {
    id: 'mismatched-key',
    has: 'the EC certificate with the RSA key',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.pki.server}\n  key_file: ${f.pki.rsaServerKey}\n`,
    key: 'tls_server_config.cert_file',
  },
  {
    id: 'mismatched-key-same-type',
    has: 'the EC certificate with another EC key',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.pki.server}\n  key_file: ${f.pki.clientKey}\n`,
    key: 'tls_server_config.cert_file',
  },
  {
    id: 'cert-file-missing',
    has: 'cert_file naming no file',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.root}/nowhere.pem\n  key_file: ${f.pki.serverKey}\n`,
    key: 'tls_server_config.cert_file',
  },
  {
    id: 'key-file-directory',
    has: 'key_file naming a directory',
    yaml: (f) => `tls_server_config:\n  cert_file: ${f.pki.server}\n  key_file: ${f.root}\n`,
    key: 'tls_server_config.key_file',
  },
  // client certificates
  {
    id: 'NoClientCert',
    has: 'client_auth_type: NoClientCert',
    yaml: (f) => tls(f, '  client_auth_type: NoClientCert\n'),
    requests: ['https', 'https cert=client'],
  },
  {
    id: 'RequestClientCert',
    has: 'client_auth_type: RequestClientCert, client_ca_file',
    yaml: (f) => tls(f, `  client_auth_type: RequestClientCert\n  client_ca_file: ${f.pki.ca}\n`),
    requests: ['https', 'https cert=client', 'https cert=client2'],
  },
  {
    id: 'RequireAnyClientCert',
    has: 'client_auth_type: RequireAnyClientCert',
    yaml: (f) => tls(f, '  client_auth_type: RequireAnyClientCert\n'),
    requests: ['http', 'https', 'https cert=client', 'https cert=client2'],
  },
  {
    id: 'RequireClientCert',
    has: 'client_auth_type: RequireClientCert (the old name exporter-toolkit keeps)',
    yaml: (f) => tls(f, '  client_auth_type: RequireClientCert\n'),
    requests: ['https', 'https cert=client2'],
  },
  {
    id: 'VerifyClientCertIfGiven',
    has: 'client_auth_type: VerifyClientCertIfGiven, client_ca_file',
    yaml: (f) => tls(f, `  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ${f.pki.ca}\n`),
    requests: ['https', 'https cert=client', 'https cert=client2'],
    known: { 'https cert=client2': UNKNOWN_CA },
  },
  {
    id: 'RequireAndVerifyClientCert',
    has: 'client_auth_type: RequireAndVerifyClientCert, client_ca_file',
    yaml: (f) => tls(f, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${f.pki.ca}\n`),
    requests: [
      'http',
      'https',
      'https tls=1.2',
      'https cert=client',
      'https cert=client tls=1.2',
      'https cert=client2',
      'https cert=client2 tls=1.2',
    ],
    known: { 'https cert=client2': UNKNOWN_CA, 'https cert=client2 tls=1.2': UNKNOWN_CA },
  },
  {
    id: 'verify-no-client-ca',
    has: 'client_auth_type: RequireAndVerifyClientCert, no client CA',
    yaml: (f) => tls(f, '  client_auth_type: RequireAndVerifyClientCert\n'),
    requests: ['https', 'https cert=client'],
    known: { 'https cert=client': UNKNOWN_CA },
  },
  {
    id: 'client-ca-inline',
    has: 'client_ca inline, RequireAndVerifyClientCert',
    yaml: (f) => tls(f, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca: |\n${f.inline(f.pki.ca)}`),
    requests: ['https cert=client', 'https cert=client2'],
    known: { 'https cert=client2': UNKNOWN_CA },
  },
  {
    id: 'client-ca-not-pem',
    has: 'client_ca_file holding no certificate (a key), RequireAndVerifyClientCert',
    yaml: (f) => tls(f, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${f.pki.clientKey}\n`),
    requests: ['https cert=client'],
    known: { 'https cert=client': UNKNOWN_CA },
  },
  {
    id: 'client-auth-invented',
    has: 'client_auth_type: RequireSomeCert (no such policy)',
    yaml: (f) => tls(f, '  client_auth_type: RequireSomeCert\n'),
    key: 'tls_server_config.client_auth_type',
  },
  {
    id: 'client-ca-without-policy',
    has: 'client_ca_file, no client_auth_type',
    yaml: (f) => tls(f, `  client_ca_file: ${f.pki.ca}\n`),
    key: 'tls_server_config.client_ca_file',
  },
  {
    id: 'client-ca-file-missing',
    has: 'client_ca_file naming no file, RequireAndVerifyClientCert',
    yaml: (f) => tls(f, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${f.root}/no-ca.pem\n`),
    key: 'tls_server_config.client_ca_file',
  },
  {
    id: 'client-auth-without-cert',
    has: 'client_auth_type alone (no certificate)',
    yaml: () => 'tls_server_config:\n  client_auth_type: RequireAnyClientCert\n',
    key: 'tls_server_config',
  },
  // client_allowed_sans
  {
    id: 'sans-allowed',
    has: 'client_allowed_sans [spiffe://example/prometheus], RequireAndVerifyClientCert',
    yaml: (f) =>
      tls(
        f,
        `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${f.pki.ca}\n  ` +
          `client_allowed_sans: [spiffe://example/prometheus]\n`,
      ),
    requests: ['https', 'https cert=client', 'https cert=client2'],
    known: { 'https cert=client2': UNKNOWN_CA },
  },
  {
    id: 'sans-not-allowed',
    has: 'client_allowed_sans [nobody.example], RequireAndVerifyClientCert',
    yaml: (f) =>
      tls(f, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${f.pki.ca}\n  client_allowed_sans: [nobody.example]\n`),
    requests: ['https cert=client', 'https cert=client tls=1.2'],
    known: { 'https cert=client': BAD_CERT, 'https cert=client tls=1.2': BAD_CERT },
  },
  {
    id: 'sans-any-cert',
    has: 'client_allowed_sans [scraper.example], RequireAnyClientCert',
    yaml: (f) => tls(f, '  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [scraper.example]\n'),
    requests: ['https', 'https cert=client', 'https cert=client2'],
    known: { 'https cert=client2': BAD_CERT },
  },
  {
    id: 'sans-request-cert',
    has: 'client_allowed_sans [scraper.example], RequestClientCert',
    yaml: (f) => tls(f, '  client_auth_type: RequestClientCert\n  client_allowed_sans: [scraper.example]\n'),
    requests: ['https', 'https cert=client', 'https cert=client2'],
    known: { 'https cert=client2': BAD_CERT },
  },
  {
    id: 'sans-no-client-auth',
    has: 'client_allowed_sans [scraper.example], no client_auth_type',
    yaml: (f) => tls(f, '  client_allowed_sans: [scraper.example]\n'),
    requests: ['https', 'https cert=client2'],
  },
  // versions
  {
    id: 'min-TLS13',
    has: 'min_version: TLS13',
    yaml: (f) => tls(f, '  min_version: TLS13\n'),
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'max-TLS12',
    has: 'max_version: TLS12',
    yaml: (f) => tls(f, '  max_version: TLS12\n'),
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  { id: 'min-TLS10', has: 'min_version: TLS10', yaml: (f) => tls(f, '  min_version: TLS10\n'), requests: ['https'] },
  {
    id: 'min-above-max',
    has: 'min_version: TLS13, max_version: TLS12',
    yaml: (f) => tls(f, '  min_version: TLS13\n  max_version: TLS12\n'),
    requests: ['https'],
  },
  {
    id: 'version-invented',
    has: 'min_version: TLS14',
    yaml: (f) => tls(f, '  min_version: TLS14\n'),
    key: 'tls_server_config.min_version',
  },
  // cipher suites
  {
    id: 'ciphers-valid',
    has: 'cipher_suites: two ECDHE-ECDSA suites (AES-128-GCM among them)',
    yaml: (f) => tls(f, '  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256]\n'),
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'ciphers-rsa-for-ec-cert',
    has: 'cipher_suites: ECDHE-RSA only, an EC certificate',
    yaml: (f) => tls(f, '  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n'),
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'cipher-rsa-kex',
    has: "cipher_suites: TLS_RSA_WITH_AES_128_GCM_SHA256 (RSA key exchange, gone from Go 1.26's list)",
    yaml: (f) => tls(f, '  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_GCM_SHA256]\n'),
    key: 'tls_server_config.cipher_suites[1]',
  },
  {
    id: 'cipher-invented',
    has: 'cipher_suites: TLS_ECDHE_ECDSA_WITH_AES_512_GCM (no such suite)',
    yaml: (f) => tls(f, '  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_512_GCM]\n'),
    key: 'tls_server_config.cipher_suites[0]',
  },
  {
    id: 'ciphers-no-aes128-http2',
    has: 'cipher_suites: AES-256-GCM alone, http2 on (the default)',
    yaml: (f) => tls(f, '  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n'),
    key: 'tls_server_config.cipher_suites',
  },
  {
    id: 'ciphers-no-aes128-no-http2',
    has: 'cipher_suites: AES-256-GCM alone, http2: false',
    yaml: (f) => `${tls(f, '  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n')}http_server_config:\n  http2: false\n`,
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'ciphers-tls13-only',
    has: 'cipher_suites: TLS_AES_128_GCM_SHA256 alone (a TLS 1.3 suite), http2: false',
    yaml: (f) => `${tls(f, '  cipher_suites: [TLS_AES_128_GCM_SHA256]\n')}http_server_config:\n  http2: false\n`,
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'ciphers-min-TLS13-http2',
    has: 'cipher_suites: AES-256-GCM alone, min_version: TLS13, http2 on',
    yaml: (f) => tls(f, '  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n'),
    requests: ['https tls=1.3'],
  },
  {
    id: 'ciphers-without-cert',
    has: 'cipher_suites and no certificate (TLS off)',
    yaml: () => 'tls_server_config:\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n',
    requests: ['http'],
  },
  // curves
  {
    id: 'curves-valid',
    has: 'curve_preferences: [CurveP256, X25519]',
    yaml: (f) => tls(f, '  curve_preferences: [CurveP256, X25519]\n'),
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'curves-x25519-only',
    has: 'curve_preferences: [X25519], an EC P-256 certificate',
    yaml: (f) => tls(f, '  curve_preferences: [X25519]\n'),
    requests: ['https tls=1.2', 'https tls=1.3'],
  },
  {
    id: 'curves-invented',
    has: 'curve_preferences: [CurveP128]',
    yaml: (f) => tls(f, '  curve_preferences: [CurveP128]\n'),
    key: 'tls_server_config.curve_preferences[0]',
  },
  {
    id: 'prefer-server-false',
    has: 'prefer_server_cipher_suites: false',
    yaml: (f) => tls(f, '  prefer_server_cipher_suites: false\n'),
    requests: ['https'],
  },
  // http_server_config
  { id: 'http2-true', has: 'http2: true', yaml: (f) => `${tls(f)}http_server_config:\n  http2: true\n`, requests: ['https'] },
  { id: 'http2-false', has: 'http2: false', yaml: (f) => `${tls(f)}http_server_config:\n  http2: false\n`, requests: ['https'] },
  {
    id: 'http2-yes',
    has: 'http2: yes (a YAML 1.1 boolean)',
    yaml: (f) => `${tls(f)}http_server_config:\n  http2: yes\n`,
    requests: ['https'],
  },
  {
    id: 'http2-quoted',
    has: 'http2: "true" (a string)',
    yaml: (f) => `${tls(f)}http_server_config:\n  http2: "true"\n`,
    key: 'http_server_config.http2',
  },
  {
    id: 'headers-allowed',
    has: 'headers: each of the five allowed',
    requests: ['http', 'http user=alice:wrong'],
    yaml: (f) =>
      `http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n    ` +
      `X-Content-Type-Options: nosniff\n    X-Frame-Options: sameorigin\n    X-XSS-Protection: ` +
      `"1; mode=block"\n    Content-Security-Policy: default-src 'none'\n${users(f)}`,
  },
  {
    id: 'header-disallowed',
    has: 'headers: X-Powered-By (not allowed)',
    yaml: () => 'http_server_config:\n  headers:\n    X-Powered-By: l9gpu\n',
    key: 'http_server_config.headers.X-Powered-By',
  },
  {
    id: 'header-frame-options-value',
    has: 'headers: X-Frame-Options: allow-from (a bad value)',
    yaml: () => 'http_server_config:\n  headers:\n    X-Frame-Options: allow-from\n',
    key: 'http_server_config.headers.X-Frame-Options',
  },
  {
    id: 'header-lower-case',
    has: 'headers: x-frame-options (the name in lower case)',
    yaml: () => 'http_server_config:\n  headers:\n    x-frame-options: deny\n',
    key: 'http_server_config.headers.x-frame-options',
  },
  // basic_auth_users
  {
    id: 'users-plain',
    has: 'basic_auth_users ($2y$ and $2a$ htpasswd hashes), no TLS',
    yaml: (f) => users(f),
    requests: AUTH_REQUESTS.map((r) => `http ${r}`),
  },
  {
    id: 'users-tls',
    has: 'basic_auth_users, TLS',
    yaml: (f) => `${tls(f)}${users(f)}`,
    requests: ['http', ...AUTH_REQUESTS.map((r) => `https ${r}`)],
  },
  {
    id: 'users-client-cert',
    has: 'basic_auth_users, RequireAndVerifyClientCert',
    yaml: (f) => `${tls(f, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${f.pki.ca}\n`)}${users(f)}`,
    requests: [
      'https user=alice:secret',
      'https cert=client user=',
      'https cert=client user=alice:wrong',
      'https cert=client user=alice:secret',
      'https cert=client2 user=alice:secret',
    ],
    known: { 'https cert=client2 user=alice:secret': UNKNOWN_CA },
  },
  {
    id: 'user-short-hash',
    has: 'basic_auth_users: a hash cut short',
    yaml: (f) => `basic_auth_users:\n  alice: ${f.alice.slice(0, 40)}\n`,
    key: 'basic_auth_users.alice',
  },
  {
    id: 'user-not-bcrypt',
    has: 'basic_auth_users: a SHA-256 hex digest (no bcrypt)',
    yaml: () => `basic_auth_users:\n  alice: ${'2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b'}\n`,
    key: 'basic_auth_users.alice',
  },
  {
    id: 'user-3a',
    has: 'basic_auth_users: a $3a$ hash (a newer bcrypt version)',
    yaml: (f) => `basic_auth_users:\n  alice: ${f.alice.replace(/^\$2y\$/, '$3a$')}\n`,
    key: 'basic_auth_users.alice',
  },
  {
    id: 'user-cost-3',
    has: 'basic_auth_users: a cost of 03',
    yaml: (f) => `basic_auth_users:\n  alice: ${f.alice.replace(/^\$2y\$10\$/, '$2y$03$')}\n`,
    key: 'basic_auth_users.alice',
  },
  {
    id: 'user-2x',
    has: "basic_auth_users: alice's hash written $2x$ (a minor letter bcryptjs does not know)",
    yaml: (f) => `basic_auth_users:\n  alice: ${f.alice.replace(/^\$2y\$/, '$2x$')}\n`,
    requests: ['http user=alice:secret', 'http user=alice:wrong'],
  },
  {
    id: 'yaml-1.1-text',
    has: 'users named 0100 and yes, X-XSS-Protection: 0x10 (YAML 1.1 reads an octal number, a boolean, a hex number: Go keeps the text)',
    yaml: (f) => `basic_auth_users:\n  0100: ${f.alice}\n  yes: ${f.bob}\nhttp_server_config:\n  headers:\n    X-XSS-Protection: 0x10\n`,
    requests: ['http user=0100:secret', 'http user=64:secret', 'http user=yes:secret', 'http user=true:secret'],
  },
  {
    id: 'user-hash-garbled',
    has: 'basic_auth_users: a hash of the right form whose digest is wrong',
    yaml: (f) => `basic_auth_users:\n  alice: ${f.alice.slice(0, 29)}${'A'.repeat(31)}\n`,
    requests: ['http user=alice:secret'],
  },
  {
    id: 'user-duplicated',
    has: 'basic_auth_users: alice twice',
    yaml: (f) => `basic_auth_users:\n  alice: ${f.alice}\n  alice: ${f.bob}\n`,
    key: 'basic_auth_users.alice',
  },
  // rate_limit
  {
    id: 'rate-limit',
    has: 'rate_limit: interval 1m, burst 2',
    yaml: () => 'rate_limit:\n  interval: 1m\n  burst: 2\n',
    requests: ['http', 'http', 'http'],
  },
  {
    id: 'rate-limit-burst-0',
    has: 'rate_limit: interval 1s, burst 0',
    yaml: () => 'rate_limit:\n  interval: 1s\n  burst: 0\n',
    requests: ['http'],
  },
  {
    id: 'rate-limit-nanoseconds',
    has: 'rate_limit: interval 60000000000 (an integer: nanoseconds), burst 1',
    yaml: () => 'rate_limit:\n  interval: 60000000000\n  burst: 1\n',
    requests: ['http', 'http'],
  },
  {
    id: 'rate-limit-bad-duration',
    has: 'rate_limit: interval "1 minute"',
    yaml: () => 'rate_limit:\n  interval: 1 minute\n  burst: 2\n',
    key: 'rate_limit.interval',
  },
  // types, unknown and duplicated keys
  {
    id: 'list-for-string',
    has: 'cert_file: a list',
    yaml: (f) => `tls_server_config:\n  cert_file: [${f.pki.server}]\n  key_file: ${f.pki.serverKey}\n`,
    key: 'tls_server_config.cert_file',
  },
  {
    id: 'mapping-for-list',
    has: 'cipher_suites: a mapping',
    yaml: (f) => tls(f, '  cipher_suites:\n    TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: true\n'),
    key: 'tls_server_config.cipher_suites',
  },
  {
    id: 'string-for-list',
    has: 'client_allowed_sans: a string',
    yaml: (f) => tls(f, '  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: scraper.example\n'),
    key: 'tls_server_config.client_allowed_sans',
  },
  {
    id: 'unknown-top-key',
    has: 'an unknown top-level key (tls_config)',
    yaml: (f) => `tls_config:\n  cert_file: ${f.pki.server}\n`,
    key: 'tls_config',
  },
  {
    id: 'unknown-tls-key',
    has: 'an unknown key in tls_server_config (ca_file)',
    yaml: (f) => tls(f, `  ca_file: ${f.pki.ca}\n`),
    key: 'tls_server_config.ca_file',
  },
  {
    id: 'unknown-http-key',
    has: 'an unknown key in http_server_config (http3)',
    yaml: () => 'http_server_config:\n  http3: true\n',
    key: 'http_server_config.http3',
  },
  {
    id: 'unknown-rate-key',
    has: 'an unknown key in rate_limit (every)',
    yaml: () => 'rate_limit:\n  every: 1s\n',
    key: 'rate_limit.every',
  },
  { id: 'duplicated-key', has: 'tls_server_config twice', yaml: (f) => `${tls(f)}${tls(f)}`, key: 'tls_server_config' },
];

/** One server's start: accepted (and whether it serves TLS) or refused, with what it said. */
interface Started {
  readonly accepted: boolean;
  readonly tls: boolean;
  /** The refusal, its paths written from $DIR. */
  readonly message: string;
  stop(): Promise<void>;
}

interface Measured {
  readonly c: Case;
  readonly ne: Started;
  readonly l9: Started;
  /** Each request: node_exporter's class, l9gpu's. */
  readonly answers: { readonly request: string; readonly ne: string; readonly l9: string }[];
}

let fx: Fixture;
let measured: Measured[] = [];

/** Paths of the run written as $DIR, so that the table is the same on every run. */
const scrub = (s: string): string => s.split(fx.root).join('$DIR');

function writeCase(c: Case): string {
  const dir = join(fx.root, c.id);
  mkdirSync(join(dir, c.subdir ?? ''), { recursive: true });
  if (c.path) return c.path(dir);
  const file = join(dir, c.subdir ?? '', 'web.yml');
  writeFileSync(file, c.yaml!(fx));
  return file;
}

/** Go's slog text: the msg of the ERROR line. */
function goError(stderr: string): string {
  const line = stderr.split('\n').find((l) => / level=ERROR /.test(l)) ?? stderr.trim().split('\n').pop() ?? '';
  const m = / msg=("(?:[^"\\]|\\.)*"|\S+)/.exec(line);
  let msg = m ? m[1]! : line;
  if (msg.startsWith('"')) {
    try {
      msg = JSON.parse(msg) as string;
    } catch {
      msg = msg.slice(1, -1);
    }
  }
  return scrub(msg).replace(/\s+/g, ' ').trim();
}

/** Whether a server on the port answers bytes to a request its handler never sees (a request that is not HTTP, or HTTP on a TLS port). */
function answersBytes(port: number, tlsOn: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = false;
    s.on('connect', () => s.write(tlsOn ? 'GET / HTTP/1.0\r\n\r\n' : 'BAD\r\n\r\n'));
    s.on('data', () => {
      got = true;
      s.destroy();
    });
    s.on('error', () => {});
    // a server that neither answers nor closes is asked again by the caller's waitFor (a socket left open would hang it)
    s.setTimeout(2000, () => s.destroy());
    s.on('close', () => resolve(got));
  });
}

async function startNodeExporter(file: string): Promise<Started & { port: number }> {
  const port = await freePort();
  const proc: ChildProcess = spawn(
    NODE_EXPORTER,
    [`--web.config.file=${file}`, `--web.listen-address=127.0.0.1:${port}`, '--collector.disable-defaults', '--log.level=info'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  let exit: number | null | undefined;
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  proc.on('exit', (code) => (exit = code));
  // "TLS is enabled/disabled." comes before Serve: the HTTP/2 checks of ServeTLS can still refuse the file after it
  const state = await waitFor(`node_exporter on ${file} to serve or exit`, async () => {
    if (exit !== undefined) return 'exited';
    const mode = /msg="TLS is (enabled|disabled)\."/.exec(stderr)?.[1];
    if (mode && (await answersBytes(port, mode === 'enabled'))) return mode;
    return undefined;
  });
  if (state === 'exited')
    await waitFor('node_exporter stderr closed', () => proc.stderr!.readableEnded || undefined, 5000).catch(() => undefined);
  return {
    port,
    accepted: state !== 'exited',
    tls: state === 'enabled',
    message: state === 'exited' ? `exit ${exit}: ${goError(stderr)}` : '',
    stop: () => stopProcess(proc),
  };
}

async function startL9gpu(file: string, dir: string): Promise<Started & { port: number; stderr: () => string }> {
  const port = await freePort();
  const ini = join(dir, 'l9gpu.ini');
  writeFileSync(
    ini,
    `[daemon]\nplugins = sim\nsinks = prometheus\nstate_dir = ${join(dir, 'state')}\n[prometheus]\nhost ` +
      `= 127.0.0.1\nport = ${port}\nweb_config = ${file}\n`,
  );
  const d = new DaemonProcess(['--config', ini]);
  const state = await waitFor(
    `l9gpu on ${file} to listen or exit`,
    () => (d.child.exitCode !== null ? 'exited' : /prometheus endpoint listening url=(https?):/.exec(d.stderr)?.[1]),
    20_000,
  );
  if (state === 'exited') await d.exit;
  const line = d.stderr.split('\n').find((l) => l.includes('[prometheus] web_config')) ?? d.stderr.trim();
  return {
    port,
    accepted: state !== 'exited',
    tls: state === 'https',
    message: state === 'exited' ? `exit ${d.child.exitCode}: ${scrub(line)}` : '',
    stop: async () => void (await d.stop()),
    stderr: () => d.stderr,
  };
}

/** The response headers a web_config can set, and the one basic auth sets: part of an answer's class. */
const CLASS_HEADERS = [
  'www-authenticate',
  'strict-transport-security',
  'x-content-type-options',
  'x-frame-options',
  'x-xss-protection',
  'content-security-policy',
];

/**
 * One request, as its options say, and the class of what came back:
 * `http <status> [headers] [the body's first line]` (a 200 with a metrics
 * page is `http 200`), `tls alert <name> (<number>)` (the alert the server
 * sent), `tls <code>` (what the client refused: the server's certificate, a
 * version), `closed` (the connection ended, reset or not, without an
 * answer), `refused`, `timeout`.
 */
function request(port: number, spec: string): Promise<string> {
  const [scheme, ...opts] = spec.split(' ');
  const o = Object.fromEntries(opts.map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)]));
  const headers: Record<string, string> = {};
  if (o.user) headers.authorization = `Basic ${Buffer.from(o.user).toString('base64')}`;
  const base = { host: '127.0.0.1', port, path: '/metrics', method: 'GET', headers, agent: false as const };
  return new Promise((resolve) => {
    let done = false;
    const finish = (c: string): void => {
      if (done) return;
      done = true;
      resolve(c);
    };
    const onResponse = (res: http.IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('error', () => finish('closed'));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const parts = [`http ${res.statusCode}`];
        for (const h of CLASS_HEADERS) if (res.headers[h] !== undefined) parts.push(`${h}: ${String(res.headers[h])}`);
        if (res.statusCode !== 200) parts.push(JSON.stringify(body.split('\n')[0]!.slice(0, 60)));
        else if (!/^# (HELP|TYPE) /m.test(body)) parts.push('(not a metrics page)');
        finish(parts.join(', '));
      });
    };
    let req: http.ClientRequest;
    if (scheme === 'https') {
      const cert =
        o.cert === 'client'
          ? { cert: readFileSync(fx.pki.client), key: readFileSync(fx.pki.clientKey) }
          : o.cert === 'client2'
            ? { cert: readFileSync(fx.pki.client2), key: readFileSync(fx.pki.client2Key) }
            : {};
      const version =
        o.tls === '1.2'
          ? { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' }
          : o.tls === '1.3'
            ? { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' }
            : {};
      req = https.request({ ...base, ca: readFileSync(fx.pki.ca), rejectUnauthorized: true, ...cert, ...(version as object) }, onResponse);
    } else req = http.request(base, onResponse);
    req.setTimeout(5000, () => {
      finish('timeout');
      req.destroy();
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      const code = e.code ?? '';
      // OpenSSL's words for an alert the server sent: `tlsv1 alert unknown ca:...:SSL alert number 48` (the tlsv1/sslv3 prefix is history)
      const alert = /:(?:tlsv1|tlsv13|sslv3) alert ([a-z0-9 ]+):.*SSL alert number (\d+)/.exec(e.message);
      const reason = /SSL routines:[^:]*:([^:]+):/.exec(e.message)?.[1];
      if (alert) finish(`tls alert ${alert[1]} (${alert[2]})`);
      else if (code === 'EPROTO' && reason) finish(`tls ${reason}`);
      else if (code === 'ECONNRESET' || code === 'EPIPE') finish('closed');
      else if (code === 'ECONNREFUSED') finish('refused');
      else if (code.startsWith('ERR_SSL_') || /CERT|SIGNATURE|ISSUER|^ERR_TLS_/.test(code)) finish(`tls ${code}`);
      else finish(`error ${code || e.message}`);
    });
    req.end();
  });
}

async function measure(c: Case): Promise<Measured> {
  const file = writeCase(c);
  const dir = join(fx.root, c.id);
  const [ne, l9] = await Promise.all([startNodeExporter(file), startL9gpu(file, dir)]);
  const answers: Measured['answers'] = [];
  try {
    if (ne.accepted && l9.accepted) {
      for (const r of c.requests ?? []) {
        const [a, b] = await Promise.all([request(ne.port, r), request(l9.port, r)]);
        answers.push({ request: r, ne: a, l9: b });
      }
    }
  } finally {
    await Promise.all([ne.stop(), l9.stop()]);
  }
  return { c, ne, l9, answers };
}

const startWords = (s: Started): string => (s.accepted ? `accepted: ${s.tls ? 'TLS' : 'plain HTTP'}` : 'refused');

/** The answer a request gets from each server, and whether that is the same class or the known difference. */
function verdict(c: Case, a: Measured['answers'][number]): 'yes' | 'known' | 'no' {
  const k = c.known?.[a.request];
  if (k) return k.nodeExporter === a.ne && k.l9gpu === a.l9 ? 'known' : 'no';
  return a.ne === a.l9 ? 'yes' : 'no';
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();

/** The section of docs/security.md between the markers, from what was measured. */
function renderTable(): string {
  const out: string[] = [
    'Written by `test/system/web-config-conformance.test.ts` (`L9GPU_UPDATE_DOCS=1` writes it again). node_exporter is 1.11.1',
    "(exporter-toolkit on Go 1.26's TLS); `$DIR` is the test's folder. The PKI (`test/helpers/certs.ts`): a CA, an EC",
    'server certificate for 127.0.0.1, client certificates of the CA (`client`: DNS:scraper.example,',
    'URI:spiffe://example/prometheus) and of a second CA (`client2`: DNS:other.example). alice and bob have the password',
    '`secret`; carol is no user.',
    '',
    '### At start',
    '',
    '| case | the file has | node_exporter | l9gpu | agree |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const m of measured) {
    const agree = m.ne.accepted === m.l9.accepted && m.ne.tls === m.l9.tls ? 'yes' : 'no';
    out.push(
      `| ${m.c.id} | ${cell(m.c.has)} | ${cell(m.ne.accepted ? startWords(m.ne) : `refused (${m.ne.message})`)} ` +
        `| ${cell(m.l9.accepted ? startWords(m.l9) : `refused (${m.l9.message})`)} | ${agree} |`,
    );
  }
  out.push(
    '',
    '### Requests',
    '',
    'Each request is `http` or `https` (the client trusts the CA) then what it adds: `cert=` the client certificate it',
    'shows, `tls=` the one TLS version it offers, `user=` its basic-auth user and password (`user=` alone: none).',
    "An answer is `http <status>` with the headers a web_config sets and, but for a 200 with a metrics page, the body's",
    "first line; `tls alert <name> (<number>)`: the alert the server sent; `tls <code>`: Node's code for what the client",
    "refused (the server's certificate); `closed`: no answer and no alert.",
    '',
    '| case | request | node_exporter | l9gpu | agree |',
    '| --- | --- | --- | --- | --- |',
  );
  for (const m of measured)
    for (const a of m.answers)
      out.push(
        `| ${m.c.id} | ${cell(a.request)} | ${cell(a.ne)} | ${cell(a.l9)} | ` +
          `${verdict(m.c, a) === 'known' ? 'known difference' : verdict(m.c, a)} ` +
          `|`,
      );
  const byWhy = new Map<string, string[]>();
  for (const c of CASES)
    for (const [r, k] of Object.entries(c.known ?? {})) byWhy.set(k.why, [...(byWhy.get(k.why) ?? []), `${c.id} \`${r}\``]);
  out.push('', '### Known differences', '');
  if (!byWhy.size) out.push('None.');
  for (const [why, where] of byWhy) out.push(`* ${why} The requests: ${where.join(', ')}.`);
  return out.join('\n');
}

before(async () => {
  const root = tempDir('l9gpu-webconf-');
  mkdirSync(join(root, 'pki'));
  const pki = makePki(join(root, 'pki'));
  const hash = (cost: string): string =>
    execFileSync('htpasswd', ['-nbBC', cost, '', 'secret'], { encoding: 'utf8' }).replace(/[:\n]/g, '');
  const indent = (p: string): string => readFileSync(p, 'utf8').replace(/^(?=.)/gm, '    ');
  fx = { pki, root, alice: hash('10'), bob: hash('5').replace(/^\$2y\$/, '$2a$'), inline: indent };
  const queue = [...CASES];
  const results = new Map<string, Measured>();
  await Promise.all(
    Array.from({ length: AT_ONCE }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) results.set(c.id, await measure(c));
    }),
  );
  measured = CASES.map((c) => results.get(c.id)!);
  if (process.env.L9GPU_UPDATE_DOCS === '1') {
    const doc = readFileSync(DOC, 'utf8');
    const a = doc.indexOf(START);
    const b = doc.indexOf(END);
    assert.ok(a >= 0 && b > a, `${DOC} has the markers ${START} and ${END}`);
    writeFileSync(DOC, `${doc.slice(0, a + START.length)}\n${renderTable()}\n${doc.slice(b)}`);
  }
});

after(() => {
  if (fx) rmSync(fx.root, { recursive: true, force: true });
});

test('the cases cover each field: at least 30, each accepted one asked, each refused one naming a key', () => {
  assert.ok(CASES.length >= 30, `${CASES.length} cases`);
  assert.equal(new Set(CASES.map((c) => c.id)).size, CASES.length, 'case ids are unique');
  for (const c of CASES)
    assert.ok((c.requests === undefined) !== (c.key === undefined), `${c.id}: either requests (accepted) or a key (refused)`);
});

for (const c of CASES) {
  test(`${c.id}: ${c.has}: node_exporter and l9gpu agree`, () => {
    const m = measured.find((x) => x.c === c)!;
    const both = `node_exporter: ${startWords(m.ne)} ${m.ne.message}\nl9gpu: ${startWords(m.l9)} ${m.l9.message}`;
    assert.equal(m.l9.accepted, m.ne.accepted, `${c.id}: accepted by one, refused by the other:\n${both}`);
    assert.equal(m.l9.tls, m.ne.tls, `${c.id}: TLS on one, plain HTTP on the other:\n${both}`);
    if (!m.ne.accepted) {
      assert.ok(c.key !== undefined, `${c.id}: both refused the file, but the case expects it accepted:\n${both}`);
      assert.match(
        m.l9.message,
        /^exit 2: l9gpu: \[prometheus\] web_config: /,
        `${c.id}: l9gpu's refusal is exit 2 and one line naming [prometheus] web_config:\n${both}`,
      );
      if (c.key) assert.ok(m.l9.message.includes(`: ${c.key}: `), `${c.id}: l9gpu's refusal names ${c.key}:\n${both}`);
      return;
    }
    assert.ok(c.requests, `${c.id}: both accepted the file, but the case expects it refused:\n${both}`);
    const wrong = m.answers.filter((a) => verdict(c, a) === 'no');
    assert.deepEqual(
      wrong.map(
        (a) =>
          `${a.request}: node_exporter ${a.ne}; l9gpu ${a.l9}${
            c.known?.[a.request]
              ? ` (the known difference is node_exporter ` + `${c.known[a.request]!.nodeExporter}; l9gpu ${c.known[a.request]!.l9gpu})`
              : ''
          }`,
      ),
      [],
      `${c.id}: the answers differ`,
    );
  });
}

test('docs/security.md holds the table measured (L9GPU_UPDATE_DOCS=1 writes it)', () => {
  const doc = readFileSync(DOC, 'utf8');
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  assert.ok(a >= 0 && b > a, `${DOC} has the markers ${START} and ${END}`);
  const written = doc
    .slice(a + START.length, b)
    .trim()
    .split('\n');
  const now = renderTable().split('\n');
  // the rows that changed, not the whole table: a row is a case's or a request's answers
  const changed: string[] = [];
  for (const line of written) if (!now.includes(line)) changed.push(`- ${line}`);
  for (const line of now) if (!written.includes(line)) changed.push(`+ ${line}`);
  if (!changed.length && written.join('\n') !== now.join('\n')) changed.push('(the same lines in another order)');
  assert.deepEqual(
    changed,
    [],
    "docs/security.md's conformance table (-) is not the one measured (+): run with L9GPU_UPDATE_DOCS=1 to write it",
  );
});

test('Prometheus 3.5 scrapes l9gpu over TLS with a client certificate and basic auth; the wrong password makes up 0', async () => {
  const dir = join(fx.root, 'prometheus');
  mkdirSync(dir);
  const file = join(dir, 'web.yml');
  writeFileSync(file, `${tls(fx, `  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ${fx.pki.ca}\n`)}${users(fx)}`);
  const l9 = await startL9gpu(file, dir);
  assert.ok(l9.accepted && l9.tls, l9.message);
  const target = `127.0.0.1:${l9.port}`;
  const tlsFiles = { ca: fx.pki.ca, cert: fx.pki.client, key: fx.pki.clientKey };
  const [good, bad] = await Promise.all([
    new Prometheus().start(target, '1s', {
      version: 3,
      scheme: 'https',
      basicAuth: { username: 'alice', password: 'secret' },
      tls: tlsFiles,
    }),
    new Prometheus().start(target, '1s', {
      version: 3,
      scheme: 'https',
      basicAuth: { username: 'alice', password: 'not-secret' },
      tls: tlsFiles,
    }),
  ]);
  try {
    await waitFor(
      'up == 1 and a sim GPU series on the Prometheus with the right password',
      async () => {
        const up = await good.query('up{job="l9gpu"}');
        const gpu = await good.query('gpu_utilization_ratio{gpu_vendor="sim"}');
        return up.length === 1 && up[0]!.value![1] === '1' && gpu.length > 0 ? true : undefined;
      },
      30_000,
    );
    await waitFor(
      'up == 0 on the Prometheus with the wrong password',
      async () => {
        const up = await bad.query('up{job="l9gpu"}');
        return up.length === 1 && up[0]!.value![1] === '0' ? true : undefined;
      },
      30_000,
    );
    assert.deepEqual(await bad.query('gpu_utilization_ratio'), [], 'no GPU series past the wrong password');
  } finally {
    await Promise.all([good.stop(), bad.stop(), l9.stop()]);
  }
  assert.match(l9.stderr(), /wrong or missing basic-auth credentials: 401/);
});
