/**
 * The notary and `cli verify` apply the same rules to a redaction list: whatever the notary would sign,
 * verify accepts, and what verify rejects, the notary refuses to sign, with the same reason.
 */
import { describe, expect, test } from "bun:test";
import type { VerifierOutput } from "tlsn-wasm";
import { mpcTranscript } from "../../src/notary/mpc/transcript.ts";
import type { VerifiedTranscript } from "../../src/notary/verified-transcript.ts";
import { AppError } from "../../src/core/errors.ts";
import { buildProofBody } from "../../src/notary/attest.ts";
import { checkedFieldsProblem, isHiddenRequest, MAX_PROOF_ENTRIES } from "../../src/proof/check.ts";
import type { DeclaredRedaction } from "../../src/proof/format.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import { complementRanges } from "../../src/core/ranges.ts";
import { legacySampleBody, REQUEST as FIXTURE_REQUEST, RESPONSE, SECRET_API_KEY, SECRET_TOKEN, sampleBody, spanOf } from "./fixtures.ts";

/** The fixtures' request as an honest MPC prover can prove it: the hidden credential's header ends the head (request-rule.ts). */
const REQUEST = FIXTURE_REQUEST.replace(/(Authorization: [^\r]*\r\n)(Accept: [^\r]*\r\n)/, "$2$1");

const key = generateKey("secp256k1");
const apiKey = spanOf(REQUEST, SECRET_API_KEY);
const token = spanOf(RESPONSE, SECRET_TOKEN);

/**
 * What the notary's Verifier reports when the prover hid the API key and the token (or, given, other request
 * bytes of another request text), as the MPC session's verified transcript.
 */
function verifierOutput(request = REQUEST, hiddenSent: { start: number; end: number }[] = [apiKey]): VerifiedTranscript {
  return mpcTranscript({ output: engineOutput(request, hiddenSent), activeSince: 1_717_171_717_000, verifiedAt: 1_717_171_719_000 }, 4096);
}

function engineOutput(request: string, hiddenSent: { start: number; end: number }[]): VerifierOutput {
  const direction = (text: string, hidden: { start: number; end: number }[]) => {
    const bytes = [...Buffer.from(text)];
    const authed = complementRanges(bytes.length, hidden);
    return { bytes: bytes.map((b, i) => (authed.some((r) => r.start <= i && i < r.end) ? b : 0)), authed };
  };
  const sent = direction(request, hiddenSent);
  const recv = direction(RESPONSE, [token]);
  return {
    server_name: "api.example.com",
    connection_info: { time: 1_717_171_717, version: "V1_2", transcript_length: { sent: Buffer.byteLength(request), recv: RESPONSE.length } },
    transcript: { sent: sent.bytes, sent_authed: sent.authed, recv: recv.bytes, recv_authed: recv.authed },
  };
}

const context = { publicKeyPem: key.publicKeyPem, algorithm: key.algorithm, testTrustAnchor: false, notaryVersion: "0.1.0", embedded: false };
const requestId = "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01";

function notaryRefusal(redactions: DeclaredRedaction[]): string | null {
  try {
    buildProofBody(verifierOutput(), { requestId, redactions }, context);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("invalid_body");
    return (error as AppError).message.replace("declared redactions refused: ", "");
  }
}

/** verify's answer on the same body, signed anyway (as a careless or malicious notary would). */
function verifyRejection(redactions: DeclaredRedaction[]): string | null {
  const body = buildProofBody(verifierOutput(), { requestId, redactions: [] }, context);
  try {
    verifyProof(signProof({ ...body, redactions }, key), key.publicKeyPem);
    return null;
  } catch (error) {
    expect((error as AppError).code).toBe("proof_invalid");
    return (error as AppError).message.replace("invalid proof: ", "");
  }
}

const sent = (start: number, end: number) => ({ direction: "sent" as const, start, end });
/** The span from `from` (inclusive) to just before `to`, by their first occurrences. */
const between = (text: string, from: string, to: string) => ({ start: text.indexOf(from), end: text.indexOf(to, text.indexOf(from)) });
const recv = (start: number, end: number) => ({ direction: "recv" as const, start, end });

describe("one set of rules for signing and verifying", () => {
  const broken: [string, DeclaredRedaction[], RegExp][] = [
    ["a reversed span", [{ pattern: "p", matched: true, spans: [sent(5000, 3)] }], /redactions\[0\]\.spans\[0\]: empty or reversed span 5000\.\.3/],
    ["an empty span", [{ pattern: "p", matched: true, spans: [sent(apiKey.start, apiKey.start)] }], /empty or reversed/],
    ["matched without spans", [{ pattern: "p", matched: true, spans: [] }], /redactions\[0\]: "matched" is true but it has 0 spans/],
    ["spans without matched", [{ pattern: "p", matched: false, spans: [sent(apiKey.start, apiKey.end)] }], /"matched" is false/],
    ["a span beyond the transcript", [{ pattern: "p", matched: true, spans: [recv(token.start, RESPONSE.length + 1)] }], /exceeds the recv length/],
    ["a span over revealed bytes", [{ pattern: "p", matched: true, spans: [sent(0, 4)] }], /declared hidden, but sent bytes 0\.\.4 are revealed/],
    [
      "spans out of order",
      [{ pattern: "p", matched: true, spans: [recv(token.start, token.end), sent(apiKey.start, apiKey.end)] }],
      /spans\[1\]: spans not in order/,
    ],
    [
      "touching spans",
      [{ pattern: "p", matched: true, spans: [sent(apiKey.start, apiKey.start + 2), sent(apiKey.start + 2, apiKey.end)] }],
      /spans not in order/,
    ],
    [
      "more entries than a proof may hold",
      Array.from({ length: MAX_PROOF_ENTRIES }, () => ({ pattern: "p", matched: false, spans: [] })),
      /^body lists 65540 revealed ranges, redactions and spans together; a proof holds at most 65536 \(MAX_PROOF_ENTRIES\)$/,
    ],
  ];
  for (const [name, redactions, reason] of broken) {
    test(`refused by the notary and rejected by verify, for the same reason: ${name}`, () => {
      const refusal = notaryRefusal(redactions);
      expect(refusal).toMatch(reason);
      expect(verifyRejection(redactions)).toBe(refusal);
    });
  }

  test("a consistent list is signed and verifies", () => {
    const redactions: DeclaredRedaction[] = [
      { pattern: "req:header:authorization", matched: true, spans: [sent(apiKey.start, apiKey.end)] },
      { pattern: "res:body:token", matched: true, spans: [recv(token.start, token.end)] },
      { pattern: "res:header:x-absent", matched: false, spans: [] },
    ];
    expect(notaryRefusal(redactions)).toBeNull();
    const body = buildProofBody(verifierOutput(), { requestId, redactions }, context);
    expect(verifyProof(signProof(body, key), key.publicKeyPem).body.redactions).toEqual(redactions);
  });
});

describe("the notary signs only a request that shows it asked the server it verified", () => {
  const refusal = (request: string, hidden: { start: number; end: number }[]): string | null => {
    try {
      buildProofBody(verifierOutput(request, hidden), { requestId, redactions: [] }, context);
      return null;
    } catch (error) {
      expect((error as AppError).code).toBe("invalid_body");
      return (error as AppError).message;
    }
  };
  const withHost = (host: string) => REQUEST.replace("Host: api.example.com", `Host: ${host}`);

  test("the Host value hidden, or the whole Host line, is refused", () => {
    expect(refusal(REQUEST, [spanOf(REQUEST, "api.example.com")])).toBe("request refused: the request's Host header value is hidden");
    expect(refusal(REQUEST, [spanOf(REQUEST, "Host: api.example.com")])).toBe("request refused: the request must reveal exactly one Host header (found 0)");
  });

  test("a Host naming another server, or two Host headers, is refused", () => {
    expect(refusal(withHost("evil.example"), [])).toBe('request refused: the request\'s Host header names "evil.example", not the verified server api.example.com');
    const twice = REQUEST.replace("Host: api.example.com\r\n", "Host: api.example.com\r\nHost: evil.example\r\n");
    expect(refusal(twice, [])).toBe("request refused: the request must reveal exactly one Host header (found 2)");
  });

  test("a hidden method, an absolute-form target or a hidden version is refused", () => {
    expect(refusal(REQUEST, [spanOf(REQUEST, "GET")])).toContain("the request line's method and the start of its target must be revealed");
    expect(refusal(REQUEST.replace("GET /v1", "GET https://evil.example/v1"), [])).toContain("an origin-form target");
    expect(refusal(REQUEST, [spanOf(REQUEST, "HTTP/1.1")])).toBe("request refused: the request line's HTTP version must be revealed");
  });

  test("a port and another letter case are fine", () => {
    expect(refusal(withHost("API.Example.com:8443"), [])).toBeNull();
  });
});

describe("MPC mode's request rule: no revealed byte after a hidden one, on what the notary's Verifier verified", () => {
  /** The notary's refusal (code and message) of `request` with `hidden` spans, or null when it signs. */
  const refusal = (request: string, hidden: { start: number; end: number }[]): { code: string; message: string } | null => {
    try {
      buildProofBody(verifierOutput(request, hidden), { requestId, redactions: [{ pattern: "req:header:x", matched: true, spans: hidden.map((h) => sent(h.start, h.end)) }] }, context);
      return null;
    } catch (error) {
      return { code: (error as AppError).code, message: (error as AppError).message };
    }
  };
  const post = (head: string, json: string) => `POST /transfer HTTP/1.1\r\nHost: api.example.com\r\n${head}Content-Length: ${json.length}\r\n\r\n${json}`;

  test("the body swap: a hidden credential that ends the head and sends another body, a revealed body after it", () => {
    const swap = `POST /transfer HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 25\r\nAuthorization: Bearer tok\r\n\r\n{"to":"eve","amount":999}POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 100\r\nX-Pad: \r\n\r\n{"to":"bob","amount":100}`;
    const hidden = between(swap, "Bearer tok", "\r\n\r\n{\"to\":\"bob");
    expect(refusal(swap, [hidden])).toMatchObject({ code: "request_unproven", message: expect.stringContaining("after a hidden span") });
  });

  test("the header swap: a revealed header after a hidden credential", () => {
    const swap = "GET /account HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer tok-123\r\nX-Account: 42\r\n\r\n";
    expect(refusal(swap, [spanOf(swap, "Bearer tok-123")])).toMatchObject({ code: "request_unproven", message: expect.stringContaining("after a hidden span") });
  });

  test("the JSON duplicate member: a hidden value inside a revealed body", () => {
    const json = '{"amount":1,"to":"mallory","to":"bob"}';
    expect(refusal(post("", json), [spanOf(post("", json), '1,"to":"mallory"')])).toMatchObject({ code: "request_unproven", message: expect.stringContaining("a body holding a hidden value is hidden whole") });
  });

  test("a hidden path segment or query value: the request line must come before any hidden byte", () => {
    expect(refusal(REQUEST, [spanOf(REQUEST, "balance")])).toMatchObject({ code: "request_unproven", message: expect.stringContaining("before the end of the Host header") });
  });

  test("a Host line after a hidden value: the hidden bytes may hold a Host of their own", () => {
    const hostLast = "GET /v1/balance HTTP/1.1\r\nAccept: */*\r\nAuthorization: Bearer tok-123\r\nHost: api.example.com\r\n\r\n";
    expect(refusal(hostLast, [spanOf(hostLast, "Bearer tok-123")])).toMatchObject({ code: "request_unproven", message: expect.stringContaining("before the end of the Host header") });
  });

  test("the credential's header last: signed, every revealed header before it proven", () => {
    expect(refusal(REQUEST, [apiKey])).toBeNull();
  });
});

describe("a mode this process does not know has no facts: its notary neither dials nor leaves the request unseen", () => {
  // verifyProof refuses such a proof before these rules run; a notary applies them to the modes it registered.
  const mode = "unregistered-mode";
  const body = { ...sampleBody(key), mode };
  const noRequestByte = { ...body.transcript, sent: { length: body.transcript.sent.length, revealed: [] } };

  test("a port is refused, its absence is fine", () => {
    expect(checkedFieldsProblem({ ...body, serverPort: 443 })).toBe(`body.serverPort: a notary in ${mode} mode never dials the server`);
    expect(checkedFieldsProblem(body)).toBeNull();
  });

  test("a hidden request is refused, and an older proof revealing no request byte did not hide it", () => {
    expect(checkedFieldsProblem({ ...body, request: "hidden", transcript: noRequestByte })).toBe(`body.request: a notary in ${mode} mode never leaves the request unseen`);
    expect(isHiddenRequest({ ...legacySampleBody(key), mode, transcript: noRequestByte })).toBe(false);
  });
});
