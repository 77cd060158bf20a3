import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { generateKey } from "../../src/proof/keys.ts";
import { errorData, openStream } from "../../testkit/sse.ts";
import type { Server } from "bun";
import { tlsFixture } from "../../testkit/env.ts";
import { proveData, verifyWithCli } from "../../testkit/prove.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST, makeLocalhostIdentity } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/wait.ts";
import { type RunningNotary, notarySessions, startKeyedNotary } from "../../testkit/notary.ts";

/**
 * A remote `cli notary start` with everything a production notary turns on at once: TLS (tls.enabled, a
 * certificate from the test CA for localhost, which the prover trusts through NODE_EXTRA_CA_CERTS), API-key auth
 * (whitelist) and a secp256r1 key; one real MPC session through a `cli prover start` that uses it over https
 * and wss, and `cli verify` on the proof.
 */
const KEY = "tls-remote-prover-key-9c8b7a";
let notary: RunningNotary;
let notaryPubPath: string;
let prover: RunningProver;
let target: Server<undefined>;

beforeAll(async () => {
  const tls = tlsFixture();
  const identity = makeLocalhostIdentity(tls);
  const keyed = await startKeyedNotary(
    KEY,
    [
      "host: 127.0.0.1", "port: 0",
      "notarization:", "  max_sent_data: 1024", "  max_recv_data: 2048", "  private_key_path: notary.key", "  signature_algorithm: secp256r1",
      "tls:", "  enabled: true", `  private_key_path: ${identity.keyPath}`, `  certificate_path: ${identity.chainPath}`,
    ],
    ["--algorithm", "secp256r1"],
    // A notary serving TLS refuses a test anchor unless told that this is a test deployment.
    { NODE_EXTRA_CA_CERTS: tls.caPath, TLSN_TEST_TRUST_ANCHOR_EXPOSED: "1" },
  );
  notary = keyed.notary;
  notaryPubPath = keyed.pubPath;
  target = startTarget(tls);
  prover = await startProver(SOURCE_CLI, target.port!, {
    PROVER_NOTARY_URL: `https://localhost:${notary.port}`,
    PROVER_NOTARY_API_KEY: KEY,
    // Its proofs are checked against this pinned key before they are stored or delivered.
    PROVER_NOTARY_KEYS: notaryPubPath,
    NODE_EXTRA_CA_CERTS: tls.caPath,
  });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  notary?.process.kill("SIGKILL");
  target?.stop(true);
}, 120_000);

describe("a remote notary with TLS, API-key auth and a secp256r1 key", () => {
  test("serves https only to whitelisted keys", async () => {
    expect(notary.url).toStartWith("https://");
    const options = { tls: { ca: tlsFixture().caPem } };
    const refused = await fetch(`https://localhost:${notary.port}/session`, { ...options, method: "POST", body: "{}" });
    expect(refused.status).toBe(401);
    const info = (await (await fetch(`https://localhost:${notary.port}/info`, options)).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ signatureAlgorithm: "secp256r1", publicKey: readFileSync(notaryPubPath, "utf8") });
    // Plain HTTP to the TLS port gets no answer the prover could mistake for the notary's.
    expect(await fetch(`http://127.0.0.1:${notary.port}/info`).then((r) => r.status, () => "refused")).not.toBe(200);
  });

  test("a prover that does not trust the notary's certificate does not use it", async () => {
    const untrusting = await startProver(SOURCE_CLI, target.port!, {
      PROVER_NOTARY_URL: `https://localhost:${notary.port}`,
      PROVER_NOTARY_API_KEY: KEY,
    });
    try {
      const response = await fetch(`${untrusting.url}/proxy`, {
        headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": crypto.randomUUID() },
      });
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("5");
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("notary_unavailable");
    } finally {
      expect(await untrusting.stop()).toBe(0);
    }
  }, 120_000);

  test("a prover pinning another notary key makes no proof: notary_untrusted, on the stream too", async () => {
    const otherKeyPath = join(dirname(notaryPubPath), "other-notary.pub");
    writeFileSync(otherKeyPath, generateKey("secp256r1").publicKeyPem);
    const pinningOther = await startProver(SOURCE_CLI, target.port!, {
      PROVER_NOTARY_URL: `https://localhost:${notary.port}`,
      PROVER_NOTARY_API_KEY: KEY,
      PROVER_NOTARY_KEYS: otherKeyPath,
      NODE_EXTRA_CA_CERTS: tlsFixture().caPath,
    });
    try {
      const requestId = crypto.randomUUID();
      const stream = await openStream(`${pinningOther.url}/proof/${requestId}`, 240_000);
      const response = await fetch(`${pinningOther.url}/proxy`, {
        headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": requestId },
      });
      // Refused before any MPC session: the key it announced is not the pinned one.
      expect(response.status).toBe(502);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("notary_untrusted");
      const outcome = errorData((await stream.events)[0]!);
      expect(outcome.code).toBe("notary_untrusted");
      expect(outcome.message).toContain("is not a pinned one (PROVER_NOTARY_KEYS)");
    } finally {
      expect(await pinningOther.stop()).toBe(0);
    }
  }, 240_000);

  test("a real session over https and wss makes a proof signed with secp256r1 that cli verify accepts", async () => {
    const proved = await proveData(prover.url, target.port!);
    expect(proved.status).toBe(200);
    const { publicKey, proofText } = proved.proof!;
    expect(publicKey).toBe(readFileSync(notaryPubPath, "utf8"));
    expect(JSON.parse(proofText).body.notary.algorithm).toBe("secp256r1");
    const verified = await verifyWithCli(proofText, notaryPubPath);
    expect(verified.stderr).toBe("");
    expect(verified.exitCode).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, requestId: proved.requestId, serverName: TARGET_HOST });
    const sessions = () => notarySessions(`https://localhost:${notary.port}`, { tls: { ca: tlsFixture().caPem } });
    expect(await eventually(sessions, (n) => n === 0, 10_000)).toBe(0);
  }, 240_000);
});
