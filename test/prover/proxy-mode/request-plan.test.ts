/**
 * What proxy mode writes of a request and shows the notary, decided before anything is sent (src/prover/proxy-mode/
 * request-plan.ts): the hidden values as the redaction finds them in the request, and the refusals of what the proof
 * could not show.
 */
import { describe, expect, test } from "bun:test";
import type { ExchangeRequest } from "../../../src/core/exchange.ts";
import { AppError } from "../../../src/core/errors.ts";
import { planRequest } from "../../../src/prover/proxy-mode/request-plan.ts";
import { parseRedactions } from "../../../src/redaction/index.ts";

const TOKEN = "Bearer tok_plan_0123456789";
const request = (headers: [string, string][] = [], pathAndQuery = "/account?user=42", body?: unknown): ExchangeRequest => ({
  method: body === undefined ? "GET" : "POST",
  pathAndQuery,
  headers: [["host", "api.example.com"], ...headers, ["connection", "close"]],
  body,
});
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const plan = (exchange: ExchangeRequest, patterns = "", reveal?: "none" | "request", max = 4096) => planRequest(exchange, parseRedactions(patterns), reveal, max);

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("by default (TLS 1.3 epochs)", () => {
  test("headers with hidden values are written last, as one hidden block after every revealed header; the request line and Host revealed", () => {
    const planned = plan(request([["authorization", TOKEN], ["x-api-key", "key-abcdef"], ["accept", "*/*"]]), "req:header:x-api-key");
    expect(planned.reveal).toBe("epochs");
    expect(planned.parts.map((part) => [part.hidden, text(part.bytes)])).toEqual([
      [false, "GET /account?user=42 HTTP/1.1\r\nhost: api.example.com\r\naccept: */*\r\nconnection: close\r\nauthorization: "],
      [true, `${TOKEN}\r\nx-api-key: key-abcdef`],
      [false, "\r\n\r\n"],
    ]);
    expect(text(planned.request)).toBe(planned.parts.map((part) => text(part.bytes)).join(""));
    // Seventeen hidden headers are one block too: a key update before and after it, whatever their number.
    const many = Array.from({ length: 17 }, (_, i): [string, string] => [`x-k${i}`, `value-${i}-abcdef`]);
    expect(plan(request(many), many.map(([name]) => `req:header:${name}`).join(",")).parts.filter((part) => part.hidden)).toHaveLength(1);
  });

  test("a body holding a hidden value, or after a hidden header, is refused unless hidden whole; hidden whole it is one hidden part after the head", () => {
    const transfer = request([], "/transfer", { to: "bob", pin: "98127634" });
    expect(refusal(() => plan(transfer, "req:body:pin"))).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("it holds a hidden value") });
    expect(refusal(() => plan(request([["authorization", TOKEN]], "/transfer", { to: "bob" })))).toMatchObject({
      code: "invalid_redaction",
      message: expect.stringMatching(/it follows a hidden header value.*Hide the body whole \(T-REDACTED: req:body:, the proof shows its length\), or send T-PROXY-REVEAL: request/),
    });
    const whole = plan(request([["authorization", TOKEN]], "/transfer", { to: "bob", pin: "98127634" }), "req:body:");
    expect(whole.parts.map((part) => [part.hidden, text(part.bytes)])).toEqual([
      [false, "POST /transfer HTTP/1.1\r\nhost: api.example.com\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 29\r\nauthorization: "],
      [true, TOKEN],
      [false, "\r\n\r\n"],
      [true, '{"to":"bob","pin":"98127634"}'],
    ]);
    expect(plan(request()).parts).toEqual([{ bytes: plan(request()).request, hidden: false }]);
  });

  test("refused before anything is sent: a query value (before Host), a value over the bound", () => {
    expect(refusal(() => plan(request([], "/a?user=s3cret"), "res:query:user"))).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("before the end of its Host header") });
    // A parameter whose name says it holds a secret is hidden by default: refused naming the ways out, unless revealed.
    expect(refusal(() => plan(request([], "/a?key=s3cret"), ""))).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("reveal:res:query:key") });
    expect(plan(request([], "/a?key=s3cret"), "reveal:res:query:key").parts).toHaveLength(1);
    expect(refusal(() => plan(request([["authorization", TOKEN]]), "", undefined, 16))).toEqual({
      code: "invalid_redaction",
      message: `the request hides ${TOKEN.length} bytes in one value; proxy mode hides at most 16 (PROVER_PROXY_MAX_HIDDEN_SPAN, the notary's proxy.max_hidden_span): hidden bytes could hold anything, a second request included. Send T-PROXY-REVEAL: none (the request hidden whole) or use MPC mode`,
    });
  });
});

describe("T-PROXY-REVEAL", () => {
  test("none: the request in one part, shown to nobody; a pattern naming the request is refused", () => {
    const planned = plan(request([["authorization", TOKEN]]), "", "none");
    expect(planned).toMatchObject({ reveal: "none", parts: [{ hidden: false }] });
    expect(refusal(() => plan(request(), "req:header:authorization", "none"))).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("T-PROXY-REVEAL: none") });
  });

  test("request: one revealed part, the notary sees it all; what the proof could not hide is refused all the same", () => {
    const planned = plan(request([["authorization", TOKEN]]), "", "request");
    expect(planned).toMatchObject({ reveal: "request", parts: [{ hidden: false }] });
    expect(refusal(() => plan(request([], "/a?key=s3cret"), "res:query:key", "request"))).toMatchObject({ code: "invalid_redaction" });
    expect(refusal(() => plan(request([["authorization", TOKEN]]), "", "request", 16))).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("hides at most 16") });
  });
});
