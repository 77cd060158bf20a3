/**
 * A host's one name in TLS and in proofs. A URL may name a host fully qualified, with a trailing dot
 * (`https://api.example.com./`, which browsers and curl accept); TLS names it without one: the SNI HostName is sent
 * without a trailing dot (RFC 6066 §3) and certificates name hosts without one. So the prover dials, sends SNI and
 * Host, checks the certificate under the name without the dot, and the notary signs that name; a verifier takes
 * `api.example.com.` and `api.example.com` for the same server.
 */

/** `name` without a fully qualified name's trailing dot; null when a label is empty (`a..b`, `.a`, `a..`, `.`). */
export function tlsServerName(name: string): string | null {
  const bare = name.endsWith(".") ? name.slice(0, -1) : name;
  return bare.split(".").includes("") ? null : bare;
}

/** A server name as names are compared: case-blind, as DNS compares, and the trailing dot aside. */
export const serverNameKey = (name: string): string => name.toLowerCase().replace(/\.$/, "");

/** Whether two server names name the same host. */
export const sameServerName = (a: string, b: string): boolean => serverNameKey(a) === serverNameKey(b);
