/**
 * Certificates for the TLS tests, made by openssl in a folder of the test's:
 * a private CA, a second CA that signed nothing the servers hold, a server
 * certificate for 127.0.0.1 (and localhost), client certificates of each CA
 * (with SANs a web_config's client_allowed_sans can name), an RSA server
 * certificate (for the RSA cipher suites) and an expired one.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type Pki = Record<
  | 'ca'
  | 'caKey'
  | 'ca2'
  | 'server'
  | 'serverKey'
  | 'rsaServer'
  | 'rsaServerKey'
  | 'expired'
  | 'expiredKey'
  | 'client'
  | 'clientKey'
  | 'client2'
  | 'client2Key',
  string
>;

export function makePki(dir: string): Pki {
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });
  const p = (n: string): string => join(dir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'ca2'])
    openssl('req', '-x509', ...ec, '-keyout', p(`${ca}-key.pem`), '-out', p(`${ca}.pem`), '-days', '2', '-subj', `/CN=l9gpu test ${ca}`);
  const leaf = (name: string, ca: string, ext: string, o: { rsa?: boolean; days?: string } = {}): void => {
    openssl(
      'req',
      ...(o.rsa ? ['-newkey', 'rsa:2048', '-nodes'] : ec),
      '-keyout',
      p(`${name}-key.pem`),
      '-out',
      p(`${name}.csr`),
      '-subj',
      `/CN=l9gpu test ${name}`,
    );
    writeFileSync(p(`${name}.ext`), ext);
    if (o.days === 'expired') {
      // x509 -req of OpenSSL 3.0 sets no start date: `openssl ca` does, with a database of its own
      writeFileSync(p('ca-db.txt'), '');
      writeFileSync(p('ca-serial'), '1000\n');
      writeFileSync(
        p('ca.cnf'),
        `[ca]\ndefault_ca = d\n[d]\ndatabase = ${p('ca-db.txt')}\nnew_certs_dir = ${dir}\nserial = ${p('ca-serial')}\ndefault_md ` +
          `= sha256\npolicy = any\nunique_subject = no\n[any]\ncommonName = supplied\n`,
      );
      openssl(
        'ca',
        '-batch',
        '-config',
        p('ca.cnf'),
        '-startdate',
        '20200101000000Z',
        '-enddate',
        '20200102000000Z',
        '-in',
        p(`${name}.csr`),
        '-out',
        p(`${name}.pem`),
        '-keyfile',
        p(`${ca}-key.pem`),
        '-cert',
        p(`${ca}.pem`),
        '-extfile',
        p(`${name}.ext`),
        '-notext',
      );
    } else
      openssl(
        'x509',
        '-req',
        '-in',
        p(`${name}.csr`),
        '-CA',
        p(`${ca}.pem`),
        '-CAkey',
        p(`${ca}-key.pem`),
        '-CAcreateserial',
        '-out',
        p(`${name}.pem`),
        '-days',
        '2',
        '-extfile',
        p(`${name}.ext`),
      );
    chmodSync(p(`${name}-key.pem`), 0o600);
  };
  const server = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';
  leaf('server', 'ca', server);
  leaf('rsa-server', 'ca', server, { rsa: true });
  leaf('expired', 'ca', server, { days: 'expired' });
  leaf('client', 'ca', 'subjectAltName=DNS:scraper.example,URI:spiffe://example/prometheus\nextendedKeyUsage=clientAuth\n');
  leaf('client2', 'ca2', 'subjectAltName=DNS:other.example\nextendedKeyUsage=clientAuth\n');
  return {
    ca: p('ca.pem'),
    caKey: p('ca-key.pem'),
    ca2: p('ca2.pem'),
    server: p('server.pem'),
    serverKey: p('server-key.pem'),
    rsaServer: p('rsa-server.pem'),
    rsaServerKey: p('rsa-server-key.pem'),
    expired: p('expired.pem'),
    expiredKey: p('expired-key.pem'),
    client: p('client.pem'),
    clientKey: p('client-key.pem'),
    client2: p('client2.pem'),
    client2Key: p('client2-key.pem'),
  };
}
