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

/** The parts of a URL redactUrl hides, as a text that echoes them may spell them (raw and decoded): to mask there. */
export function urlSecrets(u: URL): string[] {
  const raw = [u.username, u.password, ...u.search.slice(1).split('&').map((kv) => kv.slice(kv.indexOf('=') + 1))].filter(Boolean);
  const decoded = raw.map((x) => {
    try {
      return decodeURIComponent(x.replace(/\+/g, ' '));
    } catch {
      return x; // a stray % is kept as written
    }
  });
  return [...new Set([...raw, ...decoded])];
}
