import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { AppError } from "../../../src/core/errors.ts";
import { trustAnchors } from "../../../src/engine/trust-anchor.ts";
import { engineSuiteCheck, type ProbeResult, probeEngineSuite } from "../../../src/prover/mpc/mpc-probe.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { startVersionedTarget } from "../../../testkit/target.ts";
import { makeUntrustedIdentities, type ServerIdentity, TARGET_HOST } from "../../../testkit/tls-fixture.ts";

/**
 * MPC mode's check before any MPC work, against real TLS servers on loopback: the engine's suite offered alone, the
 * certificate checked against the engine's anchors (the test CA here) and the host name; refusals named as the
 * engine names them, and remembered per target.
 */
const tls = tlsFixture();
const anchors = trustAnchors(tls.caPem);
const servers: Record<string, { port: number; stop(): void }> = {};

const serve = (identity: ServerIdentity): Server<undefined> =>
  Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: identity.chainPem, key: identity.leafKeyPem }, fetch: () => new Response("ok") });

beforeAll(async () => {
  const good = serve(tls);
  servers.good = { port: good.port!, stop: () => good.stop(true) };
  servers.tls13only = await startVersionedTarget(tls, "TLSv1.3");
  for (const [name, identity] of Object.entries(makeUntrustedIdentities(tls))) {
    const server = serve(identity);
    servers[name] = { port: server.port!, stop: () => server.stop(true) };
  }
});

afterAll(() => {
  for (const server of Object.values(servers)) server.stop();
});

const probe = (name: string) => probeEngineSuite("127.0.0.1", servers[name]!.port, TARGET_HOST, anchors);

describe("the MPC pre-check's handshake", () => {
  test("a server offering the engine's suite with a certificate the engine trusts fits", async () => {
    expect(await probe("good")).toEqual({ result: "fits" });
  });

  test("a TLS 1.3-only server refuses the engine's offer", async () => {
    expect(await probe("tls13only")).toEqual({ result: "refused" });
  });

  test("untrusted certificates, named as the engine names them", async () => {
    expect(await probe("expired")).toEqual({ result: "untrusted", reason: "it is outside its validity period" });
    expect(await probe("wrongHost")).toEqual({ result: "untrusted", reason: `it is not valid for ${TARGET_HOST}` });
    expect(await probe("altNameMismatch")).toEqual({ result: "untrusted", reason: `it is not valid for ${TARGET_HOST}` });
    for (const name of ["impostorCa", "selfSigned", "missingIntermediate"]) expect(await probe(name)).toEqual({ result: "untrusted", reason: "its chain does not end in a trusted root" });
    // The test CA is trusted only when given: without it the good server's chain ends nowhere.
    expect(await probeEngineSuite("127.0.0.1", servers.good!.port, TARGET_HOST, trustAnchors())).toEqual({ result: "untrusted", reason: "its chain does not end in a trusted root" });
  });

  test("nothing listening is closed: refused before any MPC work", async () => {
    const closed = serve(tls);
    const port = closed.port!;
    closed.stop(true);
    expect(await probeEngineSuite("127.0.0.1", port, TARGET_HOST, anchors)).toEqual({ result: "closed" });
  });

  test("a server that accepts and then resets the connection is unknown: left to the session to report", async () => {
    const resetting = await Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: (socket) => socket.terminate() } });
    try {
      expect(await probeEngineSuite("127.0.0.1", resetting.port, TARGET_HOST, anchors)).toEqual({ result: "unknown" });
    } finally {
      resetting.stop(true);
    }
  });
});

describe("the check over the probe", () => {
  const refusal = async (check: Promise<void>) => check.then(() => undefined, (error: unknown) => error as AppError);
  const target = { address: "192.0.2.1", port: 443, serverName: "api.example.com" };

  test("refusals are typed and worded as the engine's; a result is remembered, an unknown one is not", async () => {
    const asked: string[] = [];
    const answers: ProbeResult[] = [{ result: "unknown" }, { result: "untrusted", reason: "it is outside its validity period" }];
    const check = engineSuiteCheck(anchors, async (address) => (asked.push(address), answers.shift() ?? { result: "fits" }));
    expect(await refusal(check.check(target))).toBeUndefined();
    const untrusted = await refusal(check.check(target));
    expect(untrusted).toMatchObject({ code: "tls_untrusted", message: "the target's certificate was not trusted: it is outside its validity period; no proof is made" });
    // Remembered: not asked again.
    expect((await refusal(check.check(target)))?.code).toBe("tls_untrusted");
    expect(asked).toHaveLength(2);
    const refusing = engineSuiteCheck(anchors, async () => ({ result: "refused" }));
    const unsupported = await refusal(refusing.check(target));
    expect(unsupported?.code).toBe("tls_unsupported");
    expect(unsupported?.message).toContain("proxy mode (T-PROOF-MODE: proxy)");
  });

  test("a refused connection is target_unreachable, worded as the engine's, and asked again next time", async () => {
    const answers: ProbeResult[] = [{ result: "closed" }, { result: "fits" }];
    const check = engineSuiteCheck(anchors, async () => answers.shift()!);
    expect(await refusal(check.check(target))).toMatchObject({ code: "target_unreachable", message: "the target refused the connection" });
    expect(await refusal(check.check(target))).toBeUndefined();
    expect(answers).toHaveLength(0);
  });
});
