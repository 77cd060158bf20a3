import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { trustAnchors } from "../../../src/engine/trust-anchor.ts";
import { serializeRequest } from "../../../src/http1/request.ts";
import type { NotaryServer } from "../../../src/app/notary.ts";
import { generateKey } from "../../../src/proof/keys.ts";
import { verifyProof } from "../../../src/proof/verify.ts";
import type { ProxyAttestationRequest } from "../../../src/protocol/proxy-mode.ts";
import { createNotaryClient } from "../../../src/prover/notary/client.ts";
import { openRelaySocket } from "../../../src/prover/proxy-mode/relay-socket.ts";
import { runTlsExchange } from "../../../src/prover/proxy-mode/tls-exchange.ts";
import { keysToReveal } from "../../../src/tls/verify-session.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { sample, scrapeMetrics } from "../../../testkit/metrics.ts";
import { type VersionedTarget, startVersionedTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { startProxyNotary } from "./support/proxy-notary.ts";

/**
 * The notary's side of proxy mode, driven over its real HTTP and WebSocket routes by the prover's own relay and
 * TLS client code: the notary signs what it relayed and decrypted, and refuses keys that do not decrypt it,
 * redactions naming a hidden request, and targets outside its policy.
 */
const key = generateKey("secp256k1");
/** Room for an answer that can carry more redaction spans than a proof may hold. */
const RECV_LIMIT = 256 * 1024;
let target: VersionedTarget;
let notary: NotaryServer;

beforeAll(async () => {
  const tls = tlsFixture();
  target = await startVersionedTarget(tls, "TLSv1.3");
  notary = startProxyNotary({
    ports: [target.port],
    key,
    proxy: { maxRecvData: RECV_LIMIT, maxHiddenSpanBytes: 4096, trustAnchorsPem: trustAnchors(tls.caPem) },
  });
});

afterAll(async () => {
  await notary?.stop(0);
  target?.stop();
});

/** One relayed exchange of GET `path`; what an attestation needs. */
async function relayedExchange(path = "/data") {
  const client = createNotaryClient(notary.url);
  const sessionId = await client.createSession("proxy", { serverName: TARGET_HOST, port: target.port });
  const relay = await openRelaySocket((listener) => client.openSocket("proxy", sessionId, listener, 5_000));
  const exchange = await runTlsExchange(relay.duplex, {
    serverName: TARGET_HOST,
    request: serializeRequest({ method: "GET", pathAndQuery: path, headers: [["host", TARGET_HOST], ["connection", "close"]], body: undefined }),
    trustAnchorsPem: trustAnchors(tlsFixture().caPem),
    maxRecvBytes: RECV_LIMIT,
    maxRecvSetting: "PROVER_PROXY_MAX_RECV_DATA",
    responseTimeoutMs: 5_000,
  });
  relay.close();
  return { client, sessionId, exchange, keys: keysToReveal(exchange.keylog, relay.handshakeBytes(), false) };
}

/** The notary's count of attestations that ended with `result` (signed, or a refusal's code). */
const attestations = async (result: string) => sample(await scrapeMetrics(notary.url), "tlsproof_notary_attestations_total", { result }) ?? 0;

const attestation = (keys: ProxyAttestationRequest["keys"], redactions: ProxyAttestationRequest["redactions"] = []): ProxyAttestationRequest => ({
  requestId: crypto.randomUUID(),
  keys,
  redactions,
});

describe("proxy sessions on the notary", () => {
  test("the proof holds the answer the notary decrypted, and the request's length only", async () => {
    const { client, sessionId, exchange, keys } = await relayedExchange();
    const signedBefore = await attestations("signed");
    const proof = await client.attest("proxy", sessionId, attestation(keys));
    expect(await attestations("signed")).toBe(signedBefore + 1);
    const verified = verifyProof(JSON.stringify(proof), key.publicKeyPem, { allowHiddenRequest: true, allowTestTrustAnchor: true });
    expect(verified.body.mode).toBe("proxy");
    expect(verified.body).toMatchObject({ request: "hidden", serverPort: target.port, responseFraming: "content-length" });
    expect(verified.body.transcript.sent).toEqual({ length: exchange.sent.length, revealed: [] });
    expect(verified.recv.text).toBe(new TextDecoder().decode(exchange.recv));
  });

  test("a wrong server key is refused: no proof, and the session is gone", async () => {
    const { client, sessionId, keys } = await relayedExchange();
    if (keys.version !== "TLS1.3") throw new Error("expected a TLS 1.3 session");
    const secret = keys.serverApplicationTrafficSecret;
    const wrong = { ...keys, serverApplicationTrafficSecret: `${secret[0] === "0" ? "1" : "0"}${secret.slice(1)}` };
    const [failedBefore, signedBefore] = [await attestations("transcript_invalid"), await attestations("signed")];
    // Refused for the reason that matters: the relayed records do not open under the key the prover revealed.
    await expect(client.attest("proxy", sessionId, attestation(wrong))).rejects.toMatchObject({
      code: "session_failed",
      message: expect.stringMatching(/the server's protected record \d+ does not authenticate under/),
    });
    // The prover's client reports any refusal as session_failed; the notary counts it by its own code.
    expect([await attestations("transcript_invalid"), await attestations("signed")]).toEqual([failedBefore + 1, signedBefore]);
    await expect(client.attest("proxy", sessionId, attestation(keys))).rejects.toMatchObject({ message: expect.stringContaining("unknown or finished") });
  });

  test("a redaction span in the hidden request is refused", async () => {
    const { client, sessionId, keys } = await relayedExchange();
    const spans = [{ direction: "sent" as const, start: 0, end: 3 }];
    await expect(client.attest("proxy", sessionId, attestation(keys, [{ pattern: "req:header:x", spans, matched: true }]))).rejects.toMatchObject({
      message: expect.stringContaining("the request is hidden whole"),
    });
  });

  test("more redaction spans than a proof may hold are refused, naming the cap: the notary never signs what verifiers refuse", async () => {
    const { client, sessionId, exchange, keys } = await relayedExchange("/big?bytes=140000");
    const bodyStart = exchange.recv.length - 140_000;
    // 33,000 one-byte spans: with the revealed ranges between them, 66,002 entries.
    const spans = Array.from({ length: 33_000 }, (_, i) => ({ direction: "recv" as const, start: bodyStart + 2 * i + 1, end: bodyStart + 2 * i + 2 }));
    await expect(client.attest("proxy", sessionId, attestation(keys, [{ pattern: "search:x", spans, matched: true }]))).rejects.toMatchObject({
      message: expect.stringContaining("body lists 66002 revealed ranges, redactions and spans together; a proof holds at most 65536 (MAX_PROOF_ENTRIES)"),
    });
  });

  test("a target outside the notary's policy is refused, naming its setting", async () => {
    const client = createNotaryClient(notary.url);
    await expect(client.createSession("proxy", { serverName: TARGET_HOST, port: 1 })).rejects.toMatchObject({
      code: "target_forbidden",
      message: expect.stringContaining("proxy.allowed_ports"),
    });
    await expect(client.createSession("proxy", { serverName: "other.example", port: target.port })).rejects.toMatchObject({ code: "target_forbidden" });
  });
});
