/**
 * What of a URL may be shown (doctor, logs, describe lines): its user
 * information and query values can be credentials (https://user:token@host,
 * ?api_key=...), so they are replaced by ***; the rest names the endpoint.
 */
export function redactUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return raw;
  }
  if (!u.username && !u.password && !u.search) return raw;
  if (u.username) u.username = '***';
  if (u.password) u.password = '***';
  const keys = [...new Set(u.searchParams.keys())];
  // written by hand: URLSearchParams would percent-encode the marker
  const query = keys.map((k) => `${encodeURIComponent(k)}=***`).join('&');
  u.search = '';
  const s = u.toString();
  const hash = s.indexOf('#');
  return query ? (hash < 0 ? `${s}?${query}` : `${s.slice(0, hash)}?${query}${s.slice(hash)}`) : s;
}

/**
 * A URL's user name is a secret only where it is a credential on its own
 * (https://<token>@host): a name like "user" or "prometheus" is a word, and
 * masked everywhere it would blank that word in every message ("the user
 * nobody"). The URL itself is always shown without it (redactUrl).
 */
const TOKEN_LIKE_NAME = 12;

/** The parts of a URL redactUrl hides, as a text that echoes them may spell them (raw and decoded): to mask there. */
export function urlSecrets(u: URL): string[] {
  const name = u.username.length >= TOKEN_LIKE_NAME || (u.username && !u.password) ? u.username : '';
  const raw = [
    name,
    u.password,
    ...u.search
      .slice(1)
      .split('&')
      .map((kv) => kv.slice(kv.indexOf('=') + 1)),
  ].filter(Boolean);
  const decoded = raw.map((x) => {
    try {
      return decodeURIComponent(x.replace(/\+/g, ' '));
    } catch {
      return x; // a stray % is kept as written
    }
  });
  return [...new Set([...raw, ...decoded])];
}

/** The text with each known secret (4 characters or more) and whatever has the shape of one (redactText) masked. */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  for (const s of secrets) if (s.length >= 4) text = text.split(s).join('***');
  return redactText(text);
}

/** scheme://userinfo@ in any text: the user information (user:password) is a credential. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi;
/** An HTTP credential as a header carries it, wherever an answer or an error echoes it. */
const BASIC = /\bBasic(\s+)([A-Za-z0-9+/]{4,}={0,2})/g;
const BEARER = /\b(bearer)(\s+)([A-Za-z0-9._~+/-]{8,}={0,2})/gi;

/**
 * A text (an error, a backend's answer, a log line) with the credentials it
 * may spell masked: the user information of any URL in it, a Basic
 * credential (base64 of user:password, as a client sends it for
 * http://user:pass@host/) and a Bearer token. Where the secrets themselves
 * are known (a configured header's value), mask them too: this catches only
 * what has the shape of one.
 */
export function redactText(text: string): string {
  if (text.indexOf('@') >= 0) text = text.replace(URL_USERINFO, '$1***@');
  if (text.indexOf('asic') >= 0)
    text = text.replace(BASIC, (m, sp: string, b64: string) =>
      Buffer.from(b64, 'base64').toString('latin1').includes(':') ? `Basic${sp}***` : m,
    );
  if (/earer/i.test(text)) text = text.replace(BEARER, '$1$2***');
  return text;
}
