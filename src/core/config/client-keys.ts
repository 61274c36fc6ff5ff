/**
 * The keys every client that sends over the network has alike, declared
 * once: its TLS files and its secrets in files. A section spreads them
 * (`...tlsClientKeys('', 'the OTLP endpoint')`); their names and types stay
 * literal, so readSection types them as any other key.
 */
import type { KeySpec } from './schema.js';
import type { TlsFiles } from '../net/tls-files.js';
import type { SecretSources } from '../net/secret-files.js';

/**
 * A client's TLS files, as the OpenTelemetry exporters name them
 * (OTEL_EXPORTER_OTLP_CERTIFICATE...): the same three keys in every section
 * that sends over https, with a prefix where the section has other clients'
 * keys ([jobs] promql_certificate).
 */
export function tlsClientKeys<const P extends string>(prefix: P, who: string, env?: { ca: string[]; cert: string[]; key: string[] }) {
  const vars = (names: string[] | undefined) => (names ? { env: names.map((name) => ({ name })) } : {});
  return [
    {
      key: `${prefix}certificate`,
      type: 'path',
      default: null,
      example: '/etc/l9gpu/tls/ca.pem',
      ...vars(env?.ca),
      description:
        `PEM bundle of the CAs ${who}'s certificate is checked against, in place of the system's (a ` +
        `private CA). Read again when it changes on disk.`,
    },
    {
      key: `${prefix}client_certificate`,
      type: 'path',
      default: null,
      example: '/etc/l9gpu/tls/client.pem',
      ...vars(env?.cert),
      description: `PEM client certificate presented to ${who} (mTLS), with ${prefix}client_key. Read again when it changes on disk.`,
    },
    {
      key: `${prefix}client_key`,
      type: 'path',
      default: null,
      example: '/etc/l9gpu/tls/client-key.pem',
      ...vars(env?.key),
      description: `PEM private key of ${prefix}client_certificate (keep it readable by root alone: doctor warns otherwise).`,
    },
  ] as const satisfies readonly [KeySpec, KeySpec, KeySpec];
}

/** headers_file and token_file: a client's secrets in files of their own, so that l9gpu.ini holds none and can stay readable by every user.
 * */
export function secretFileKeys<const P extends string>(prefix: P, who: string) {
  return [
    {
      key: `${prefix}headers_file`,
      type: 'path',
      default: null,
      example: '/etc/l9gpu/secrets/headers',
      description:
        `A file of request headers sent to ${who}, one "Name: value" a line (# comments), over the ` +
        `ones of ${prefix}headers: an Authorization or tenant header kept out of l9gpu.ini. Read ` +
        `again when it changes; keep it readable by root alone.`,
    },
    {
      key: `${prefix}token_file`,
      type: 'path',
      default: null,
      example: '/etc/l9gpu/secrets/token',
      description:
        `A file holding a bearer token sent to ${who} as "Authorization: Bearer <token>" (over any ` +
        `Authorization header). Read again when it changes; keep it readable by root alone.`,
    },
  ] as const satisfies readonly [KeySpec, KeySpec];
}

/** The values of tlsClientKeys(prefix) in a section read by readSection. */
type TlsValues<P extends string> = { readonly [K in `${P}certificate` | `${P}client_certificate` | `${P}client_key`]: string | null };

/** A section's TLS files as a client takes them. */
export function tlsFilesOf<P extends string>(section: string, prefix: P, v: TlsValues<P>): TlsFiles {
  const keys = { ca: `${prefix}certificate`, cert: `${prefix}client_certificate`, key: `${prefix}client_key` } as const;
  return { section, keys, ca: v[keys.ca], cert: v[keys.cert], key: v[keys.key] };
}

type SecretValues<P extends string> = { readonly [K in `${P}headers_file` | `${P}token_file`]: string | null };

/** A section's secret files (with the headers and token written in it) as a client takes them. */
export function secretSourcesOf<P extends string>(
  section: string,
  prefix: P,
  v: SecretValues<P>,
  inline: { headers?: Readonly<Record<string, string>>; token?: string | null },
  optional = false,
): SecretSources {
  return {
    section,
    ...inline,
    headersFile: { key: `${prefix}headers_file`, path: v[`${prefix}headers_file`] },
    tokenFile: { key: `${prefix}token_file`, path: v[`${prefix}token_file`] },
    optional,
  };
}
