import { expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { MAX_HIDDEN_PARTS, requestParts } from "../../src/http1/request-epochs.ts";
import { serializeRequest } from "../../src/http1/request.ts";
import { computeRedactions, parseRedactions } from "../../src/redaction/index.ts";

/** Cutting a serialized request into revealed and hidden parts, byte for byte. */

const encoder = new TextEncoder();
const text = (parts: ReturnType<typeof requestParts>) => parts.map((part) => [new TextDecoder().decode(part.bytes), part.hidden]);
const at = (request: string, value: string) => ({ start: request.indexOf(value), end: request.indexOf(value) + value.length });

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("not refused");
}

test("one hidden header value: the head before it, the value, the rest", () => {
  const request = "GET /account?user=42 HTTP/1.1\r\nhost: api.example.com\r\nauthorization: Bearer abc.def\r\naccept: */*\r\n\r\n";
  expect(text(requestParts(encoder.encode(request), [at(request, "Bearer abc.def")]))).toEqual([
    ["GET /account?user=42 HTTP/1.1\r\nhost: api.example.com\r\nauthorization: ", false],
    ["Bearer abc.def", true],
    ["\r\naccept: */*\r\n\r\n", false],
  ]);
});

test("the redactions of a real request: default-hidden credentials and a body value, in order; overlaps are one part", () => {
  const request = serializeRequest({
    method: "POST",
    pathAndQuery: "/login",
    headers: [["host", "api.example.com"], ["cookie", "sid=0123456789"], ["x-api-key", "key-987654321"], ["connection", "close"]],
    body: { user: "ann", password: "hunter22-secret" },
  });
  const { hidden } = computeRedactions({ sent: request, recv: new Uint8Array(0) }, parseRedactions("req:header:x-api-key, req:body:password"));
  expect(text(requestParts(request, [...hidden.sent, { start: hidden.sent[0]!.start + 2, end: hidden.sent[0]!.end + 1 }]))).toEqual([
    ["POST /login HTTP/1.1\r\nhost: api.example.com\r\ncookie: ", false],
    ["sid=0123456789\r", true],
    ["\nx-api-key: ", false],
    ["key-987654321", true],
    ['\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 43\r\n\r\n{"user":"ann","password":', false],
    ['"hunter22-secret"', true],
    ["}", false],
  ]);
});

test("a hidden value that ends the request ends the parts; no hidden range gives the request whole", () => {
  const request = "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nsecret";
  expect(text(requestParts(encoder.encode(request), [at(request, "secret")])).at(-1)).toEqual(["secret", true]);
  expect(text(requestParts(encoder.encode(request), []))).toEqual([[request, false]]);
});

test.each([
  ["a query value in the request line", "GET /a?key=s3cr3t-value HTTP/1.1\r\nHost: h\r\n\r\n", "s3cr3t-value"],
  ["the Host value", "GET /a HTTP/1.1\r\nHost: target.example\r\n\r\n", "target.example"],
  ["a header written before Host", "GET /a HTTP/1.1\r\nAuthorization: Bearer s3cr3t\r\nHost: h\r\n\r\n", "Bearer s3cr3t"],
  ["the line break ending Host", "GET /a HTTP/1.1\r\nHost: h\r\nX: 1\r\n\r\n", "\nX: 1"],
])("a hidden range over %s is refused, its value never in the message", (_name, request, value) => {
  const error = refusal(() => requestParts(encoder.encode(request), [at(request, value)]));
  expect(error.code).toBe("invalid_redaction");
  expect(error.message).toMatch(/hides bytes before the end of its Host header/);
  expect(error.message).not.toContain(value);
});

test("a request without Host, or with two, is refused", () => {
  const none = refusal(() => requestParts(encoder.encode("GET / HTTP/1.1\r\n\r\n"), []));
  expect(none.code).toBe("invalid_header");
  expect(none.message).toMatch(/exactly one Host header .* has 0/);
  expect(refusal(() => requestParts(encoder.encode("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nX: 1\r\n\r\n"), [{ start: 37, end: 38 }])).message).toMatch(/has 2/);
});

test(`more than ${MAX_HIDDEN_PARTS} hidden values are refused`, () => {
  const headers = Array.from({ length: MAX_HIDDEN_PARTS + 1 }, (_, i) => `x-${i}: v${i}\r\n`).join("");
  const request = `GET / HTTP/1.1\r\nHost: h\r\n${headers}\r\n`;
  const hidden = Array.from({ length: MAX_HIDDEN_PARTS + 1 }, (_, i) => at(request, `v${i}\r`)).map((r) => ({ ...r, end: r.end - 1 }));
  expect(requestParts(encoder.encode(request), hidden.slice(0, MAX_HIDDEN_PARTS)).filter((part) => part.hidden)).toHaveLength(MAX_HIDDEN_PARTS);
  expect(refusal(() => requestParts(encoder.encode(request), hidden)).message).toMatch(/hides 17 separate values; proxy mode on TLS 1\.3 proves at most 16/);
});
