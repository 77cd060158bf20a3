import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { DER_TAG, decodeOid, derReader } from "../../src/core/der.ts";
import { issueCertificate } from "../../src/engine/test-ca.ts";
import { checkCertificateChain, parseTrustAnchors } from "../../src/tls/certificates.ts";

/**
 * The test CA's certificates parse as what they were asked to be: a path length is a DER INTEGER, so from 128 on it
 * needs a leading zero byte (without it 128 reads as -128, and BoringSSL then takes the CA for no CA at all).
 */

const der = derReader("certificate", (reason) => new Error(reason));
const BASIC_CONSTRAINTS = "2.5.29.19";

/** The INTEGER content of a certificate's basicConstraints pathLenConstraint, read with the project's own DER reader. */
function pathLengthContent(pem: string): Uint8Array | undefined {
  const [tbs] = der.sequence(new Uint8Array(new X509Certificate(pem).raw), "certificate");
  const extensions = der.all(der.expect(tbs, DER_TAG.sequence, "a TBSCertificate")).find((field) => field.tag === DER_TAG.explicit3);
  for (const extension of der.sequence(extensions!.content, "extensions")) {
    const [id, ...rest] = der.all(der.expect(extension, DER_TAG.sequence, "an extension"));
    if (decodeOid(der.expect(id, DER_TAG.oid, "an extension id")) !== BASIC_CONSTRAINTS) continue;
    return der.sequence(der.expect(rest.at(-1), DER_TAG.octetString, "an extension value"), "basicConstraints").find((field) => field.tag === DER_TAG.integer)?.content;
  }
  return undefined;
}

describe("a CA's path length", () => {
  for (const [pathLength, content] of [
    [127, "7f"],
    [128, "0080"],
    [255, "00ff"],
    [256, "0100"],
  ] as const) {
    test(`${pathLength}: a positive INTEGER (${content}); node:crypto reads a CA; an intermediate may follow it`, () => {
      const ca = issueCertificate({ subject: "anchor", ca: { pathLength } });
      expect(Buffer.from(pathLengthContent(ca.pem)!).toString("hex")).toBe(content);
      expect(new X509Certificate(ca.pem).ca).toBe(true);
      const intermediate = issueCertificate({ subject: { commonName: "Intermediate" }, ca: {} }, ca);
      const leaf = issueCertificate({ subject: { commonName: "leaf.tlsproof.test" }, dnsNames: ["leaf.tlsproof.test"] }, intermediate);
      const chain = [leaf, intermediate].map((c) => new Uint8Array(new X509Certificate(c.pem).raw));
      expect(checkCertificateChain(chain, "leaf.tlsproof.test", parseTrustAnchors([ca.pem]), new Date())).toBeDefined();
    });
  }

  test("none asked: basicConstraints holds no INTEGER", () => {
    expect(pathLengthContent(issueCertificate({ subject: "anchor", ca: {} }).pem)).toBeUndefined();
  });
});
