import { describe, expect, test } from "bun:test";
import { loadProverConfig } from "../../src/prover/config.ts";
import { loadNotaryConfig } from "../../src/notary/config.ts";
import { isLoopbackHost, refuseExposedTestAnchor } from "../../src/core/test-anchor-exposure.ts";
import { appErrorOf } from "../../testkit/app-error.ts";
import { notaryConfig } from "../../testkit/notary.ts";

/** The refusal a call throws, as the CLI would print it (config_invalid: exit 2). */
const refusal = appErrorOf;

describe("a test trust anchor on a node others can reach", () => {
  test("loopback is 127.0.0.0/8, ::1 and localhost; nothing else", () => {
    for (const host of ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST", "api.localhost", "::ffff:127.0.0.1"]) expect({ host, loopback: isLoopbackHost(host) }).toEqual({ host, loopback: true });
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.com", "128.0.0.1", "localhost.example.com", "::2"]) expect({ host, loopback: isLoopbackHost(host) }).toEqual({ host, loopback: false });
  });

  test("refused beyond loopback or with TLS, naming the setting and the opt-in; allowed on loopback or when said so", () => {
    const base = { role: "prover", hostSetting: "PROVER_HOST", testTrustAnchorPath: "/ca.pem", allowed: false };
    expect(refusal(() => refuseExposedTestAnchor({ ...base, host: "0.0.0.0" }))).toEqual({
      code: "config_invalid",
      message: "TLSN_TEST_TRUST_ANCHOR is set but this prover listens on 0.0.0.0 (PROVER_HOST), beyond loopback: its proofs would rest on a test CA; unset it, or set TLSN_TEST_TRUST_ANCHOR_EXPOSED=1 if this is a test deployment",
    });
    expect(refusal(() => refuseExposedTestAnchor({ ...base, host: "127.0.0.1", tls: true }))?.message).toContain("this prover serves TLS:");
    expect(refusal(() => refuseExposedTestAnchor({ ...base, host: "127.0.0.1" }))).toBeUndefined();
    expect(refusal(() => refuseExposedTestAnchor({ ...base, host: "0.0.0.0", allowed: true }))).toBeUndefined();
    expect(refusal(() => refuseExposedTestAnchor({ ...base, host: "0.0.0.0", testTrustAnchorPath: undefined }))).toBeUndefined();
  });

  test("the prover's and the notary's configurations apply it", () => {
    expect(refusal(() => loadProverConfig({ PROVER_HOST: "0.0.0.0", TLSN_TEST_TRUST_ANCHOR: "/ca.pem" }))?.code).toBe("config_invalid");
    expect(refusal(() => loadProverConfig({ PROVER_HOST: "0.0.0.0", TLSN_TEST_TRUST_ANCHOR: "/ca.pem", TLSN_TEST_TRUST_ANCHOR_EXPOSED: "1" }))).toBeUndefined();
    expect(refusal(() => loadProverConfig({ TLSN_TEST_TRUST_ANCHOR: "/ca.pem" }))).toBeUndefined();
    // The notary's default host is every address.
    const everywhere = notaryConfig("port: 0\n");
    expect(refusal(() => loadNotaryConfig(everywhere, { TLSN_TEST_TRUST_ANCHOR: "/ca.pem" }))?.message).toContain("this notary listens on 0.0.0.0 (the config's host)");
    expect(refusal(() => loadNotaryConfig(everywhere, {}))).toBeUndefined();
    const withTls = notaryConfig("host: 127.0.0.1\ntls:\n  enabled: true\n  private_key_path: k.pem\n  certificate_path: c.pem\n");
    expect(refusal(() => loadNotaryConfig(withTls, { TLSN_TEST_TRUST_ANCHOR: "/ca.pem" }))?.message).toContain("this notary serves TLS");
    expect(refusal(() => loadNotaryConfig(withTls, { TLSN_TEST_TRUST_ANCHOR: "/ca.pem", TLSN_TEST_TRUST_ANCHOR_EXPOSED: "true" }))).toBeUndefined();
  });
});
