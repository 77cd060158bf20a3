/**
 * The prover's notary client checks a notary's signed answer before it is stored or delivered: signature,
 * key (pinned, or the one announced at first contact), request id and mode. The notary here is a dishonest
 * one over real HTTP: it announces one key and answers with what the test sets, as a compromised or
 * replaced notary would.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import type { Proof, ProofBody } from "../../../src/proof/format.ts";
import { decodePublicKeyPem, generateKey, type NotaryKey } from "../../../src/proof/keys.ts";
import { signProof } from "../../../src/proof/sign.ts";
import { createNotaryClient } from "../../../src/prover/notary/client.ts";
import { sampleBody } from "../../proof/fixtures.ts";

const requestId = "7d0e3c55-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
const request = { requestId, redactions: sampleBody(generateKey("secp256k1")).redactions };

/** A notary over HTTP whose announced key and attestation answer the test sets. */
function dishonestNotary() {
  const state: { announced: NotaryKey; answer: unknown } = { announced: generateKey("secp256k1"), answer: null };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const { pathname } = new URL(req.url);
      if (pathname === "/info") {
        return Response.json({ version: "0.1.0", publicKey: state.announced.publicKeyPem, signatureAlgorithm: "secp256k1", testTrustAnchor: false });
      }
      if (pathname.endsWith("/attestation")) return Response.json(state.answer);
      return new Response("not found", { status: 404 });
    },
  });
  return { state, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

const signed = (key: NotaryKey, change: Partial<ProofBody> = {}): Proof =>
  signProof({ ...sampleBody(key), requestId, ...change }, key);

async function refusal(work: Promise<unknown>): Promise<AppError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

const notary = dishonestNotary();
afterAll(() => notary.stop());

describe("without pinned keys: the key announced at first contact", () => {
  const client = createNotaryClient(notary.url);

  test("a proof signed by the announced key, of this request, in mpc mode, is accepted", async () => {
    notary.state.answer = signed(notary.state.announced);
    const proof = await client.attest("mpc", "s1", request);
    expect(proof.body.requestId).toBe(requestId);
  });

  test("a proof of another request id is refused", async () => {
    notary.state.answer = signed(notary.state.announced, { requestId: "0b6f8a8e-5f0c-4a63-9d7e-1c2b3a4d5e6f" });
    const error = await refusal(client.attest("mpc", "s1", request));
    expect(error.code).toBe("notary_untrusted");
    expect(error.message).toContain("request id");
  });

  test("a proof of another mode is refused", async () => {
    notary.state.answer = signed(notary.state.announced, { mode: "proxy", serverPort: 443 });
    const error = await refusal(client.attest("mpc", "s1", request));
    expect(error.code).toBe("notary_untrusted");
    expect(error.message).toContain('mode "proxy"');
  });

  test("an altered proof (signature no longer matches) is refused", async () => {
    const proof = signed(notary.state.announced);
    notary.state.answer = { ...proof, body: { ...proof.body, serverName: "other.example" } };
    expect((await refusal(client.attest("mpc", "s1", request))).code).toBe("notary_untrusted");
  });

  test("a notary that comes back with a new key is refused, its proofs too", async () => {
    const first = notary.state.announced;
    notary.state.announced = generateKey("secp256k1");
    const error = await refusal(client.info());
    expect(error.code).toBe("notary_untrusted");
    expect(error.message).toContain("key changed");
    notary.state.answer = signed(notary.state.announced);
    expect((await refusal(client.attest("mpc", "s1", request))).code).toBe("notary_untrusted");
    notary.state.announced = first;
  });
});

describe("with pinned keys (PROVER_NOTARY_KEYS)", () => {
  const pinned = generateKey("secp256k1");
  const client = createNotaryClient(notary.url, undefined, [decodePublicKeyPem(pinned.publicKeyPem)]);

  test("a notary announcing another key is refused", async () => {
    const error = await refusal(client.info());
    expect(error.code).toBe("notary_untrusted");
    expect(error.message).toContain("PROVER_NOTARY_KEYS");
  });

  test("a notary announcing another key gets no session: its proof would be refused after the whole MPC session", async () => {
    const fresh = createNotaryClient(notary.url, undefined, [decodePublicKeyPem(pinned.publicKeyPem)]);
    const error = await refusal(fresh.createSession("mpc", { maxSentData: 1024, maxRecvData: 2048 }));
    expect(error.code).toBe("notary_untrusted");
    expect(error.message).toContain("is not a pinned one");
  });

  test("only proofs signed by a pinned key are accepted", async () => {
    notary.state.answer = signed(notary.state.announced);
    expect((await refusal(client.attest("mpc", "s1", request))).code).toBe("notary_untrusted");
    notary.state.answer = signed(pinned);
    expect((await client.attest("mpc", "s1", request)).body.notary.publicKey).toBe(pinned.publicKeyPem);
  });
});
