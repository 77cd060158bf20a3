import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { DER_TAG, derOid, derTlv } from "../../src/core/der.ts";
import { type CertificateOptions, type IssuedCertificate, type RawExtension, issueCertificate } from "../../src/engine/test-ca.ts";
import { checkCertificateChain, parseTrustAnchors } from "../../src/tls/certificates.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { SUBJECT_ALT_NAME, directoryName, dns, email, ip, nameConstraints, rawNameConstraints, subjectAltNames } from "./support/name-constraints.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * Name constraints (RFC 5280 4.2.1.10) on chains made for each case: an intermediate (or the anchor) constrains the
 * leaf's DNS and IP names and the server name; a constraint of a type not checked, critical or met by the leaf's
 * names, and one that does not read, refuse the chain.
 */

const ca = issueCertificate({ subject: "anchor", ca: {} });
const ANCHOR = "the trust anchor (OU=GlobalSign ECC Root CA - R4, O=GlobalSign, CN=GlobalSign)";
const INTERMEDIATE = "the intermediate certificate (CN=Constrained CA)";

const constrained = (...extensions: RawExtension[]) => issueCertificate({ subject: { commonName: "Constrained CA" }, ca: {}, extensions }, ca);
const leafOf = (issuer: IssuedCertificate, options: Partial<CertificateOptions> = {}) =>
  issueCertificate({ subject: { commonName: TARGET_HOST }, dnsNames: [TARGET_HOST], ...options }, issuer);

const derOf = (certificate: IssuedCertificate) => new Uint8Array(new X509Certificate(certificate.pem).raw);
/** The chain check of `chain` (leaf first) for `serverName`, with `ca` the only anchor unless `anchors` are given. */
const check = (chain: IssuedCertificate[], serverName = TARGET_HOST, anchors = [ca]) =>
  checkCertificateChain(chain.map(derOf), serverName, parseTrustAnchors(anchors.map((a) => a.pem)), new Date());
/** The chain of a leaf (`options`) from an intermediate with `constraints`. */
const through = (constraints: RawExtension, options: Partial<CertificateOptions> = {}) => {
  const intermediate = constrained(constraints);
  return [leafOf(intermediate, options), intermediate];
};

describe("DNS names", () => {
  test("a permitted subtree: the leaf within it verifies, one outside it is refused", () => {
    expect(check(through(nameConstraints({ permitted: [dns("tlsproof.test")] })))).toBeDefined();
    expectRefusal(
      () => check(through(nameConstraints({ permitted: [dns("example.org")] }))),
      "tls_untrusted",
      /^the intermediate certificate \(CN=Constrained CA\) does not permit the name target\.tlsproof\.test \(name constraints\)$/,
    );
  });

  test("one permitted subtree among several is enough", () => {
    expect(check(through(nameConstraints({ permitted: [dns("example.org"), dns("tlsproof.test")] })))).toBeDefined();
  });

  test("a subtree holds the name and its subdomains, not a sibling that shares its ending", () => {
    const chain = through(nameConstraints({ permitted: [dns("target.tlsproof.test")] }), { dnsNames: ["target.tlsproof.test", "api.target.tlsproof.test"] });
    expect(check(chain)).toBeDefined();
    expect(check(chain, "api.target.tlsproof.test")).toBeDefined();
    const sibling = through(nameConstraints({ permitted: [dns("target.tlsproof.test")] }), { dnsNames: ["xtarget.tlsproof.test"] });
    expectRefusal(() => check(sibling, "xtarget.tlsproof.test"), "tls_untrusted", /^the intermediate certificate .* does not permit the name xtarget\.tlsproof\.test /);
  });

  test("a subtree with a leading dot holds the subdomains only", () => {
    const dotted = nameConstraints({ permitted: [dns(".target.tlsproof.test")] });
    expect(check(through(dotted, { dnsNames: ["api.target.tlsproof.test"] }), "api.target.tlsproof.test")).toBeDefined();
    expectRefusal(() => check(through(dotted)), "tls_untrusted", new RegExp(`^${escape(INTERMEDIATE)} does not permit the name target\\.tlsproof\\.test \\(name constraints\\)$`));
  });

  test("an excluded subtree refuses the names within it, also beside a permitted one that holds them", () => {
    expectRefusal(
      () => check(through(nameConstraints({ excluded: [dns("target.tlsproof.test")] }))),
      "tls_untrusted",
      /^the intermediate certificate \(CN=Constrained CA\) excludes the name target\.tlsproof\.test \(name constraints\)$/,
    );
    expectRefusal(() => check(through(nameConstraints({ permitted: [dns("tlsproof.test")], excluded: [dns(".tlsproof.test")] }))), "tls_untrusted", / excludes the name target\.tlsproof\.test /);
    expect(check(through(nameConstraints({ excluded: [dns("example.org"), dns("arget.tlsproof.test"), dns("xarget.tlsproof.test")] })))).toBeDefined();
  });

  test("an empty subtree holds every name", () => {
    expect(check(through(nameConstraints({ permitted: [dns("")] })))).toBeDefined();
    expectRefusal(() => check(through(nameConstraints({ excluded: [dns("")] }))), "tls_untrusted", / excludes the name target\.tlsproof\.test /);
  });

  test("every DNS name of the leaf is held to them, not only the server's", () => {
    const chain = through(nameConstraints({ permitted: [dns("tlsproof.test")] }), { dnsNames: [TARGET_HOST, "mail.example.org"] });
    expectRefusal(() => check(chain), "tls_untrusted", / does not permit the name mail\.example\.org \(name constraints\)$/);
    const excluded = through(nameConstraints({ excluded: [dns("example.org")] }), { dnsNames: [TARGET_HOST, "mail.example.org"] });
    expectRefusal(() => check(excluded), "tls_untrusted", / excludes the name mail\.example\.org /);
  });

  test("the server name is held to them when the leaf names it in its common name only", () => {
    const intermediate = constrained(nameConstraints({ permitted: [dns("tlsproof.test")] }));
    const leaf = issueCertificate({ subject: { commonName: "bank.example.com" } }, intermediate);
    expectRefusal(() => check([leaf, intermediate], "bank.example.com"), "tls_untrusted", / does not permit the name bank\.example\.com \(name constraints\)$/);
  });

  test("without regard to case, and to a name's final dot", () => {
    expect(check(through(nameConstraints({ permitted: [dns("TLSPROOF.Test")] })))).toBeDefined();
    const written = (name: string) => through(nameConstraints({ excluded: [dns("mail.example.org")] }), { dnsNames: [], extensions: [subjectAltNames(dns(TARGET_HOST), dns(name))] });
    expect(check(written("mail.example.net"))).toBeDefined();
    expectRefusal(() => check(written("MAIL.Example.org")), "tls_untrusted", / excludes the name mail\.example\.org /);
    expectRefusal(() => check(written("mail.example.org.")), "tls_untrusted", / excludes the name mail\.example\.org /);
  });

  test("a wildcard meets an excluded name it stands for, and is permitted only within a permitted subtree", () => {
    const wildcard = { dnsNames: ["*.tlsproof.test"] };
    expectRefusal(() => check(through(nameConstraints({ excluded: [dns("elsewhere.tlsproof.test")] }), wildcard)), "tls_untrusted", / excludes the name \*\.tlsproof\.test /);
    expect(check(through(nameConstraints({ excluded: [dns("a.elsewhere.tlsproof.test"), dns(".elsewhere.tlsproof.test")] }), wildcard))).toBeDefined();
    expect(check(through(nameConstraints({ permitted: [dns("tlsproof.test")] }), wildcard))).toBeDefined();
    expectRefusal(() => check(through(nameConstraints({ permitted: [dns("target.tlsproof.test")] }), wildcard)), "tls_untrusted", / does not permit the name \*\.tlsproof\.test /);
    // A one-letter label is no wildcard: it meets itself only.
    expect(check(through(nameConstraints({ excluded: [dns("b.tlsproof.test")] }), { dnsNames: [TARGET_HOST, "a.tlsproof.test"] }))).toBeDefined();
  });
});

describe("IP addresses", () => {
  const at = (...address: number[]) => ({ ipAddresses: [Uint8Array.from(address)] });
  /** a01::1, which begins as 10.0.0.0/8 does. */
  const v6 = [0x0a, 0x01, ...new Array<number>(13).fill(0), 1];
  const v6Prefix16 = [0xff, 0xff, ...new Array<number>(14).fill(0)];

  test("an address within a permitted block verifies; one outside it, or of the other family, is refused", () => {
    expect(check(through(nameConstraints({ permitted: [ip([10, 0, 0, 0], [255, 0, 0, 0])] }), at(10, 1, 2, 3)))).toBeDefined();
    expect(check(through(nameConstraints({ permitted: [ip([0, 0, 0, 0], [0, 0, 0, 0])] }), at(10, 1, 2, 3)))).toBeDefined();
    expectRefusal(
      () => check(through(nameConstraints({ permitted: [ip([192, 168, 0, 0], [255, 255, 0, 0])] }), at(10, 1, 2, 3))),
      "tls_untrusted",
      /^the intermediate certificate \(CN=Constrained CA\) does not permit the address 10\.1\.2\.3 \(name constraints\)$/,
    );
    expectRefusal(
      () => check(through(nameConstraints({ permitted: [ip([10, 0, 0, 0], [255, 0, 0, 0])] }), at(...v6))),
      "tls_untrusted",
      / does not permit the address a01:0:0:0:0:0:0:1 \(name constraints\)$/,
    );
    expect(check(through(nameConstraints({ permitted: [ip(v6.map((byte, i) => (i < 2 ? byte : 0)), v6Prefix16)] }), at(...v6)))).toBeDefined();
  });

  test("an address within an excluded block is refused", () => {
    expectRefusal(() => check(through(nameConstraints({ excluded: [ip([10, 1, 0, 0], [255, 255, 0, 0])] }), at(10, 1, 2, 3))), "tls_untrusted", / excludes the address 10\.1\.2\.3 /);
    expect(check(through(nameConstraints({ excluded: [ip([10, 2, 0, 0], [255, 255, 0, 0])] }), at(10, 1, 2, 3)))).toBeDefined();
  });

  test("each type constrains its own names only", () => {
    expect(check(through(nameConstraints({ permitted: [ip([192, 168, 0, 0], [255, 255, 0, 0])] })))).toBeDefined();
    expect(check(through(nameConstraints({ permitted: [dns("tlsproof.test")] }), at(10, 1, 2, 3)))).toBeDefined();
  });
});

describe("every CA on the path", () => {
  test("an intermediate above the one that issued the leaf", () => {
    const upper = constrained(nameConstraints({ excluded: [dns("tlsproof.test")] }));
    const lower = issueCertificate({ subject: { commonName: "Lower CA" }, ca: {} }, upper);
    expectRefusal(() => check([leafOf(lower), lower, upper]), "tls_untrusted", new RegExp(`^${escape(INTERMEDIATE)} excludes the name target\\.tlsproof\\.test `));
  });

  test("the trust anchor", () => {
    const anchor = issueCertificate({ subject: "anchor", ca: {}, extensions: [nameConstraints({ permitted: [dns("example.org")] })] });
    expectRefusal(() => check([leafOf(anchor)], TARGET_HOST, [anchor]), "tls_untrusted", new RegExp(`^${escape(ANCHOR)} does not permit the name target\\.tlsproof\\.test \\(name constraints\\)$`));
    const malformed = issueCertificate({ subject: "anchor", ca: {}, extensions: [nameConstraints({ permitted: [ip([10, 0, 0, 0], [255, 0, 255, 0])] })] });
    expectRefusal(() => check([leafOf(malformed)], TARGET_HOST, [malformed]), "tls_untrusted", new RegExp(`^${escape(ANCHOR)} has unreadable name constraints `));
  });
});

describe("types not checked here", () => {
  test("critical: refused, though the leaf has no name of the type", () => {
    expectRefusal(
      () => check(through(nameConstraints({ permitted: [email("example.org")] }))),
      "tls_untrusted",
      /^the intermediate certificate \(CN=Constrained CA\) constrains rfc822Name names, which are not checked here \(name constraints\)$/,
    );
    expectRefusal(() => check(through(nameConstraints({ permitted: [dns("tlsproof.test")], excluded: [email("example.org")] }))), "tls_untrusted", / constrains rfc822Name names, /);
  });

  test("not critical: ignored, unless the leaf has a name of the type", () => {
    expect(check(through(nameConstraints({ permitted: [email("example.org")] }, false)))).toBeDefined();
    const withEmail = { dnsNames: [], extensions: [subjectAltNames(dns(TARGET_HOST), email("someone@example.org"))] };
    expectRefusal(() => check(through(nameConstraints({ permitted: [email("example.org")] }, false), withEmail)), "tls_untrusted", / constrains rfc822Name names, which are not checked here/);
  });

  const others: [string, Uint8Array][] = [
    ["otherName", derTlv(0xa0, derOid("1.2.3.4"), derTlv(0xa0, derTlv(DER_TAG.utf8String, new TextEncoder().encode("x"))))],
    ["rfc822Name", email("example.org")],
    ["x400Address", derTlv(0xa3, derTlv(DER_TAG.sequence))],
    ["directoryName", directoryName("Example")],
    ["ediPartyName", derTlv(0xa5, derTlv(0xa1, derTlv(DER_TAG.utf8String, new TextEncoder().encode("x"))))],
    ["uniformResourceIdentifier", derTlv(0x86, new TextEncoder().encode("example.org"))],
    ["registeredID", derTlv(0x88, derOid("1.2.3.4").subarray(2))],
  ];
  test.each(others)("critical %s", (type, base) => {
    expectRefusal(() => check(through(nameConstraints({ excluded: [base] }))), "tls_untrusted", new RegExp(`^${escape(INTERMEDIATE)} constrains ${type} names, which are not checked here \\(name constraints\\)$`));
  });

  test("a directoryName constraint, critical or not: the leaf's subject is a directory name", () => {
    expectRefusal(() => check(through(nameConstraints({ permitted: [directoryName("Example")] }, false))), "tls_untrusted", / constrains directoryName names, which are not checked here/);
  });
});

describe("an extension that does not read", () => {
  const subtree = (...fields: Uint8Array[]) => derTlv(DER_TAG.permittedSubtrees, derTlv(DER_TAG.sequence, ...fields));
  const cases: [string, Uint8Array, RegExp][] = [
    ["not DER", Uint8Array.of(1, 2, 3), /\(malformed DER: truncated\)$/],
    ["no SEQUENCE", derTlv(DER_TAG.integer, Uint8Array.of(1)), /\(malformed nameConstraints: expected nameConstraints SEQUENCE\)$/],
    ["a subtree that is no SEQUENCE", derTlv(DER_TAG.sequence, derTlv(DER_TAG.permittedSubtrees, dns("example.org"))), /\(malformed nameConstraints: expected a GeneralSubtree\)$/],
    ["a subtree with a minimum", derTlv(DER_TAG.sequence, subtree(dns("example.org"), derTlv(0x80, Uint8Array.of(1)))), /\(a GeneralSubtree must hold its base name alone: RFC 5280 uses no minimum or maximum\)$/],
    ["an empty subtree", derTlv(DER_TAG.sequence, subtree()), /\(a GeneralSubtree must hold its base name alone/],
    ["a dNSName constraint that is a wildcard", derTlv(DER_TAG.sequence, subtree(dns("*.example.org"))), /\(a dNSName constraint that is not a domain name\)$/],
    ["a dNSName constraint with a final dot", derTlv(DER_TAG.sequence, subtree(dns("example.org."))), /\(a dNSName constraint that is not a domain name\)$/],
    ["an iPAddress constraint of 5 bytes", derTlv(DER_TAG.sequence, subtree(derTlv(DER_TAG.ipAddress, Uint8Array.of(10, 0, 0, 0, 255)))), /\(an iPAddress constraint of 5 bytes, not an address and mask of 8 or 32\)$/],
    ["an iPAddress constraint of 16 bytes", derTlv(DER_TAG.sequence, subtree(derTlv(DER_TAG.ipAddress, new Uint8Array(16)))), /\(an iPAddress constraint of 16 bytes, /],
    ["a mask that is no prefix", derTlv(DER_TAG.sequence, subtree(ip([10, 0, 0, 0], [255, 0, 255, 0]))), /\(an iPAddress constraint whose mask is not a prefix\)$/],
    ["a mask of a single bit not at the front", derTlv(DER_TAG.sequence, subtree(ip([0, 0, 0, 0], [1, 0, 0, 0]))), /\(an iPAddress constraint whose mask is not a prefix\)$/],
    ["a GeneralName of no known tag", derTlv(DER_TAG.sequence, subtree(derTlv(0x89, Uint8Array.of(1)))), /\(a GeneralName of unknown tag 0x89\)$/],
    [
      "the lists in the wrong order",
      derTlv(DER_TAG.sequence, derTlv(DER_TAG.excludedSubtrees, derTlv(DER_TAG.sequence, dns("a.test"))), subtree(dns("b.test"))),
      /\(expected permittedSubtrees, excludedSubtrees or both, in that order\)$/,
    ],
    ["a list twice", derTlv(DER_TAG.sequence, subtree(dns("a.test")), subtree(dns("b.test"))), /\(expected permittedSubtrees, excludedSubtrees or both, in that order\)$/],
    ["something else beside the lists", derTlv(DER_TAG.sequence, subtree(dns("a.test")), derTlv(DER_TAG.integer, Uint8Array.of(1))), /\(expected permittedSubtrees, excludedSubtrees or both, in that order\)$/],
  ];

  test.each(cases)("%s", (_, value, reason) => {
    for (const critical of [true, false]) {
      expectRefusal(() => check(through(rawNameConstraints(value, critical))), "tls_untrusted", new RegExp(`^${escape(INTERMEDIATE)} has unreadable name constraints ${reason.source}`));
    }
  });

  test("one the runtime cannot read either is refused for what it is, even on a certificate the path does not need", () => {
    const unreadable = constrained(rawNameConstraints(Uint8Array.of(0x30, 0x03, 0xa0)));
    expectRefusal(() => check([leafOf(ca), unreadable]), "tls_untrusted", new RegExp(`^${escape(INTERMEDIATE)} has unreadable name constraints \\(malformed DER: truncated\\)$`));
  });

  test("a leaf whose subjectAltName does not read, though the runtime takes its common name instead", () => {
    const leaf = issueCertificate({ subject: { commonName: TARGET_HOST }, extensions: [{ id: SUBJECT_ALT_NAME, critical: false, value: derTlv(DER_TAG.integer, Uint8Array.of(1)) }] }, ca);
    expectRefusal(() => check([leaf]), "tls_untrusted", /^the server's certificate has an unreadable subjectAltName \(malformed subjectAltName: expected subjectAltName SEQUENCE\)$/);
  });

  test("the extension twice", () => {
    const once = nameConstraints({ permitted: [dns("tlsproof.test")] });
    const twice = constrained(once, once);
    expectRefusal(() => check([leafOf(twice), twice]), "tls_untrusted", /^a certificate in the server's chain has the extension 2\.5\.29\.30 more than once$/);
  });

  test("an empty extension constrains nothing", () => {
    expect(check(through(rawNameConstraints(derTlv(DER_TAG.sequence))))).toBeDefined();
  });
});

/** `text` as a literal in a RegExp. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
