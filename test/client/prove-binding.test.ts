/**
 * prove() against a dishonest prover over real HTTP: the prover relays the answer, then delivers a proof that a
 * trusted notary key did sign, but of another mode, of another request, or hiding the request. prove() must refuse
 * each, because the prover and the link to it are not trusted to hand over the proof of this call.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { TlsproofError, prove } from "../../src/client/index.ts";
import type { ProofBody } from "../../src/proof/format.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { HIDDEN_REQUEST_LIMIT } from "../../src/proof/verify.ts";
import { REQUEST, RESPONSE, directionHiding, hiddenRequestBody, sampleBody } from "../proof/fixtures.ts";

const notaryKey = generateKey("secp256k1");
const URL_ASKED = "https://api.example.com/v1/balance";

/** How the dishonest prover changes the honest proof of a call before signing it with the trusted key. */
let lie: (body: ProofBody) => ProofBody = (body) => body;

/** A prover that answers /proxy with the fixture's answer and streams a proof of the fixture's exchange, as `lie` has it. */
function dishonestProver() {
  const proofs = new Map<string, (text: string) => void>();
  const waiting = (requestId: string) => new Promise<string>((resolve) => proofs.set(requestId, resolve));
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const { pathname } = new URL(request.url);
      const streamed = /^\/proof\/(.+)$/.exec(pathname)?.[1];
      if (streamed) {
        const proof = waiting(streamed);
        const body = new ReadableStream({
          async start(controller) {
            // A comment first, so the stream counts as open before /proxy is called.
            controller.enqueue(new TextEncoder().encode(": open\n\n"));
            controller.enqueue(new TextEncoder().encode(`data: ${notaryKey.publicKeyPem.replaceAll("\n", "\\n")}|${await proof}\n\n`));
            controller.close();
          },
        });
        return new Response(body, { headers: { "content-type": "text/event-stream" } });
      }
      if (pathname === "/proxy") {
        const requestId = request.headers.get("t-request-id") ?? "";
        const body = lie({ ...sampleBody(notaryKey), requestId });
        proofs.get(requestId)?.(JSON.stringify(signProof(body, notaryKey)));
        const answer = RESPONSE.slice(RESPONSE.indexOf("\r\n\r\n") + 4).replace("tok_SECRET_abc123", "tok_OTHER_xyz9999");
        return new Response(answer, { headers: { "content-type": "application/json", "t-proof-id": requestId } });
      }
      return new Response("not found", { status: 404 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

const prover = dishonestProver();
afterAll(() => prover.stop());

const call = (options: Partial<Parameters<typeof prove>[0]> = {}) =>
  prove({ prover: prover.url, notaryKeys: notaryKey.publicKeyPem, url: URL_ASKED, timeoutMs: 10_000, ...options }).catch((error: unknown) => error);

/** The sample's request with `from` replaced by `to`, the API key still hidden. */
function withRequest(from: string, to: string): (body: ProofBody) => ProofBody {
  return (body) => {
    const request = REQUEST.replace(from, to);
    const apiKeyAt = Buffer.from(request).indexOf("sk_live_");
    const hidden = { start: apiKeyAt, end: apiKeyAt + "sk_live_9f8e7d6c5b4a".length };
    return { ...body, transcript: { ...body.transcript, sent: directionHiding(request, [hidden]) }, redactions: [{ pattern: "req:header:authorization", matched: true, spans: [{ direction: "sent", ...hidden }] }] };
  };
}

describe("prove() binds the proof to this call", () => {
  test("an honest proof of this call is returned", async () => {
    lie = (body) => body;
    const result = await call();
    expect(result).not.toBeInstanceOf(Error);
  });

  test("a proof of another mode than the one asked for is proof_mismatch", async () => {
    lie = (body) => body;
    const error = await call({ mode: "proxy", reveal: "request" });
    expect(error).toBeInstanceOf(TlsproofError);
    expect(error).toMatchObject({ code: "proof_mismatch", message: "the proof is of mode mpc, expected proxy" });
  });

  test.each([
    ["another path", "/v1/balance", "/v1/balanze", 'the proof\'s request target differs from the expected "/v1/balance" at byte 9'],
    ["another method", "GET /v1", "PUT /v1", 'the proof\'s request method is "PUT", not the expected GET'],
    ["another Host of the same server", "Host: api.example.com", "Host: api.example.com:8443", "the proof's request does not show the one Host api.example.com expected"],
  ])("a revealed request with %s is proof_mismatch", async (_, from, to, message) => {
    lie = withRequest(from, to);
    expect(await call()).toMatchObject({ code: "proof_mismatch", message });
  });

  test("a proof whose request is hidden is proof_mismatch saying what it does not prove and how to accept it; accepted with allowHiddenRequest", async () => {
    lie = (body) => ({ ...hiddenRequestBody(notaryKey), requestId: body.requestId });
    expect(await call()).toMatchObject({
      code: "proof_mismatch",
      message: `the proof's ${HIDDEN_REQUEST_LIMIT}; pass allowHiddenRequest: true to accept such a proof, or prove the request: leave reveal unset on a TLS 1.3 target (its secrets kept from the notary), or reveal: "request" (the notary sees it all)`,
    });
    const accepted = await call({ mode: "proxy", allowHiddenRequest: true });
    expect(accepted).not.toBeInstanceOf(Error);
    expect((accepted as Awaited<ReturnType<typeof prove>>).proof.body.request).toBe("hidden");
  });
});
