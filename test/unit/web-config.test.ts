/**
 * The web configuration's reading (exporter-toolkit's rules, without TLS
 * files: those are the conformance table's, against node_exporter), bcrypt's
 * hash form, basic-auth headers, the token buckets, the secret files' form.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { bcryptHashProblem, readWebConfig, WebConfigError } from '../../src/sinks/web/web-config.js';
import { parseBasic } from '../../src/sinks/web/basic-auth.js';
import { TokenBuckets } from '../../src/core/token-buckets.js';
import { certificateSans } from '../../src/sinks/web/tls-server.js';
import { parseHeadersFile } from '../../src/core/net/secret-files.js';
import { tempDir } from '../helpers/paths.js';

const dir = tempDir('l9gpu-web-config-');
let n = 0;
function file(text: string): string {
  const p = join(dir, `w${n++}.yml`);
  writeFileSync(p, text);
  return p;
}
const refused = (text: string): string => {
  const f = file(text);
  try {
    readWebConfig(f);
  } catch (e) {
    assert.ok(e instanceof WebConfigError, String(e));
    return e.message.slice(f.length + 2);
  }
  assert.fail(`accepted: ${text}`);
};
// htpasswd -nbBC 10 "" pw | tr -d ':\n' (its form: bcrypt's parser is what is checked here)
const HASH = '$2y$10$jMrJ60pI3FGhPzgBx5eHj.OUFZbIHjiRHCsxDNDG1DVRzr2P.wwY6';

test('an empty file, or one with only empty sections, serves plain HTTP with no authentication', () => {
  for (const text of ['', '\n# nothing\n', 'tls_server_config:\nhttp_server_config:\n', 'basic_auth_users: {}\n']) {
    const c = readWebConfig(file(text));
    assert.equal(c.tls, null, text);
    assert.equal(c.users.size, 0);
    assert.equal(c.http2, true, 'http2 defaults to true');
    assert.equal(c.rateLimit, null);
  }
});

test('YAML 1.1 as Go reads it: yes is a boolean, a quoted "true" is a string and no boolean', () => {
  assert.equal(readWebConfig(file('http_server_config:\n  http2: no\n')).http2, false);
  assert.equal(readWebConfig(file('http_server_config:\n  http2: yes\n')).http2, true);
  assert.match(refused('http_server_config:\n  http2: "true"\n'), /^http_server_config\.http2: cannot unmarshal "true" into a boolean/);
  // null is the zero value, as yaml.v2 leaves a field it decodes null
  assert.equal(readWebConfig(file('http_server_config:\n  http2: ~\n')).http2, false);
});

test('strict: an unknown key at any level, a key set twice, a value of the wrong kind, junk', () => {
  assert.equal(
    refused('tls_server_configs:\n  cert_file: a\n'),
    'tls_server_configs: field tls_server_configs not found in type web.Config',
  );
  assert.equal(
    refused('tls_server_config:\n  certfile: a\n'),
    'tls_server_config.certfile: field certfile not found in type tls_server_config',
  );
  assert.equal(refused('rate_limit:\n  intervals: 1s\n'), 'rate_limit.intervals: field intervals not found in type rate_limit');
  assert.equal(refused('basic_auth_users:\n  a: x\n  a: y\n'), 'basic_auth_users.a: set twice in one mapping');
  assert.match(
    refused('tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n'),
    /^tls_server_config\.cipher_suites: cannot unmarshal "TLS_AES_128_GCM_SHA256" into a list/,
  );
  assert.match(
    refused('tls_server_config:\n  cert_file: [a, b]\n'),
    /^tls_server_config\.cert_file: cannot unmarshal a sequence into a string/,
  );
  assert.match(refused('hWkNKCp3fvIx3jKnsaBI\nTuEjdwNS8A2vYdFbiKqr\n'), /^cannot unmarshal the document into web\.Config/);
  assert.match(refused('a: [\n'), /^not YAML/);
});

test("TLS: on when any of cert, key, client CA or client_auth_type is set, then complete; Go's names and rules", () => {
  assert.equal(
    refused('tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n'),
    'tls_server_config: missing one of cert or cert_file',
  );
  assert.equal(refused('tls_server_config:\n  cert_file: c.pem\n'), 'tls_server_config: missing one of key or key_file');
  assert.match(
    refused('tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  client_auth_type: RequireSomeCert\n'),
    /^tls_server_config\.client_auth_type: invalid ClientAuth: RequireSomeCert/,
  );
  assert.match(
    refused('tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  client_ca_file: ca.pem\n'),
    /^tls_server_config\.client_ca_file: client CA's have been configured without a Client Auth Policy/,
  );
  assert.equal(
    refused('tls_server_config:\n  cipher_suites: [TLS_RSA_WITH_AES_128_GCM_SHA256]\n'),
    'tls_server_config.cipher_suites[0]: unknown cipher: TLS_RSA_WITH_AES_128_GCM_SHA256',
  );
  assert.equal(refused('tls_server_config:\n  curve_preferences: [P256]\n'), 'tls_server_config.curve_preferences[0]: unknown curve: P256');
  assert.match(refused('tls_server_config:\n  min_version: TLS14\n'), /^tls_server_config\.min_version: unknown TLS version: TLS14/);
  // Go's HTTP/2 needs an AES-128-GCM suite in a TLS 1.2 list; without HTTP/2, or with TLS 1.3 alone, it does not
  const tls12 = 'tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n';
  assert.match(
    refused(tls12),
    /^tls_server_config\.cipher_suites: http2: TLSConfig\.CipherSuites is missing an HTTP\/2-required AES_128_GCM_SHA256 cipher/,
  );
  assert.deepEqual(readWebConfig(file(`${tls12}http_server_config:\n  http2: false\n`)).tls?.cipherSuites, [
    'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  ]);
  assert.equal(readWebConfig(file(`${tls12}  min_version: TLS13\n`)).tls?.minVersion, 'TLS13');
  // the legacy name and the relative paths
  mkdirSync(join(dir, 'sub'), { recursive: true });
  const inSub = join(dir, 'sub', 'web.yml');
  writeFileSync(inSub, 'tls_server_config:\n  cert_file: c.pem\n  key_file: /abs/k.pem\n  client_auth_type: RequireClientCert\n');
  const c = readWebConfig(inSub);
  assert.deepEqual(
    [c.tls?.cert.path, c.tls?.key.path, c.tls?.clientAuth],
    [join(dir, 'sub', 'c.pem'), '/abs/k.pem', 'RequireAnyClientCert'],
  );
});

test('headers: the five exporter-toolkit allows, two of them with their values only', () => {
  assert.deepEqual(
    readWebConfig(file('http_server_config:\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=60\n')).headers,
    { 'X-Frame-Options': 'deny', 'Strict-Transport-Security': 'max-age=60' },
  );
  assert.match(
    refused('http_server_config:\n  headers:\n    Server: me\n'),
    /^http_server_config\.headers\.Server: HTTP header "Server" can not be configured/,
  );
  assert.match(
    refused('http_server_config:\n  headers:\n    X-Frame-Options: DENY\n'),
    /^http_server_config\.headers\.X-Frame-Options: invalid value for X-Frame-Options/,
  );
  assert.match(refused('http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n'), /invalid value for X-Content-Type-Options/);
});

test("basic_auth_users: bcrypt hashes as Go's bcrypt parser takes them", () => {
  assert.equal(readWebConfig(file(`basic_auth_users:\n  prometheus: ${HASH}\n`)).users.get('prometheus'), HASH);
  assert.match(
    refused('basic_auth_users:\n  prometheus: secret\n'),
    /^basic_auth_users\.prometheus: crypto\/bcrypt: hashedSecret too short to be a bcrypted password/,
  );
  assert.match(refused('basic_auth_users:\n  prometheus:\n'), /too short/);
  assert.equal(
    bcryptHashProblem(HASH.replace('$2y$', '$3a$')),
    "crypto/bcrypt: bcrypt algorithm version '3' requested is newer than current version '2'",
  );
  assert.equal(
    bcryptHashProblem(`x${HASH.slice(1)}`),
    "crypto/bcrypt: bcrypt hashes must start with '$', but hashedSecret started with 'x'",
  );
  assert.equal(bcryptHashProblem(HASH.replace('$10$', '$03$')), 'crypto/bcrypt: cost 3 is outside allowed inclusive range 4..31');
  assert.equal(bcryptHashProblem(HASH.replace('$10$', '$1x$')), 'strconv.Atoi: parsing "1x": invalid syntax');
  // no minor letter, and Go's parser does not look at the salt or hash characters
  assert.equal(bcryptHashProblem(`$2$10$${'.'.repeat(53)}`), undefined);
});

test('rate_limit: a Go duration (or nanoseconds) and a burst', () => {
  assert.deepEqual(readWebConfig(file('rate_limit:\n  interval: 1m30s\n  burst: 5\n')).rateLimit, { intervalMs: 90_000, burst: 5 });
  assert.deepEqual(readWebConfig(file('rate_limit:\n  interval: 1500000\n')).rateLimit, { intervalMs: 1.5, burst: 0 });
  assert.equal(readWebConfig(file('rate_limit:\n  interval: 0\n')).rateLimit, null, 'interval 0: no limit');
  assert.deepEqual(
    readWebConfig(file('rate_limit:\n  interval: 1\n')).rateLimit,
    { intervalMs: 1e-6, burst: 0 },
    'an integer is nanoseconds, as yaml.v2 decodes a time.Duration',
  );
  assert.match(refused('rate_limit:\n  interval: soon\n'), /^rate_limit\.interval: time: invalid duration "soon"/);
  assert.match(refused('rate_limit:\n  burst: many\n'), /^rate_limit\.burst: cannot unmarshal "many" into an int/);
});

test('a file that cannot be read says so', () => {
  for (const [path, why] of [
    [join(dir, 'missing.yml'), 'not found'],
    [dir, 'not a regular file'],
  ] as const) {
    assert.throws(
      () => readWebConfig(path),
      (e: Error) => e.message === `${path}: ${why}`,
    );
  }
});

test('Authorization: Basic as Go reads it: padded base64 of user:password, the scheme in any case', () => {
  const b64 = Buffer.from('prometheus:pa:ss').toString('base64');
  assert.deepEqual(parseBasic(`Basic ${b64}`), { user: 'prometheus', password: 'pa:ss' });
  assert.deepEqual(parseBasic(`bAsIc ${b64}`), { user: 'prometheus', password: 'pa:ss' });
  assert.equal(parseBasic(`Basic ${b64.replace(/=+$/, '')}x`), undefined, 'not base64');
  assert.equal(parseBasic(`Bearer ${b64}`), undefined);
  assert.equal(parseBasic(`Basic ${Buffer.from('nocolon').toString('base64')}`), undefined);
  assert.equal(parseBasic(undefined), undefined);
});

test('token buckets: a burst, then one every interval; a key table that does not grow past its bound', () => {
  let t = 0;
  const b = new TokenBuckets(3, 1000, 10, () => t);
  assert.deepEqual([b.take('a'), b.take('a'), b.take('a'), b.take('a')], [true, true, true, false]);
  assert.equal(b.take('b'), true, 'each key its own bucket');
  t = 999;
  assert.equal(b.take('a'), false);
  t = 1000;
  assert.equal(b.take('a'), true);
  for (let i = 0; i < 1000; i++) b.take(`k${i}`);
  assert.ok((b as unknown as { buckets: Map<string, unknown> }).buckets.size <= 10);
  const none = new TokenBuckets(0, 1000, 1, () => t);
  assert.equal(none.take(''), false, 'a burst of 0 lets nothing through, as golang.org/x/time/rate');
});

test('the SANs of a client certificate as Go lists them, quoted values and IPv6 included', () => {
  const sans = certificateSans({
    subjectaltname:
      'DNS:scraper.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, email:ops@example.org, URI:"spiffe://example/a,b"',
  } as import('node:tls').PeerCertificate);
  assert.deepEqual(sans, ['scraper.example', '127.0.0.1', '::1', 'ops@example.org', 'spiffe://example/a,b']);
});

test('a headers file: Name: value lines, comments and blank lines; a bad line named by its number, never its value', () => {
  assert.deepEqual(parseHeadersFile('# tenant\nX-Scope-OrgID: hpc\n\nAuthorization: Bearer abc def\r\n', 'f'), {
    'X-Scope-OrgID': 'hpc',
    Authorization: 'Bearer abc def',
  });
  assert.throws(() => parseHeadersFile('Authorization Bearer secret-token\n', 'f'), { message: 'f:1: not "Name: value"' });
  assert.throws(() => parseHeadersFile('X: a\nx: b\n', 'f'), { message: 'f:2: header x set twice' });
  assert.throws(() => parseHeadersFile('Content-Length: 5\n', 'f'), /f:1: header Content-Length is not one to set/);
  assert.throws(() => parseHeadersFile('Bad Name: v\n', 'f'), /f:1: header name "Bad Name" is not an HTTP token/);
});
