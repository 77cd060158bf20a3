/**
 * The server's certificate chain, checked with node:crypto's X509Certificate: from the leaf, each certificate must
 * be issued (names and signature) by the next, found among the certificates the server sent or the trust anchors,
 * until an anchor is reached; every certificate on the path, the anchor included, must be valid at `now`; every
 * issuer must be a CA; the leaf must name the server and, when it lists extended key usages, allow serverAuth.
 * Not checked: path length and name constraints, revocation.
 */
import { type KeyObject, X509Certificate } from "node:crypto";
import { AppError } from "../errors.ts";

const MAX_DEPTH = 10;
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";

const untrusted = (message: string): AppError => new AppError("tls_untrusted", message);

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

const issues = (issuer: X509Certificate, cert: X509Certificate): boolean => cert.checkIssued(issuer) && cert.verify(issuer.publicKey);

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
      return leaf.publicKey;
    }
    const issuer = intermediates.find((c) => c !== current && issues(c, current));
    if (!issuer) throw untrusted(`the server's certificate chain for ${serverName} does not lead to a trusted anchor`);
    if (!issuer.ca) throw untrusted("a certificate in the server's chain issues others but is not a CA certificate");
    checkValidAt(issuer, now, "intermediate certificate");
    current = issuer;
  }
  throw untrusted(`the server's certificate chain is longer than ${MAX_DEPTH}`);
}
