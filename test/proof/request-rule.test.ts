import { expect, test } from "bun:test";
import { bytesToBase64 } from "../../src/core/bytes.ts";
import { complementRanges } from "../../src/core/ranges.ts";
import type { ByteRange } from "../../src/core/transcript.ts";
import type { TranscriptDirection } from "../../src/proof/format.ts";
import { revealedRequestProblem } from "../../src/proof/request-rule.ts";

/** The rule a revealed request with hidden spans keeps, byte for byte. */

const SERVER = "api.example.com";
const MAX = 64;
const encoder = new TextEncoder();

/** The request as a proof shows it with `values` hidden (each its first occurrence, or a range). */
function direction(request: string, values: (string | ByteRange)[]): TranscriptDirection {
  const bytes = encoder.encode(request);
  const hidden = values.map((value) => (typeof value === "string" ? { start: request.indexOf(value), end: request.indexOf(value) + value.length } : value));
  for (const range of hidden) if (range.start < 0) throw new Error("no such value");
  const revealed = complementRanges(bytes.length, hidden).map((r) => ({ ...r, data: bytesToBase64(bytes.subarray(r.start, r.end)) }));
  return { length: bytes.length, revealed };
}

const problem = (request: string, values: (string | ByteRange)[] = [], max = MAX) => revealedRequestProblem(direction(request, values), SERVER, max);

const GET = `GET /account?user=42 HTTP/1.1\r\nHost: ${SERVER}\r\nAuthorization: Bearer tok-123456\r\nCookie: a=1; sid=xyz\r\nAccept: */*\r\n\r\n`;
const body = (json: string) => `POST /login HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`;
const form = (fields: string) => `POST /login HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Length: ${fields.length}\r\n\r\n${fields}`;

test("hidden header values, whole or in part, and hidden body values whose names are revealed, are accepted", () => {
  expect(problem(GET)).toBeNull();
  expect(problem(GET, ["Bearer tok-123456", "xyz"])).toBeNull();
  expect(problem(body('{"user":"ann","password":"hunter2"}'), ['"hunter2"'])).toBeNull();
  expect(problem(body('{"user":"ann","password":"hunter2"}'), ["hunter2"])).toBeNull();
  expect(problem(body('{"user": "ann", "pin": 1234 }'), ["1234"])).toBeNull();
  expect(problem(body('{"a":{"token":"t0k"}}'), ['"t0k"'])).toBeNull();
  expect(problem(form("user=ann&password=hunter2&x=1"), ["hunter2"])).toBeNull();
  expect(problem(form("password=hunter2"), ["hunter2"])).toBeNull();
});

test.each([
  ["the request line", GET, ["account?user=42"], /request line's method and the start of its target|starts before the end of the Host header/],
  ["the Host value", GET, [SERVER], /Host header value is hidden/],
  ["the line break after Host", GET, ["\r\nAuthorization"], /Host header value is hidden/],
  ["a header name", GET, ["Cookie"], /not inside a header value whose name is revealed/],
  ["a whole header line", GET, ["Cookie: a=1; sid=xyz"], /not inside a header value whose name is revealed/],
  ["the Content-Length", body('{"a":1}'), [{ start: body('{"a":1}').indexOf("7\r"), end: body('{"a":1}').indexOf("7\r") + 1 }], /Content-Length is hidden or not a number/],
  ["a JSON member name", body('{"user":"ann","password":"hunter2"}'), ['"password"'], /not a body value whose name is revealed/],
  ["a whole JSON member", body('{"user":"ann","password":"hunter2"}'), ['"password":"hunter2"'], /not a body value whose name is revealed/],
  ["the whole body", body('{"a":1}'), ['{"a":1}'], /not a body value whose name is revealed/],
  ["an array element", body('{"a":[1,2]}'), ["2"], /not a body value whose name is revealed/],
  ["a form field name", form("user=ann&password=hunter2"), ["password"], /not a body value whose name is revealed/],
  ["the blank line ending the head", GET, [{ start: GET.length - 4, end: GET.length - 2 }], /does not end with a revealed blank line/],
] as const)("a hidden span over %s is refused", (_name, request, values, message) => {
  expect(problem(request, [...values])).toMatch(message);
});

test("a second Host, its value hidden where the layout puts a hidden span, is refused", () => {
  const twoHosts = `GET / HTTP/1.1\r\nHost: ${SERVER}\r\nHost: evil.example\r\n\r\n`;
  expect(problem(twoHosts, ["evil.example"])).toBe("the request must reveal exactly one Host header (found 2)");
});

test("a Host other than the verified server's, or none", () => {
  expect(problem(GET.replace(SERVER, "other.example"))).toMatch(/names "other\.example", not the verified server/);
  expect(problem(`GET / HTTP/1.1\r\nAccept: */*\r\n\r\n`)).toMatch(/exactly one Host header \(found 0\)/);
});

test("a hidden span longer than the bound is refused; one as long is accepted (what a span holds, a line break and another header included, only its length bounds)", () => {
  const token = "x".repeat(MAX);
  const request = GET.replace("tok-123456", token);
  expect(problem(request, [token])).toBeNull();
  expect(problem(request, [`Bearer ${token}`])).toBe(`the hidden span at bytes ${request.indexOf("Bearer")}..${request.indexOf("Bearer") + 7 + MAX} is ${MAX + 7} bytes long; at most ${MAX} may be hidden in one span`);
});

test("one complete HTTP/1.1 request: no second request after it, a body as long as its Content-Length, no chunked body, HTTP/1.1", () => {
  expect(problem(GET + GET)).toMatch(/not one complete HTTP\/1\.1 request: its head and body make \d+ bytes, but \d+ were sent/);
  expect(problem(body('{"a":1}') + "x")).toMatch(/not one complete/);
  expect(problem(body('{"a":1}').slice(0, -1))).toMatch(/not one complete/);
  expect(problem(`POST / HTTP/1.1\r\nHost: ${SERVER}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`)).toMatch(/Transfer-Encoding/);
  expect(problem(GET.replace("HTTP/1.1", "HTTP/1.0"))).toBe("the request is not an HTTP/1.1 request");
  expect(problem(`POST / HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx`)).toMatch(/more than one Content-Length/);
});
