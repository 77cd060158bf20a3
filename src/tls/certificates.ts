/**
 * The server's certificate chain, checked with node:crypto's X509Certificate: from the leaf, each certificate must
 * be issued (names and signature) by the next, found among the certificates the server sent or the trust anchors,
 * until an anchor is reached; every certificate on the path, the anchor included, must be valid at `now`; every
 * issuer must be a CA, with no fewer intermediates below it than its path length allows (basicConstraints); the
 * leaf must name the server and, when it lists extended key usages, allow serverAuth.
 * Not checked: name constraints, revocation.
 */
import { type KeyObject, X509Certificate } from "node:crypto";
import { DER_TAG, decodeOid, derReader } from "../core/der.ts";
import { AppError } from "../core/errors.ts";

const MAX_DEPTH = 10;
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";

const untrusted = (message: string): AppError => new AppError("tls_untrusted", message);
const certificateDer = derReader("certificate", untrusted);
const BASIC_CONSTRAINTS = "2.5.29.19";

/**
 * The pathLenConstraint of a CA certificate's basicConstraints: how many intermediate CA certificates may follow
 * it on a path to a leaf; undefined when it sets none (no limit).
 */
function pathLengthLimit(cert: X509Certificate): number | undefined {
  const [tbs] = certificateDer.sequence(cert.raw, "certificate");
  const extensions = certificateDer.all(certificateDer.expect(tbs, DER_TAG.sequence, "a TBSCertificate")).find((field) => field.tag === DER_TAG.explicit3);
  if (!extensions) return undefined;
  for (const extension of certificateDer.sequence(extensions.content, "extensions")) {
    const [id, ...rest] = certificateDer.all(certificateDer.expect(extension, DER_TAG.sequence, "an extension"));
    if (decodeOid(certificateDer.expect(id, DER_TAG.oid, "an extension id")) !== BASIC_CONSTRAINTS) continue;
    const value = certificateDer.expect(rest.at(-1), DER_TAG.octetString, "an extension value");
    const limit = certificateDer.sequence(value, "basicConstraints").find((field) => field.tag === DER_TAG.integer);
    if (!limit) return undefined;
    if (limit.content.length === 0 || (limit.content[0]! & 0x80) !== 0) throw untrusted("a certificate in the server's chain has a negative path length");
    // Four bytes and more: more intermediates than any chain here can hold.
    return limit.content.length > 3 ? Number.MAX_SAFE_INTEGER : limit.content.reduce((value, byte) => value * 256 + byte, 0);
  }
  return undefined;
}

/** Refuses an issuer whose path length allows fewer intermediate CAs below it than the chain puts there. */
function checkPathLength(issuer: X509Certificate, intermediatesBelow: number): void {
  const limit = pathLengthLimit(issuer);
  if (limit !== undefined && intermediatesBelow > limit) {
    throw untrusted(`a CA certificate in the server's chain allows ${limit} intermediate certificates below it (path length); the chain has ${intermediatesBelow}`);
  }
}

function parse(der: Uint8Array, what: string): X509Certificate {
  try {
    return new X509Certificate(der);
  } catch {
    throw untrusted(`the server's ${what} is not a valid X.509 certificate`);
  }
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;
/** Parsed anchors by the list they came from: a notary passes the same list for every session. */
const parsedAnchors = new WeakMap<readonly string[], X509Certificate[]>();

/** The anchors as certificates (an entry may be a bundle); one that does not parse is a configuration fault. */
export function parseTrustAnchors(pems: readonly string[]): X509Certificate[] {
  const cached = parsedAnchors.get(pems);
  if (cached) return cached;
  const anchors = pems.flatMap((pem, i) => {
    const blocks = pem.match(PEM_BLOCK);
    if (!blocks) throw new AppError("config_invalid", `trust anchor ${i + 1} is not a PEM certificate`);
    return blocks.map((block) => {
      try {
        return new X509Certificate(block);
      } catch {
        throw new AppError("config_invalid", `trust anchor ${i + 1} is not a valid PEM certificate`);
      }
    });
  });
  parsedAnchors.set(pems, anchors);
  return anchors;
}

function checkValidAt(cert: X509Certificate, now: Date, what: string): void {
  if (now < cert.validFromDate || now > cert.validToDate) {
    throw untrusted(`the ${what} (${cert.subject.replaceAll("\n", ", ")}) is not valid at ${now.toISOString()}: valid ${cert.validFromDate.toISOString()} to ${cert.validToDate.toISOString()}`);
  }
}

/** Whether `issuer` issued `cert`; an issuer whose key cannot be read issued nothing. */
function issues(issuer: X509Certificate, cert: X509Certificate): boolean {
  if (!cert.checkIssued(issuer)) return false;
  try {
    return cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** The leaf's key; one the runtime cannot read (Bun's BoringSSL reads no RSASSA-PSS key) is refused clearly. */
function publicKeyOf(leaf: X509Certificate): KeyObject {
  try {
    return leaf.publicKey;
  } catch {
    throw new AppError("tls_unsupported", "the server's certificate holds a public key of a type that cannot be read here (an RSASSA-PSS key is not supported; an RSA key signing with RSA-PSS is)");
  }
}

/** The leaf's public key once the chain checks out for `serverName` at `now`. */
export function checkCertificateChain(
  chainDer: readonly Uint8Array[],
  serverName: string,
  anchors: readonly X509Certificate[],
  now: Date,
): KeyObject {
  const [leafDer, ...restDer] = chainDer;
  if (!leafDer) throw new AppError("tls_unsupported", "the server sent no certificate; proxy mode needs one");
  const leaf = parse(leafDer, "certificate");
  const intermediates = restDer.map((der, i) => parse(der, `certificate ${i + 2}`));
  if (leaf.checkHost(serverName) === undefined) throw untrusted(`the server's certificate is not valid for ${serverName}`);
  const usages = leaf.keyUsage;
  if (Array.isArray(usages) && usages.length > 0 && !usages.includes(SERVER_AUTH)) {
    throw untrusted("the server's certificate is not for server authentication (extended key usage)");
  }
  checkValidAt(leaf, now, "server's certificate");
  let current = leaf;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const anchor = anchors.find((a) => issues(a, current));
    if (anchor) {
      if (!anchor.ca) throw untrusted("the trust anchor that issued the server's chain is not a CA certificate");
      checkValidAt(anchor, now, "trust anchor");
      checkPathLength(anchor, depth);
      return publicKeyOf(leaf);
    }
    const issuer = intermediates.find((c) => c !== current && issues(c, current));
    if (!issuer) throw untrusted(`the server's certificate chain for ${serverName} does not lead to a trusted anchor`);
    if (!issuer.ca) throw untrusted("a certificate in the server's chain issues others but is not a CA certificate");
    checkValidAt(issuer, now, "intermediate certificate");
    checkPathLength(issuer, depth);
    current = issuer;
  }
  throw untrusted(`the server's certificate chain is longer than ${MAX_DEPTH}`);
}
