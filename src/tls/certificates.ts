/**
 * The server's certificate chain, checked with node:crypto's X509Certificate: from the leaf, each certificate must
 * be issued (names and signature) by the next, found among the certificates the server sent or the trust anchors,
 * until an anchor is reached; every certificate on the path, the anchor included, must be valid at `now`; every
 * issuer must be a CA, with no fewer intermediates below it than its path length allows (basicConstraints), whose
 * name constraints the leaf's names meet (name-constraints.ts); the leaf must name the server and, when it lists
 * extended key usages, allow serverAuth.
 * Not checked: revocation.
 * A chain that checked out is remembered (checkedChains): the same bytes for the same name under the same anchors
 * check out again while `now` is inside every path certificate's validity, and only the time is checked again.
 */
import { type KeyObject, X509Certificate, createHash } from "node:crypto";
import { DER_TAG } from "../core/der.ts";
import { AppError } from "../core/errors.ts";
import { EXTENSION_ID, certificateDer, extensionOf, untrusted } from "./certificate-extensions.ts";
import { checkNameConstraints, leafNames, readNameConstraints } from "./name-constraints.ts";

const MAX_DEPTH = 10;
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";

/**
 * The pathLenConstraint of a CA certificate's basicConstraints: how many intermediate CA certificates may follow
 * it on a path to a leaf; undefined when it sets none (no limit).
 */
function pathLengthLimit(cert: X509Certificate): number | undefined {
  const extension = extensionOf(cert, EXTENSION_ID.basicConstraints);
  if (!extension) return undefined;
  const limit = certificateDer.sequence(extension.value, "basicConstraints").find((field) => field.tag === DER_TAG.integer);
  if (!limit) return undefined;
  if (limit.content.length === 0 || (limit.content[0]! & 0x80) !== 0) throw untrusted("a certificate in the server's chain has a negative path length");
  // Four bytes and more: more intermediates than any chain here can hold.
  return limit.content.length > 3 ? Number.MAX_SAFE_INTEGER : limit.content.reduce((value, byte) => value * 256 + byte, 0);
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

/** `cert` in a refusal: "the intermediate certificate (CN=…)". */
const described = (cert: X509Certificate, what: string): string => `the ${what} (${cert.subject.replaceAll("\n", ", ")})`;

function checkValidAt(cert: X509Certificate, now: Date, what: string): void {
  if (now < cert.validFromDate || now > cert.validToDate) {
    throw untrusted(`${described(cert, what)} is not valid at ${now.toISOString()}: valid ${cert.validFromDate.toISOString()} to ${cert.validToDate.toISOString()}`);
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

/** A chain that checked out: its leaf's key, and the times between which every certificate of its path is valid. */
interface CheckedChain {
  leafKey: KeyObject;
  validFrom: number;
  validTo: number;
}

/**
 * Chains that checked out, by anchor list, then server name and chain bytes: a server sends the same chain to every
 * connection, and the prover and its notary each check it for every proof (X.509 parsing, an issuer search through
 * the public roots, signature checks: about a quarter of a millisecond a check under load). Failures are not kept.
 */
const checkedChains = new WeakMap<readonly X509Certificate[], Map<string, CheckedChain>>();
/** Chains kept per anchor list; the oldest is dropped first. */
export const CHECKED_CHAINS_KEPT = 512;

const chainKey = (chainDer: readonly Uint8Array[], serverName: string): string => {
  const hash = createHash("sha256").update(serverName);
  // Each certificate's length before its bytes: two ways of cutting the same bytes are two keys.
  for (const der of chainDer) hash.update(Uint32Array.of(der.length)).update(der);
  return hash.digest("base64");
};

/** The leaf's public key once the chain checks out for `serverName` at `now`. */
export function checkCertificateChain(
  chainDer: readonly Uint8Array[],
  serverName: string,
  anchors: readonly X509Certificate[],
  now: Date,
): KeyObject {
  let checked = checkedChains.get(anchors);
  if (!checked) checkedChains.set(anchors, (checked = new Map()));
  const key = chainKey(chainDer, serverName);
  const known = checked.get(key);
  const at = now.getTime();
  if (known && at >= known.validFrom && at <= known.validTo) return known.leafKey;
  const path = checkChainPath(chainDer, serverName, anchors, now);
  checked.delete(key);
  checked.set(key, path);
  if (checked.size > CHECKED_CHAINS_KEPT) checked.delete(checked.keys().next().value!);
  return path.leafKey;
}

/** The whole check: the path from the leaf to an anchor, each certificate on it checked at `now`. */
function checkChainPath(chainDer: readonly Uint8Array[], serverName: string, anchors: readonly X509Certificate[], now: Date): CheckedChain {
  const [leafDer, ...restDer] = chainDer;
  if (!leafDer) throw new AppError("tls_unsupported", "the server sent no certificate; proxy mode needs one");
  const leaf = parse(leafDer, "certificate");
  const intermediates = restDer.map((der, i) => parse(der, `certificate ${i + 2}`));
  // Read before the path is built: the runtime takes a CA whose nameConstraints it cannot read for no issuer at all.
  const constraints = new Map(intermediates.map((c) => [c, readNameConstraints(c, described(c, "intermediate certificate"))]));
  if (leaf.checkHost(serverName) === undefined) throw untrusted(`the server's certificate is not valid for ${serverName}`);
  const usages = leaf.keyUsage;
  if (Array.isArray(usages) && usages.length > 0 && !usages.includes(SERVER_AUTH)) {
    throw untrusted("the server's certificate is not for server authentication (extended key usage)");
  }
  checkValidAt(leaf, now, "server's certificate");
  const names = leafNames(leaf, serverName);
  let validFrom = leaf.validFromDate.getTime();
  let validTo = leaf.validToDate.getTime();
  const onPath = (cert: X509Certificate) => {
    validFrom = Math.max(validFrom, cert.validFromDate.getTime());
    validTo = Math.min(validTo, cert.validToDate.getTime());
  };
  let current = leaf;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const anchor = anchors.find((a) => issues(a, current));
    if (anchor) {
      if (!anchor.ca) throw untrusted("the trust anchor that issued the server's chain is not a CA certificate");
      checkValidAt(anchor, now, "trust anchor");
      checkPathLength(anchor, depth);
      checkNameConstraints(readNameConstraints(anchor, described(anchor, "trust anchor")), names);
      onPath(anchor);
      return { leafKey: publicKeyOf(leaf), validFrom, validTo };
    }
    const issuer = intermediates.find((c) => c !== current && issues(c, current));
    if (!issuer) throw untrusted(`the server's certificate chain for ${serverName} does not lead to a trusted anchor`);
    if (!issuer.ca) throw untrusted("a certificate in the server's chain issues others but is not a CA certificate");
    checkValidAt(issuer, now, "intermediate certificate");
    checkPathLength(issuer, depth);
    checkNameConstraints(constraints.get(issuer), names);
    onPath(issuer);
    current = issuer;
  }
  throw untrusted(`the server's certificate chain is longer than ${MAX_DEPTH}`);
}
