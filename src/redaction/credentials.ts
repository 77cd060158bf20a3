/**
 * The secrets inside a hidden header's value, which a server may echo on their own: an error saying
 * `invalid api key sk_live_…` shows the token without its `Bearer`.
 * - Any header whose value is `scheme credential` (RFC 9110 auth-scheme, then a token68): the credential;
 *   for `Basic`, also the decoded `user:password`, and the user and the password each.
 * - `Cookie`: each cookie's value (`name=value` pairs split at `;`), without and with surrounding quotes.
 * - `Set-Cookie`: the value of the cookie it sets (the pair before the first `;`).
 */

/** RFC 9110 token, then one or more spaces, then a token68. */
const schemeAndCredential = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) +([A-Za-z0-9\-._~+/]+=*)$/;
const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const latin1 = new TextDecoder("latin1");
const encode = (text: string) => Buffer.from(text, "latin1");

/** The credential after the scheme and, for Basic, what it encodes: `user:password` whole, the user and the password. */
function authorizationParts(value: string): { whole: string[]; parts: string[] } {
  const match = schemeAndCredential.exec(value);
  if (!match) return { whole: [], parts: [] };
  const scheme = match[1]!;
  const credential = match[2]!;
  if (scheme.toLowerCase() !== "basic" || !base64.test(credential)) return { whole: [], parts: [credential] };
  const decoded = Buffer.from(credential, "base64").toString("latin1");
  const colon = decoded.indexOf(":");
  // RFC 7617: the user id cannot hold a colon; without one, the decoded text is one secret.
  if (colon < 0) return { whole: [decoded], parts: [credential] };
  return { whole: [decoded], parts: [credential, decoded.slice(0, colon), decoded.slice(colon + 1)] };
}

/** Each cookie's value, and its content when quoted. */
function cookieValues(pairs: string[]): string[] {
  return pairs.flatMap((pair) => {
    const equals = pair.indexOf("=");
    if (equals < 0) return [];
    const value = pair.slice(equals + 1).trim();
    const quoted = value.length >= 2 && value.startsWith('"') && value.endsWith('"');
    return quoted ? [value, value.slice(1, -1)] : [value];
  });
}

export interface CredentialParts {
  /** Whole secrets in another form (a decoded Basic credential): looked for as any hidden value is. */
  whole: Uint8Array[];
  /** Pieces of the value: looked for only from a length where a false hit is unlikely (see index.ts). */
  parts: Uint8Array[];
}

/** What to look for besides the value itself, for a hidden value of the header `name`. */
export function credentialParts(name: string, value: Uint8Array): CredentialParts {
  const text = latin1.decode(value);
  const header = name.toLowerCase();
  const found =
    header === "cookie"
      ? { whole: [], parts: cookieValues(text.split(";")) }
      : header === "set-cookie"
        ? { whole: [], parts: cookieValues(text.split(";").slice(0, 1)) }
        : authorizationParts(text);
  return { whole: found.whole.map(encode), parts: found.parts.map(encode) };
}
