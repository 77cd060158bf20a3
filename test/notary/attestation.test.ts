/**
 * The one attestation path: the mode verifies the exchange (asked when the attestation was), the one builder makes
 * the body, the proof is signed with the EVM attestation inside it; every outcome is counted, refusals by their code.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { NotaryMetrics } from "../../src/metrics/notary.ts";
import { attest } from "../../src/notary/attestation.ts";
import { memoryLedger } from "../../src/notary/ledger.ts";
import type { NotaryMode } from "../../src/notary/modes.ts";
import type { VerifiedTranscript } from "../../src/notary/verified-transcript.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import type { AttestationRequest } from "../../src/protocol/notary.ts";
import { keptLog } from "../../testkit/kept-log.ts";
import { RESPONSE } from "../proof/fixtures.ts";
import { proxyTranscript } from "./support/transcripts.ts";

const key = generateKey("secp256k1");
const context = { publicKeyPem: key.publicKeyPem, algorithm: key.algorithm, testTrustAnchor: false, notaryVersion: "0.1.0", embedded: false };
const declared: AttestationRequest = { requestId: "9b2e4c1d-7a3f-4e5b-8c6d-1f0a2b3c4d5e", redactions: [] };

/** A mode whose verify answers with `verify`; only what the path calls is real. */
const modeVerifying = (verify: NotaryMode["verify"]) => ({ verify }) as unknown as NotaryMode;

function path() {
  const metrics = new NotaryMetrics({ activeSessions: () => 0, failedSessions: () => 0 });
  const { log, lines } = keptLog((message, fields) => `${message} ${JSON.stringify(fields)}`);
  const deps = { key, ledger: memoryLedger(), context, metrics, log };
  const counted = async () =>
    Object.fromEntries(((await metrics.registry.getSingleMetric("tlsproof_notary_attestations_total")!.get()).values as { labels: { result: string }; value: number }[]).map((v) => [v.labels.result, v.value]));
  return { deps, counted, lines };
}

describe("the attestation path", () => {
  test("signs what the mode verified: a proof that verifies, its EVM attestation inside, counted as signed", async () => {
    const { deps, counted, lines } = path();
    const asked: { sessionId: string; declared: AttestationRequest; askedAt: number }[] = [];
    const before = Date.now();
    let readStarted = Number.NaN;
    const proof = await attest(deps, modeVerifying(async (sessionId, request, askedAt) => (asked.push({ sessionId, declared: request, askedAt }), proxyTranscript())), "s-1", async () => {
      // The body takes a while to read: the attestation was asked for before it was.
      readStarted = Date.now();
      await Bun.sleep(30);
      return declared;
    });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.sessionId).toBe("s-1");
    expect(asked[0]!.declared).toEqual(declared);
    expect(asked[0]!.askedAt).toBeGreaterThanOrEqual(before);
    // Dated when asked, not once the body was read (30 ms later): no clock bound, the order of two readings.
    expect(asked[0]!.askedAt).toBeLessThanOrEqual(readStarted);
    const verified = verifyProof(JSON.stringify(proof), key.publicKeyPem, { allowHiddenRequest: true });
    expect(verified.body.requestId).toBe(declared.requestId);
    expect(verified.recv.text).toBe(RESPONSE);
    expect(proof.body.evm).toBeDefined();
    expect(await counted()).toEqual({ signed: 1 });
    expect(lines).toEqual([`proof signed ${JSON.stringify({ sessionId: "s-1", requestId: declared.requestId, mode: "proxy" })}`]);
  });

  test("a refusal, from the body, the mode or the builder, is counted by its code and thrown as it was", async () => {
    const { deps, counted } = path();
    const late = new AppError("attestation_late", "late");
    await expect(attest(deps, modeVerifying(async () => Promise.reject(late)), "s", async () => declared)).rejects.toBe(late);
    await expect(attest(deps, modeVerifying(async () => proxyTranscript()), "s", async () => Promise.reject(new AppError("invalid_body", "bad body")))).rejects.toMatchObject({ code: "invalid_body" });
    const h2: VerifiedTranscript = proxyTranscript({ alpn: "h2" });
    await expect(attest(deps, modeVerifying(async () => h2), "s", async () => declared)).rejects.toMatchObject({ code: "alpn_refused" });
    expect(await counted()).toEqual({ attestation_late: 1, invalid_body: 1, alpn_refused: 1 });
  });

  test("one statement per request id: a second attestation for a signed id is refused; a refused one spends no id", async () => {
    const { deps, counted } = path();
    const signing = modeVerifying(async () => proxyTranscript());
    const refusing = modeVerifying(async () => proxyTranscript({ alpn: "h2" }));
    const other = { ...declared, requestId: "0c9e3d2b-1a4f-4b6e-9d8c-7f6e5d4c3b2a" };
    // Refused before the ledger: the id stays free, and an honest retry is signed.
    await expect(attest(deps, refusing, "s-1", async () => other)).rejects.toMatchObject({ code: "alpn_refused" });
    expect((await attest(deps, signing, "s-2", async () => other)).body.requestId).toBe(other.requestId);
    await expect(attest(deps, signing, "s-3", async () => other)).rejects.toMatchObject({
      code: "already_attested",
      message: `this notary already signed a statement for request id ${other.requestId}: it signs one per request id, ever`,
    });
    expect(await counted()).toEqual({ alpn_refused: 1, signed: 1, already_attested: 1 });
  });

  test("an error that is no refusal is counted as internal", async () => {
    const { deps, counted } = path();
    const broken = new TypeError("a bug");
    await expect(attest(deps, modeVerifying(async () => Promise.reject(broken)), "s", async () => declared)).rejects.toBe(broken);
    expect(await counted()).toEqual({ internal: 1 });
  });
});
