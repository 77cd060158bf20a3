import { afterAll, describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { keysToReveal, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { rootCertificates } from "node:tls";
import type { ServerIdentity } from "../../testkit/tls-fixture.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type Target, relayedExchange, startHttpsTarget } from "./support/exchange.ts";
import { chainIdentities, verifyIdentities } from "./support/identities.ts";

/**
 * Path building on real sessions: a chain through an intermediate verifies; an issuer that is no CA, or a leaf not
 * meant for server authentication, is refused even when the prover's client was told to accept it.
 */

const { fixture } = verifyIdentities();
const chains = chainIdentities();
const targets: Target[] = [];
afterAll(async () => {
  await Promise.all(targets.map((t) => t.stop()));
});

async function verifyAgainst(identity: ServerIdentity, version: "TLSv1.2" | "TLSv1.3", trustAnchorsPem: readonly string[] = [fixture.caPem]) {
  const target = await startHttpsTarget(identity, { version }, "chained\n");
  targets.push(target);
  // The prover's client accepts anything here: the notary's check is the one under test.
  const exchange = await relayedExchange(target.port, { rejectUnauthorized: false });
  const keys = keysToReveal(exchange.keylog, exchange.relayed, false);
  return { exchange, verify: () => verifyRelayedSession(exchange.relayed, keys, { serverName: TARGET_HOST, trustAnchorsPem, now: new Date() }) };
}

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe.each(["TLSv1.2", "TLSv1.3"] as const)("%s", (version) => {
  test("a chain through an intermediate CA verifies", async () => {
    const { exchange, verify } = await verifyAgainst(chains.viaIntermediate, version);
    expect(verify().recv).toEqual(exchange.answer);
  });

  test("a certificate issued by a certificate that is no CA is refused", async () => {
    const { verify } = await verifyAgainst(chains.issuedByNonCa, version);
    const error = refusal(verify);
    expect({ code: error.code, message: error.message }).toEqual({ code: "tls_untrusted", message: "a certificate in the server's chain issues others but is not a CA certificate" });
  });

  test("path length: an intermediate of path length 0 may issue the leaf, not another CA that issues it", async () => {
    const allowed = await verifyAgainst(chains.viaPathLengthZero, version);
    expect(allowed.verify().recv).toEqual(allowed.exchange.answer);
    const { verify } = await verifyAgainst(chains.beyondPathLength, version);
    const error = refusal(verify);
    expect({ code: error.code, message: error.message }).toEqual({
      code: "tls_untrusted",
      message: "a CA certificate in the server's chain allows 0 intermediate certificates below it (path length); the chain has 1",
    });
  });

  test("a certificate for client authentication only is refused", async () => {
    const { verify } = await verifyAgainst(chains.clientAuthOnly, version);
    const error = refusal(verify);
    expect({ code: error.code, message: error.message }).toEqual({ code: "tls_untrusted", message: "the server's certificate is not for server authentication (extended key usage)" });
  });
});

test("trust anchors given as one bundle, the public roots and the test CA", async () => {
  const bundle = [...rootCertificates, fixture.caPem].join("\n");
  const { exchange, verify } = await verifyAgainst(chains.viaIntermediate, "TLSv1.3", [bundle]);
  expect(verify().recv).toEqual(exchange.answer);
});

test("the public roots alone do not trust the test CA's chain", async () => {
  const { verify } = await verifyAgainst(chains.viaIntermediate, "TLSv1.3", rootCertificates);
  const error = refusal(verify);
  expect({ code: error.code, message: error.message }).toEqual({
    code: "tls_untrusted",
    message: `the server's certificate chain for ${TARGET_HOST} does not lead to a trusted anchor`,
  });
});

test("a trust anchor that is not a PEM certificate is a configuration fault", async () => {
  const { verify } = await verifyAgainst(chains.viaIntermediate, "TLSv1.3", [fixture.caPem, "not a certificate"]);
  const error = refusal(verify);
  expect({ code: error.code, message: error.message }).toEqual({ code: "config_invalid", message: "trust anchor 2 is not a PEM certificate" });
});
