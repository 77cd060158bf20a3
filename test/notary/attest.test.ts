/**
 * The one proof-body builder on both modes' verified transcripts: every rule holds whatever the mode, and what the
 * builder signs says how the notary took part and what it saw.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { buildProofBody } from "../../src/notary/attest.ts";
import type { SeenDirection, VerifiedTranscript } from "../../src/notary/verified-transcript.ts";
import { generateKey } from "../../src/proof/keys.ts";
import type { AttestationRequest } from "../../src/protocol/notary.ts";
import { REQUEST, RESPONSE, SECRET_TOKEN, spanOf } from "../proof/fixtures.ts";

const key = generateKey("secp256k1");
const context = { publicKeyPem: key.publicKeyPem, algorithm: key.algorithm, testTrustAnchor: false, notaryVersion: "0.1.0", embedded: true };
const declared: AttestationRequest = { requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01", redactions: [] };

const whole = (text: string): SeenDirection => {
  const bytes = new TextEncoder().encode(text);
  return { length: bytes.length, bytes, seen: [{ start: 0, end: bytes.length }] };
};

const proxyTranscript = (change: Partial<VerifiedTranscript> = {}): VerifiedTranscript => ({
  mode: "proxy",
  serverName: "api.example.com",
  serverPort: 443,
  tlsVersion: "TLS1.3",
  connectionTime: 1_717_171_717,
  responseTime: 1_717_171_718,
  sent: { length: REQUEST.length, bytes: null, seen: [] },
  recv: whole(RESPONSE),
  hiddenBy: "notary",
  connectionEnd: { closed: true },
  alpn: "http/1.1",
  ...change,
});

const mpcTranscript = (change: Partial<VerifiedTranscript> = {}): VerifiedTranscript =>
  proxyTranscript({ mode: "mpc", serverPort: undefined, alpn: undefined, sent: whole(REQUEST), hiddenBy: "prover", connectionEnd: { closed: false, why: "an MPC notary does not see how the connection ended" }, ...change });

function refusal(transcript: VerifiedTranscript, request: AttestationRequest = declared): { code: string; message: string } {
  try {
    buildProofBody(transcript, request, context);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return { code: (error as AppError).code, message: (error as AppError).message };
  }
  throw new Error("expected a refusal");
}

describe("one builder for both modes", () => {
  test("a proxy-mode body says proxy, the port, both times, the framing, a hidden request, and that the notary is embedded", () => {
    const body = buildProofBody(proxyTranscript(), declared, context);
    expect(body).toMatchObject({
      mode: "proxy",
      serverPort: 443,
      connectionTime: 1_717_171_717,
      responseTime: 1_717_171_718,
      responseFraming: "content-length",
      request: "hidden",
      notary: { embedded: true },
      transcript: { sent: { length: REQUEST.length, revealed: [] } },
    });
  });

  test("an MPC body says mpc and no port; its request is revealed", () => {
    const body = buildProofBody(mpcTranscript(), declared, context);
    expect(body).toMatchObject({ mode: "mpc", request: "revealed", responseFraming: "content-length", notary: { embedded: true } });
    expect(body.serverPort).toBeUndefined();
  });

  test("proxy mode hides what the prover declares; MPC mode refuses a declared span the prover revealed", () => {
    const token = { direction: "recv" as const, ...spanOf(RESPONSE, SECRET_TOKEN) };
    const request = { ...declared, redactions: [{ pattern: "res:body:token", matched: true, spans: [token] }] };
    const body = buildProofBody(proxyTranscript(), request, context);
    expect(Buffer.from(body.transcript.recv.revealed.map((range) => range.data).join(""), "base64").toString()).not.toContain(SECRET_TOKEN);
    expect(refusal(mpcTranscript(), request).message).toMatch(/^declared redactions refused: .* declared hidden, but recv bytes \d+\.\.\d+ are revealed$/);
  });

  test("MPC mode: a request the prover did not reveal at all is refused, not signed as hidden", () => {
    expect(refusal(mpcTranscript({ sent: { length: REQUEST.length, bytes: new Uint8Array(REQUEST.length), seen: [] } }))).toEqual({
      code: "invalid_body",
      message: "request refused: the prover revealed no byte of its request",
    });
  });

  test("MPC mode: an answer shorter than its framing, or framed by a connection end the notary cannot see, is refused", () => {
    expect(refusal(mpcTranscript({ recv: whole(RESPONSE.slice(0, -5)) })).code).toBe("answer_incomplete");
    const byClose = RESPONSE.replace(/Content-Length: \d+\r\n/, "");
    expect(refusal(mpcTranscript({ recv: whole(byClose) }))).toEqual({
      code: "answer_incomplete",
      message: "the answer is not one complete HTTP/1.1 answer: its body ends with the connection, but an MPC notary does not see how the connection ended",
    });
    expect(buildProofBody(proxyTranscript({ recv: whole(byClose) }), declared, context).responseFraming).toBe("close");
  });

  test("the hidden request: no declared span may name it", () => {
    const request = { ...declared, redactions: [{ pattern: "req:header:x", matched: true, spans: [{ direction: "sent" as const, start: 0, end: 3 }] }] };
    expect(refusal(proxyTranscript(), request)).toEqual({
      code: "invalid_body",
      message: "declared redactions refused: the request is hidden whole, so no span may name it",
    });
  });
});
