import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type CertificateOptions, type IssuedCertificate, issueCertificate, makeTestCa } from "../../src/engine/test-ca.ts";
import { CHECKED_CHAINS_KEPT, checkCertificateChain, parseTrustAnchors } from "../../src/tls/certificates.ts";
import { OTHER_HOST, TARGET_HOST, rsaPssIdentity } from "../../testkit/tls-fixture.ts";
import { chainIdentities, cornerCertificates, verifyIdentities } from "./support/identities.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * The chain check on certificates made for each case (src/engine/test-ca.ts writes real X.509 with the validity and
 * basic constraints asked for): every certificate on the path, the anchor included, must be valid at the time of the
 * check, every issuer a CA within its path length, the leaf for the server's name.
 */

const DAY = 86_400_000;
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const at = (days: number) => new Date(NOW.getTime() + days * DAY);

const derOf = (pem: string) => new Uint8Array(new X509Certificate(pem).raw);
/** The anchor, valid from ten days ago. */
const ca = issueCertificate({ subject: "anchor", ca: {}, notBefore: at(-10) });
const leafOf = (issuer: IssuedCertificate, options: Partial<CertificateOptions> = {}) =>
  issueCertificate({ subject: { commonName: TARGET_HOST }, dnsNames: [TARGET_HOST], ...options }, issuer);
const intermediateOf = (issuer: IssuedCertificate, name: string, options: Partial<CertificateOptions> = {}) => issueCertificate({ subject: { commonName: name }, ca: {}, ...options }, issuer);

/** The chain check of `chain` (leaf first) against `anchors` at `now`. */
const check = (chain: IssuedCertificate[], anchors: IssuedCertificate[] = [ca], now = NOW, serverName = TARGET_HOST) =>
  checkCertificateChain(
    chain.map((c) => derOf(c.pem)),
    serverName,
    parseTrustAnchors(anchors.map((a) => a.pem)),
    now,
  );

test("a leaf from the anchor: its key comes back", () => {
  const leaf = leafOf(ca);
  const key = check([leaf]);
  expect(key.export({ format: "der", type: "spki" })).toEqual(new X509Certificate(leaf.pem).publicKey.export({ format: "der", type: "spki" }));
});

test("a chain that checked out is remembered for its anchors, name and bytes: the time is checked again each time", () => {
  const expiring = intermediateOf(ca, "Expiring Intermediate", { notBefore: at(-10), notAfter: at(1) });
  // The leaf valid before its issuer: the intermediate bounds the path's validity at both ends.
  const chain = [leafOf(expiring, { notBefore: at(-20) }), expiring].map((c) => derOf(c.pem));
  // One list, parsed once: the checks below share what the first one remembered.
  const anchors = parseTrustAnchors([ca.pem]);
  const key = checkCertificateChain(chain, TARGET_HOST, anchors, NOW);
  expect(checkCertificateChain(chain, TARGET_HOST, anchors, at(0.5))).toBe(key);
  // The window's ends are in it, as each certificate's first and last seconds are (the intermediate's bound both).
  expect(checkCertificateChain(chain, TARGET_HOST, anchors, at(-10))).toBe(key);
  expect(checkCertificateChain(chain, TARGET_HOST, anchors, at(1))).toBe(key);
  expectRefusal(() => checkCertificateChain(chain, TARGET_HOST, anchors, at(2)), "tls_untrusted", /^the intermediate certificate \(CN=Expiring Intermediate\) is not valid at /);
  expectRefusal(() => checkCertificateChain(chain, TARGET_HOST, anchors, at(-15)), "tls_untrusted", /^the intermediate certificate \(CN=Expiring Intermediate\) is not valid at /);
  expectRefusal(() => checkCertificateChain(chain, OTHER_HOST, anchors, NOW), "tls_untrusted", /^the server.s certificate is not valid for elsewhere\.tlsproof\.test$/);
  const otherAnchor = issueCertificate({ subject: "anchor", ca: {}, notBefore: at(-10) });
  expectRefusal(() => checkCertificateChain(chain, TARGET_HOST, parseTrustAnchors([otherAnchor.pem]), NOW), "tls_untrusted", /does not lead to a trusted anchor/);
  // The same bytes cut otherwise are another chain: the intermediate alone is no certificate for the name.
  expectRefusal(() => checkCertificateChain([chain[1]!], TARGET_HOST, anchors, NOW), "tls_untrusted", /not valid for/);
  expectRefusal(() => checkCertificateChain([chain[0]!], TARGET_HOST, anchors, NOW), "tls_untrusted", /does not lead to a trusted anchor/);
  // Both certificates' bytes as one entry: the runtime reads the leaf and leaves the rest, so no intermediate.
  expectRefusal(() => checkCertificateChain([new Uint8Array([...chain[0]!, ...chain[1]!])], TARGET_HOST, anchors, NOW), "tls_untrusted", /does not lead to a trusted anchor/);
  expect(checkCertificateChain(chain, TARGET_HOST, anchors, NOW)).toBe(key);
});

test("chains remembered per anchor list are bounded: past the bound the first remembered is checked anew", () => {
  const wildcard = [derOf(issueCertificate({ subject: { commonName: "wildcard" }, dnsNames: ["*.tlsproof.test"] }, ca).pem)];
  const anchors = parseTrustAnchors([ca.pem]);
  const first = checkCertificateChain(wildcard, "n0.tlsproof.test", anchors, NOW);
  for (let i = 1; i < CHECKED_CHAINS_KEPT; i++) checkCertificateChain(wildcard, `n${i}.tlsproof.test`, anchors, NOW);
  expect(checkCertificateChain(wildcard, "n0.tlsproof.test", anchors, NOW)).toBe(first);
  checkCertificateChain(wildcard, "one-more.tlsproof.test", anchors, NOW);
  // A key object made anew: the chain was checked again in full.
  expect(checkCertificateChain(wildcard, "n0.tlsproof.test", anchors, NOW)).not.toBe(first);
});

describe("validity at the time of the check", () => {
  test("an intermediate that expired, or is not yet valid, while the leaf and anchor are", () => {
    const expired = intermediateOf(ca, "Expired Intermediate", { notBefore: at(-10), notAfter: at(1) });
    const chain = [leafOf(expired), expired];
    expect(check(chain, [ca], NOW)).toBeDefined();
    expectRefusal(() => check(chain, [ca], at(2)), "tls_untrusted", /^the intermediate certificate \(CN=Expired Intermediate\) is not valid at .*: valid .* to /);
    const early = intermediateOf(ca, "Future Intermediate", { notBefore: at(1) });
    expectRefusal(() => check([leafOf(early), early]), "tls_untrusted", /^the intermediate certificate \(CN=Future Intermediate\) is not valid at /);
  });

  test("an anchor that expired, or is not yet valid, while the leaf is", () => {
    const expiring = issueCertificate({ subject: "anchor", ca: {}, notBefore: at(-10), notAfter: at(1) });
    const leaf = leafOf(expiring);
    expect(check([leaf], [expiring], NOW)).toBeDefined();
    expectRefusal(() => check([leaf], [expiring], at(2)), "tls_untrusted", /^the trust anchor \(OU=GlobalSign ECC Root CA - R4, O=GlobalSign, CN=GlobalSign\) is not valid at /);
    const future = issueCertificate({ subject: "anchor", ca: {}, notBefore: at(1) });
    expectRefusal(() => check([leafOf(future)], [future]), "tls_untrusted", /^the trust anchor \(.*\) is not valid at /);
  });

  test("a certificate is valid from its first second through its last (RFC 5280 §4.1.2.5), not a second more", () => {
    const leaf = leafOf(ca, { notBefore: at(-1), notAfter: at(1) });
    expect(check([leaf], [ca], at(-1))).toBeDefined();
    expect(check([leaf], [ca], at(1))).toBeDefined();
    expectRefusal(() => check([leaf], [ca], new Date(at(-1).getTime() - 1000)), "tls_untrusted", /^the server's certificate \(CN=target\.tlsproof\.test\) is not valid at/);
    expectRefusal(() => check([leaf], [ca], new Date(at(1).getTime() + 1000)), "tls_untrusted", /^the server's certificate .* is not valid at/);
  });
});

describe("issuers", () => {
  test("an anchor that is no CA (basic constraints) though its key usage allows signing certificates", () => {
    const { fixture } = verifyIdentities();
    chainIdentities();
    const read = (name: string) => readFileSync(join(fixture.dir, name), "utf8");
    const leaf = derOf(read("by-not-ca.pem"));
    const anchors = parseTrustAnchors([read("not-ca.pem")]);
    // Made by openssl just now, perhaps seconds after NOW.
    expectRefusal(() => checkCertificateChain([leaf], TARGET_HOST, anchors, new Date()), "tls_untrusted", /^the trust anchor that issued the server's chain is not a CA certificate$/);
  });

  test("an anchor's path length counts the intermediates below it", () => {
    const limited = issueCertificate({ subject: "anchor", ca: { pathLength: 0 } });
    const intermediate = intermediateOf(limited, "Below A Path Length 0 Anchor");
    expect(check([leafOf(limited)], [limited])).toBeDefined();
    expectRefusal(() => check([leafOf(intermediate), intermediate], [limited]), "tls_untrusted", /^a CA certificate in the server's chain allows 0 intermediate certificates below it \(path length\); the chain has 1$/);
    const one = issueCertificate({ subject: "anchor", ca: { pathLength: 1 } });
    const below = intermediateOf(one, "Below A Path Length 1 Anchor");
    expect(check([leafOf(below), below], [one])).toBeDefined();
  });

  test("nine intermediates verify; ten make a chain longer than the check follows", () => {
    const chainOf = (length: number) => {
      const intermediates: IssuedCertificate[] = [];
      for (let i = 0; i < length; i++) intermediates.unshift(intermediateOf(intermediates[0] ?? ca, `Intermediate ${i}`));
      return [leafOf(intermediates[0]!), ...intermediates];
    };
    expect(check(chainOf(9))).toBeDefined();
    expectRefusal(() => check(chainOf(10)), "tls_untrusted", /^the server's certificate chain is longer than 10$/);
  });

  test("a self-signed CA that is no anchor ends the path: it does not issue itself", () => {
    const other = makeTestCa();
    expectRefusal(() => check([leafOf(other), other]), "tls_untrusted", /^the server's certificate chain for target\.tlsproof\.test does not lead to a trusted anchor$/);
  });

  test("an intermediate sent but not needed, and intermediates in any order", () => {
    const first = intermediateOf(ca, "First Intermediate");
    const second = intermediateOf(first, "Second Intermediate");
    expect(check([leafOf(second), first, second, intermediateOf(ca, "Unused Intermediate")])).toBeDefined();
  });
});

describe("the leaf", () => {
  test("its name: a wildcard covers one label; another name is refused", () => {
    expect(check([issueCertificate({ subject: { commonName: "wildcard" }, dnsNames: ["*.tlsproof.test"] }, ca)])).toBeDefined();
    expectRefusal(() => check([leafOf(ca)], [ca], NOW, OTHER_HOST), "tls_untrusted", /^the server's certificate is not valid for elsewhere\.tlsproof\.test$/);
  });

  test("no certificate, or bytes that are no certificate", () => {
    const anchors = parseTrustAnchors([ca.pem]);
    expectRefusal(() => checkCertificateChain([], TARGET_HOST, anchors, NOW), "tls_unsupported", /^the server sent no certificate; proxy mode needs one$/);
    expectRefusal(() => checkCertificateChain([Uint8Array.of(0x30, 0x03, 1, 2, 3)], TARGET_HOST, anchors, NOW), "tls_untrusted", /^the server's certificate is not a valid X\.509 certificate$/);
    expectRefusal(() => checkCertificateChain([derOf(leafOf(ca).pem), Uint8Array.of(0x30, 0)], TARGET_HOST, anchors, NOW), "tls_untrusted", /^the server's certificate 2 is not a valid X\.509 certificate$/);
  });

  test("an RSASSA-PSS key, which the runtime cannot read, is refused clearly", () => {
    const { fixture } = verifyIdentities();
    const chain = rsaPssIdentity(fixture).chainPem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g)!;
    const run = () => checkCertificateChain(chain.map(derOf), TARGET_HOST, parseTrustAnchors([fixture.caPem]), new Date());
    expectRefusal(run, "tls_unsupported", /^the server's certificate holds a public key of a type that cannot be read here/);
  });
});

describe("trust anchors", () => {
  test("parsed once per list; each PEM block of a bundle is an anchor", () => {
    const other = makeTestCa();
    const list = [ca.pem + other.pem];
    const anchors = parseTrustAnchors(list);
    expect(anchors.map((a) => a.fingerprint256)).toEqual([new X509Certificate(ca.pem).fingerprint256, new X509Certificate(other.pem).fingerprint256]);
    expect(parseTrustAnchors(list)).toBe(anchors);
  });

  test("a PEM block that is no certificate, and text without one", () => {
    const broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    expectRefusal(() => parseTrustAnchors([ca.pem, broken]), "config_invalid", /^trust anchor 2 is not a valid PEM certificate$/);
    expectRefusal(() => parseTrustAnchors(["nothing"]), "config_invalid", /^trust anchor 1 is not a PEM certificate$/);
  });
});

describe("certificates made by OpenSSL for the corner cases", () => {
  const corner = cornerCertificates();
  const { fixture } = verifyIdentities();
  const checkPems = (chain: string[], anchors = [fixture.caPem]) => checkCertificateChain(chain.map(derOf), TARGET_HOST, parseTrustAnchors(anchors), new Date());

  test("basic constraints read wherever they sit among the extensions, critical or not", () => {
    expect(checkPems([corner.keyUsageFirst.leaf, corner.keyUsageFirst.intermediate])).toBeDefined();
  });

  test("a path length of two bytes (256) allows an intermediate below it", () => {
    const { leaf, below, intermediate } = corner.pathLength256;
    expect(checkPems([leaf, below, intermediate])).toBeDefined();
  });

  test("a leaf without extended key usage may serve", () => {
    expect(checkPems([corner.noExtendedKeyUsage])).toBeDefined();
  });

  test("a leaf without extensions (X.509 v1) may serve, named by its common name", () => {
    expect(checkPems([corner.noExtensions])).toBeDefined();
  });

  test("an anchor with the issuer's key but another name did not issue the leaf", () => {
    expect(checkPems([corner.noExtendedKeyUsage])).toBeDefined();
    expectRefusal(() => checkPems([corner.noExtendedKeyUsage], [corner.renamedCa]), "tls_untrusted", /^the server's certificate chain for target\.tlsproof\.test does not lead to a trusted anchor$/);
  });

  test("an anchor whose key cannot be read issues nothing", () => {
    expectRefusal(() => checkPems([corner.pssCa.leaf], [corner.pssCa.ca]), "tls_untrusted", /^the server's certificate chain for target\.tlsproof\.test does not lead to a trusted anchor$/);
  });
});
