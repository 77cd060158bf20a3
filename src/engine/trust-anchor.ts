import { X509Certificate } from "node:crypto";
import { rootCertificates } from "node:tls";
import { DER_TAG, derReader } from "../core/der.ts";
import { AppError } from "../core/errors.ts";

/**
 * Test trust anchor: tlsn-wasm trusts only the Mozilla roots compiled into it. For offline tests we
 * replace the public key of one built-in P-256 root ("GlobalSign ECC Root CA - R4") with the key of a
 * test CA that has exactly the same subject. Everything else (MPC, TLS, chain checks) stays real.
 */

const ascii = (s: string) => new TextEncoder().encode(s);
const hex = (h: string) => Uint8Array.from(h.match(/../g) ?? [], (b) => Number.parseInt(b, 16));

/** DER contents of the root's subject Name: SET{OU}, SET{O}, SET{CN}, each a PrintableString (a test CA's subject too: test-ca.ts). */
export const ANCHOR_SUBJECT = concat(
  hex("31243022060355040b131b"), ascii("GlobalSign ECC Root CA - R4"),
  hex("31133011060355040a130a"), ascii("GlobalSign"),
  hex("311330110603550403130a"), ascii("GlobalSign"),
);
/** SubjectPublicKeyInfo contents before the P-256 point: algorithm id, then BIT STRING header. */
const P256_SPKI_PREFIX = hex("301306072a8648ce3d020106082a8648ce3d030107034200");
const POINT_LENGTH = 65;

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  outer: for (let i = from; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const anchorInvalid = (reason: string) => new AppError("config_invalid", `TLSN_TEST_TRUST_ANCHOR: ${reason}`);
const certificateDer = derReader("certificate", anchorInvalid);

/** The DER contents of a certificate's subject Name (the TBSCertificate's sixth field, after an explicit version). */
function subjectContents(der: Uint8Array): Uint8Array {
  const [tbs] = certificateDer.sequence(der, "certificate");
  const fields = certificateDer.all(certificateDer.expect(tbs, DER_TAG.sequence, "a TBSCertificate"));
  const first = fields[0]?.tag === DER_TAG.explicit0 ? 1 : 0;
  // serialNumber, signature, issuer, validity, subject
  return certificateDer.expect(fields[first + 4], DER_TAG.sequence, "a subject Name");
}

/**
 * The uncompressed P-256 point of a test CA certificate, after checking that it is a CA whose subject is exactly
 * the anchor's (a certificate the CA issued carries that Name too, as its issuer).
 */
export function testCaPoint(caPem: string): Uint8Array {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(caPem);
  } catch {
    throw anchorInvalid("not a PEM certificate");
  }
  const subject = subjectContents(new Uint8Array(cert.raw));
  if (subject.length !== ANCHOR_SUBJECT.length || indexOf(subject, ANCHOR_SUBJECT) !== 0) {
    throw anchorInvalid('the CA subject must be exactly OU="GlobalSign ECC Root CA - R4", O="GlobalSign", CN="GlobalSign" (PrintableString, in that order; `cli testca` makes one)');
  }
  if (!cert.ca) throw anchorInvalid("not a CA certificate (basicConstraints CA:true): name the CA, not a server certificate it issued");
  const spki = new Uint8Array(cert.publicKey.export({ format: "der", type: "spki" }));
  const prefixAt = indexOf(spki, P256_SPKI_PREFIX);
  if (prefixAt < 0 || spki.length !== prefixAt + P256_SPKI_PREFIX.length + POINT_LENGTH) {
    throw anchorInvalid("the CA key must be an uncompressed P-256 key");
  }
  return spki.slice(prefixAt + P256_SPKI_PREFIX.length);
}

/** A copy of the wasm bytes in which the anchor's public key is the test CA's. */
export function patchTrustAnchor(wasm: Uint8Array, caPem: string): Uint8Array {
  const point = testCaPoint(caPem);
  const subjectAt = indexOf(wasm, ANCHOR_SUBJECT);
  const prefixAt = subjectAt < 0 ? -1 : indexOf(wasm, P256_SPKI_PREFIX, subjectAt);
  if (subjectAt < 0 || prefixAt !== subjectAt + ANCHOR_SUBJECT.length) {
    throw new AppError("internal", "the engine's wasm has no GlobalSign ECC Root CA - R4 anchor to replace");
  }
  const patched = wasm.slice();
  patched.set(point, prefixAt + P256_SPKI_PREFIX.length);
  return patched;
}

/**
 * Proxy mode's trust anchors, the same set as MPC mode's: the built-in Mozilla roots (node's copy), plus the
 * test CA when one is configured. Its subject is a real root's; chain building tells them apart by key.
 */
export function trustAnchors(testCaPem?: string): string[] {
  return testCaPem ? [...rootCertificates, testCaPem] : [...rootCertificates];
}
