/**
 * The one proof-body builder on both modes' verified transcripts: every rule holds whatever the mode, and what the
 * builder signs says how the notary took part and what it saw.
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { buildProofBody, transcriptDirection } from "../../src/notary/attest.ts";
import type { VerifiedTranscript } from "../../src/notary/verified-transcript.ts";
import { generateKey } from "../../src/proof/keys.ts";
import type { AttestationRequest } from "../../src/protocol/notary.ts";
import { REQUEST, RESPONSE, SECRET_API_KEY, SECRET_TOKEN, spanOf } from "../proof/fixtures.ts";
import { mpcTranscript, proxyTranscript, whole } from "./support/transcripts.ts";
import { keccak_256 } from "@noble/hashes/sha3.js";

const key = generateKey("secp256k1");
const context = { publicKeyPem: key.publicKeyPem, algorithm: key.algorithm, testTrustAnchor: false, notaryVersion: "0.1.0", embedded: true };
const declared: AttestationRequest = { requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01", redactions: [] };

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
    // No member at all: the canonical JSON a notary signs refuses an undefined one, so a member set to undefined would break signing.
    expect(Object.hasOwn(body, "serverPort")).toBe(false);
    expect(Object.entries(body).filter(([, value]) => value === undefined)).toEqual([]);
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

describe("what the builder signs", () => {
  test("the body holds the declaration, the notary's context and the transcript's facts, dated now", () => {
    const redactions = [{ pattern: "res:body:token", matched: true, spans: [{ direction: "recv" as const, ...spanOf(RESPONSE, SECRET_TOKEN) }] }];
    const before = Date.now();
    const body = buildProofBody(proxyTranscript(), { ...declared, redactions }, { ...context, testTrustAnchor: true, embedded: false });
    expect(body.notarizedAt).toBeGreaterThanOrEqual(before);
    expect(body.notarizedAt).toBeLessThanOrEqual(Date.now());
    const token = spanOf(RESPONSE, SECRET_TOKEN);
    const base64 = (text: string) => Buffer.from(text).toString("base64");
    expect(body).toEqual({
      requestId: declared.requestId,
      notary: { publicKey: key.publicKeyPem, algorithm: key.algorithm, embedded: false },
      mode: "proxy",
      serverName: "api.example.com",
      serverPort: 443,
      connectionTime: 1_717_171_717,
      responseTime: 1_717_171_718,
      responseFraming: "content-length",
      request: "hidden",
      tlsVersion: "TLS1.3",
      notarizedAt: body.notarizedAt,
      transcript: {
        sent: { length: REQUEST.length, revealed: [] },
        recv: {
          length: RESPONSE.length,
          revealed: [
            { start: 0, end: token.start, data: base64(RESPONSE.slice(0, token.start)) },
            { start: token.end, end: RESPONSE.length, data: base64(RESPONSE.slice(token.end)) },
          ],
        },
      },
      redactions,
      testTrustAnchor: true,
      notaryVersion: "0.1.0",
      claims: [],
    });
  });

  test("claims asked are judged on what the notary saw and signed with the recipient, lower-cased", () => {
    const asked = { ...declared, claims: ["res:body:balance>1000", "res:body:currency"], recipient: "0x00000000000000000000000000000000000000AB" };
    const body = buildProofBody(proxyTranscript(), asked, context);
    expect(body.claims).toEqual([
      { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true },
      { kind: "value", subject: "res:body:currency", value: '"EUR"' },
    ]);
    expect(body.recipient).toBe("0x00000000000000000000000000000000000000ab");
  });

  test("claims over what the declared redactions hide: compared and committed with the salt, never stated; named by position", () => {
    const balance = spanOf(RESPONSE, "1234");
    const hiding = { ...declared, redactions: [{ pattern: "res:body:balance", matched: true, spans: [{ direction: "recv" as const, ...balance }] }] };
    const salt = `0x${"0f".repeat(32)}`;
    const body = buildProofBody(proxyTranscript(), { ...hiding, claims: [" res:body:balance>1000 ", "commit:res:body:balance"], claimSalt: salt }, context);
    const commitment = `0x${Buffer.from(keccak_256(Buffer.concat([Buffer.from(salt.slice(2), "hex"), Buffer.from("1234")]))).toString("hex")}`;
    expect(body.claims).toEqual([
      { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true },
      { kind: "commitment", subject: "res:body:balance", commitment },
    ]);
    expect(refusal(proxyTranscript(), { ...hiding, claims: ["res:body:currency", "res:body:balance"] })).toEqual({
      code: "claim_unsupported",
      message: "claim 2 (res:body:balance): the proof hides this value: claim a comparison or commit: instead",
    });
    // Entries are read as sent, spaces around them aside; a malformed one is named by its place.
    expect(buildProofBody(proxyTranscript(), { ...declared, claims: [" res:body:currency "] }, context).claims).toEqual([{ kind: "value", subject: "res:body:currency", value: '"EUR"' }]);
    expect(refusal(proxyTranscript(), { ...declared, claims: ["res:status", "res:body:a>"] })).toEqual({ code: "invalid_claim", message: "T-CLAIM entry 2: the comparison has no value to compare with" });
    // Part of a value hidden is the value hidden.
    const part = { ...declared, redactions: [{ pattern: "search:*", matched: true, spans: [{ direction: "recv" as const, start: balance.start, end: balance.start + 1 }] }] };
    expect(refusal(proxyTranscript(), { ...part, claims: ["res:body:balance"] }).code).toBe("claim_unsupported");
  });

  test("a server that chose another protocol than HTTP/1.1 by ALPN is refused; none chosen, or unseen (MPC), is fine", () => {
    expect(refusal(proxyTranscript({ alpn: "h2" }))).toEqual({
      code: "alpn_refused",
      message: 'the server chose the application protocol "h2" by ALPN; a notary signs HTTP/1.1 answers only',
    });
    expect(refusal(proxyTranscript({ alpn: "x".repeat(40) })).message).toBe(
      `the server chose the application protocol "${"x".repeat(32)}" by ALPN; a notary signs HTTP/1.1 answers only`,
    );
    expect(buildProofBody(proxyTranscript({ alpn: null }), declared, context).mode).toBe("proxy");
    expect(buildProofBody(mpcTranscript({ alpn: undefined }), declared, context).mode).toBe("mpc");
  });

  test("revealed ranges are sorted, and touching or overlapping ones merged, as the format wants", () => {
    const bytes = new TextEncoder().encode("0123456789abcdef");
    const data = (text: string) => Buffer.from(text).toString("base64");
    expect(
      transcriptDirection(bytes, [{ start: 8, end: 10 }, { start: 0, end: 2 }, { start: 2, end: 4 }, { start: 9, end: 12 }, { start: 10, end: 11 }, { start: 14, end: 16 }], 16),
    ).toEqual({
      length: 16,
      revealed: [
        { start: 0, end: 4, data: data("0123") },
        { start: 8, end: 12, data: data("89ab") },
        { start: 14, end: 16, data: data("ef") },
      ],
    });
    expect(transcriptDirection(bytes, [], 16)).toEqual({ length: 16, revealed: [] });
  });
});

describe("a revealed request", () => {
  const revealed = (request: string, change: Partial<VerifiedTranscript> = {}) => proxyTranscript({ sent: whole(request), requestRule: { maxHiddenSpanBytes: 64 }, ...change });
  const hidingKey = (request: string) => ({
    ...declared,
    redactions: [{ pattern: "req:header:authorization", matched: true, spans: [{ direction: "sent" as const, ...spanOf(request, SECRET_API_KEY) }] }],
  });

  test("is signed as revealed, less the spans the prover declared hidden", () => {
    const body = buildProofBody(revealed(REQUEST), hidingKey(REQUEST), context);
    expect(body.request).toBe("revealed");
    const shown = body.transcript.sent.revealed.map((range) => Buffer.from(range.data, "base64").toString()).join("");
    expect(shown).toBe(REQUEST.replace(SECRET_API_KEY, ""));
  });

  test("must name the verified server in its one Host, and show its request line", () => {
    expect(refusal(revealed(REQUEST.replace("api.example.com", "evil.example")), hidingKey(REQUEST))).toEqual({
      code: "invalid_body",
      message: 'request refused: the request\'s Host header names "evil.example", not the verified server api.example.com',
    });
    const method = { ...declared, redactions: [{ pattern: "req:x", matched: true, spans: [{ direction: "sent" as const, start: 0, end: 3 }] }] };
    expect(refusal(revealed(REQUEST), method)).toEqual({
      code: "invalid_body",
      message: "request refused: the request line's method and the start of its target must be revealed (an origin-form target, /…)",
    });
  });

  test("is one request: a pipelined second one is refused", () => {
    expect(refusal(revealed(REQUEST + REQUEST), hidingKey(REQUEST)).code).toBe("answer_not_single");
  });

  /** REQUEST with its Authorization last, its key in a hidden epoch: as the honest prover writes it. */
  const LAST = "GET /v1/balance HTTP/1.1\r\nHost: api.example.com\r\nAccept: */*\r\nAuthorization: Bearer " + SECRET_API_KEY + "\r\n\r\n";
  const inEpochs = (request: string, change: Partial<VerifiedTranscript> = {}) => {
    const secret = spanOf(request, SECRET_API_KEY);
    const bytes = new TextEncoder().encode(request);
    bytes.fill(0, secret.start, secret.end);
    return revealed(request, { sent: { length: bytes.length, bytes, seen: [{ start: 0, end: secret.start }, { start: secret.end, end: bytes.length }] }, ...change });
  };

  test("keeps the mode's request rule on what the notary saw: a hidden epoch longer than the notary allows is refused (422)", () => {
    const refused = refusal(inEpochs(LAST, { requestRule: { maxHiddenSpanBytes: SECRET_API_KEY.length - 1 } }), hidingKey(LAST));
    expect(refused.code).toBe("request_unproven");
    expect(refused.message).toStartWith("request refused: ");
    expect(buildProofBody(inEpochs(LAST, { requestRule: { maxHiddenSpanBytes: SECRET_API_KEY.length } }), hidingKey(LAST), context).request).toBe("revealed");
    // A span the notary saw and leaves out of the proof is no hidden epoch: the notary checked it itself.
    expect(buildProofBody(revealed(REQUEST, { requestRule: { maxHiddenSpanBytes: 1 } }), hidingKey(REQUEST), context).request).toBe("revealed");
  });

  test("a request the notary saw whole keeps the Host rule on every byte: a second Host the proof would hide is refused", () => {
    const twoHosts = REQUEST.replace("Host: api.example.com\r\n", "Host: api.example.com\r\nHost: evil.example\r\n");
    const hidingSecondHost = { ...declared, redactions: [{ pattern: "req:x", matched: true, spans: [{ direction: "sent" as const, ...spanOf(twoHosts, "Host: evil.example") }] }] };
    expect(refusal(revealed(twoHosts), hidingSecondHost)).toEqual({ code: "invalid_body", message: "request refused: the request must reveal exactly one Host header (found 2)" });
    // Hidden from the notary (an epoch), the same bytes are the request rule's to judge, not this check's.
    expect(buildProofBody(revealed(REQUEST), hidingKey(REQUEST), context).request).toBe("revealed");
  });

  test("a header revealed after a hidden epoch is refused: the hidden bytes may have ended the head (422)", () => {
    expect(refusal(inEpochs(REQUEST), hidingKey(REQUEST))).toMatchObject({ code: "request_unproven", message: expect.stringContaining("after a hidden span") });
  });

  test("its method frames the answer: the answer to HEAD has no body, whatever its Content-Length says", () => {
    const head = REQUEST.replace("GET", "HEAD");
    const answer = RESPONSE.slice(0, RESPONSE.indexOf("\r\n\r\n") + 4);
    expect(buildProofBody(revealed(head, { recv: whole(answer) }), hidingKey(head), context).responseFraming).toBe("no-body");
    expect(refusal(revealed(REQUEST, { recv: whole(answer) }), hidingKey(REQUEST)).code).toBe("answer_incomplete");
  });

  test("proxy mode: bytes hidden from the notary (a hidden epoch) must be declared hidden, and are not shown", () => {
    const secret = spanOf(LAST, SECRET_API_KEY);
    const bytes = new TextEncoder().encode(LAST);
    const epoch = inEpochs(LAST);
    expect(refusal(epoch)).toEqual({
      code: "invalid_body",
      message: `declared redactions refused: the request's bytes ${secret.start}..${secret.end} were hidden from the notary, but no declared span hides them`,
    });
    const body = buildProofBody(epoch, hidingKey(LAST), context);
    expect(body.transcript.sent.revealed.map((range) => [range.start, range.end])).toEqual([
      [0, secret.start],
      [secret.end, bytes.length],
    ]);
  });

  test("MPC mode: a request naming another Host is refused by the Host rule alone, with no request rule set", () => {
    expect(refusal(mpcTranscript({ sent: whole(REQUEST.replace("api.example.com", "evil.example")) }))).toEqual({
      code: "invalid_body",
      message: 'request refused: the request\'s Host header names "evil.example", not the verified server api.example.com',
    });
  });

  test("a request hidden whole in a mode nobody registered is refused, not signed", () => {
    expect(refusal(proxyTranscript({ mode: "unregistered-mode" }))).toEqual({ code: "invalid_body", message: "request refused: the prover revealed no byte of its request" });
  });

  test("MPC mode: the proof shows what the notary saw, and the prover's unseen bytes need no span of the notary's", () => {
    const secret = spanOf(REQUEST, SECRET_API_KEY);
    const bytes = new TextEncoder().encode(REQUEST);
    bytes.fill(0, secret.start, secret.end);
    const sent = { length: bytes.length, bytes, seen: [{ start: 0, end: secret.start }, { start: secret.end, end: bytes.length }] };
    // The prover kept them from the notary itself: declared or not, they are not in the proof.
    expect(buildProofBody(mpcTranscript({ sent }), declared, context).transcript.sent.revealed.map((range) => [range.start, range.end])).toEqual([
      [0, secret.start],
      [secret.end, bytes.length],
    ]);
    const body = buildProofBody(mpcTranscript({ sent }), hidingKey(REQUEST), context);
    expect(body.request).toBe("revealed");
    expect(body.transcript.sent.revealed.map((range) => [range.start, range.end])).toEqual([
      [0, secret.start],
      [secret.end, bytes.length],
    ]);
  });
});
