import { describe, expect, test } from "bun:test";
import { bytesToBase64 } from "../../src/base/bytes.ts";
import { complementRanges } from "../../src/core/ranges.ts";
import type { ByteRange } from "../../src/core/transcript.ts";
import type { TranscriptDirection } from "../../src/proof/format.ts";
import { requestHostProblem } from "../../src/proof/check.ts";
import { hidesHeaderValues, partlyRevealedDirection, revealedRequestProblem } from "../../src/proof/request-rule.ts";

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

const problem = (request: string, values: (string | ByteRange)[] = [], max = MAX) => revealedRequestProblem(direction(request, values), SERVER, { maxHiddenSpanBytes: max });

const GET = `GET /account?user=42 HTTP/1.1\r\nHost: ${SERVER}\r\nAccept: */*\r\nAuthorization: Bearer tok-123456\r\nCookie: a=1; sid=xyz\r\n\r\n`;
const body = (json: string, extra = "") => `POST /login HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n${extra}\r\n${json}`;
/** The span from `from` (inclusive) to just before `to`, by their first occurrences. */
const between = (request: string, from: string, to: string): ByteRange => ({ start: request.indexOf(from), end: request.indexOf(to, request.indexOf(from)) });

test("hidden header values last, each line's break and the blank line revealed, and a body hidden whole, are accepted", () => {
  expect(problem(GET)).toBeNull();
  // The last header's value; the last two values as one block; each of them with its line break between.
  expect(problem(GET, ["a=1; sid=xyz"])).toBeNull();
  expect(problem(GET, [between(GET, "Bearer", "\r\n\r\n")])).toBeNull();
  expect(problem(GET, ["Bearer tok-123456", "Cookie: a=1; sid=xyz"])).toBeNull();
  expect(problem(GET, ["tok-123456", "Cookie: a=1; sid=xyz"])).toBeNull();
  // A whole header line hidden, name and all.
  expect(problem(GET, [between(GET, "Authorization", "\r\n\r\n")])).toBeNull();
  // A body hidden whole, after revealed headers or after a hidden one.
  const post = body('{"user":"ann","password":"hunter2"}');
  expect(problem(post, ['{"user":"ann","password":"hunter2"}'])).toBeNull();
  const authorized = body('{"a":1}', "Authorization: Bearer t0k\r\n");
  expect(problem(authorized, ["Bearer t0k", '{"a":1}'])).toBeNull();
});

test.each([
  ["the request line", GET, ["account?user=42"], /request line's method and the start of its target|starts before the end of the Host header/],
  ["the Host value", GET, [SERVER], /Host header value is hidden/],
  ["the line break after Host", GET, ["\r\nAccept"], /Host header value is hidden/],
  ["a header name", GET, ["Cookie"], /reveals bytes \d+\.\.\d+ after a hidden span/],
  ["part of a header name", GET, ["ookie: a=1; sid=xyz"], /not a header value whose name is revealed, nor a whole header line/],
  ["the Content-Length", body('{"a":1}'), [{ start: body('{"a":1}').indexOf("7\r"), end: body('{"a":1}').indexOf("7\r") + 1 }], /Content-Length is hidden or not a number/],
  ["the blank line ending the head", GET, [{ start: GET.length - 4, end: GET.length - 2 }], /does not end with a revealed blank line/],
  ["a header value followed by a revealed header", GET, ["Bearer tok-123456"], /reveals bytes \d+\.\.\d+ after a hidden span/],
  ["a JSON body value, the rest of the body revealed", body('{"user":"ann","password":"hunter2"}'), ['"hunter2"'], /hides part of the body; a body holding a hidden value is hidden whole/],
  ["a header value followed by a revealed body", body('{"a":1}', "Authorization: Bearer t0k\r\n"), ["Bearer t0k"], /reveals bytes \d+\.\.\d+ after a hidden span/],
] as const)("a hidden span over %s is refused", (_name, request, values, message) => {
  expect(problem(request, [...values])).toMatch(message);
});

/**
 * The attacks a prover speaking the notary's protocol made the notary sign before this rule: each hides a blank line
 * and a first request inside a span, and reveals a second one after it that the server never answered.
 */
describe("what a server read cannot be swapped behind a hidden span", () => {
  test("the body swap: the real body and a second request's head inside a hidden header value, another body revealed after it", () => {
    const real = '{"to":"eve","amount":999}';
    const shown = '{"to":"bob","amount":100}';
    const hiddenPart = `Bearer tok\r\n\r\n${real}POST /x HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Length: 100\r\nX-Pad: `;
    const request = `POST /transfer HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Type: application/json\r\nContent-Length: 25\r\nAuthorization: ${hiddenPart}\r\n\r\n${shown}`;
    // Framed as the proof shows it, it is one complete request: only the rule refuses it.
    expect(problem(request, [hiddenPart], 4096)).toMatch(/reveals bytes \d+\.\.\d+ after a hidden span/);
  });

  test("the header swap: a revealed header after the hidden credential", () => {
    const hiddenPart = "Bearer tok\r\nX-Account: 666";
    const request = `GET /balance HTTP/1.1\r\nHost: ${SERVER}\r\nAuthorization: ${hiddenPart}\r\nX-Account: 42\r\n\r\n`;
    expect(problem(request, [hiddenPart])).toMatch(/reveals bytes \d+\.\.\d+ after a hidden span/);
  });

  test("the JSON duplicate member: a hidden value adding a member, the revealed one after it", () => {
    const json = '{"amount":1,"to":"mallory","to":"bob"}';
    const request = body(json);
    expect(problem(request, ['1,"to":"mallory"'])).toMatch(/hides part of the body/);
  });
});

test("a second Host, its value hidden where the layout puts a hidden span, is refused", () => {
  const twoHosts = `GET / HTTP/1.1\r\nHost: ${SERVER}\r\nHost: evil.example\r\n\r\n`;
  expect(problem(twoHosts, ["evil.example"])).toBe("the request must reveal exactly one Host header (found 2)");
});

test("a Host other than the verified server's, or none", () => {
  expect(problem(GET.replace(SERVER, "other.example"))).toMatch(/names "other\.example", not the verified server/);
  expect(problem(`GET / HTTP/1.1\r\nAccept: */*\r\n\r\n`)).toMatch(/exactly one Host header \(found 0\)/);
});

test("a hidden span of the head longer than the bound is refused, one as long accepted; a body hidden whole is a length only", () => {
  const cookie = "x".repeat(MAX);
  const request = GET.replace("a=1; sid=xyz", cookie);
  expect(problem(request, [cookie])).toBeNull();
  expect(problem(request, [`Cookie: ${cookie}`])).toBe(`the hidden span at bytes ${request.indexOf("Cookie")}..${request.indexOf("Cookie") + 8 + MAX} is ${MAX + 8} bytes long; at most ${MAX} may be hidden in one span`);
  const large = JSON.stringify({ pad: "y".repeat(MAX * 4) });
  expect(problem(body(large), [large])).toBeNull();
});

test("one complete HTTP/1.1 request: no second request after it, a body as long as its Content-Length, no chunked body, HTTP/1.1", () => {
  expect(problem(GET + GET)).toMatch(/not one complete HTTP\/1\.1 request: its head and body make \d+ bytes, but \d+ were sent/);
  expect(problem(body('{"a":1}') + "x")).toMatch(/not one complete/);
  expect(problem(body('{"a":1}').slice(0, -1))).toMatch(/not one complete/);
  expect(problem(`POST / HTTP/1.1\r\nHost: ${SERVER}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`)).toMatch(/Transfer-Encoding/);
  expect(problem(GET.replace("HTTP/1.1", "HTTP/1.0"))).toBe("the request is not an HTTP/1.1 request");
  expect(problem(`POST / HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx`)).toMatch(/more than one Content-Length/);
});

test("a Host's port is the one the notary dialled: absent only for 443, compared as a number, the name case-blind with or without its trailing dot", () => {
  const at = (host: string) => direction(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`, []);
  for (const host of [`${SERVER}:8443`, `API.EXAMPLE.COM.:8443`, `${SERVER}:08443`]) expect({ host, problem: requestHostProblem(at(host), SERVER, 8443) }).toEqual({ host, problem: null });
  for (const host of [SERVER, `${SERVER}.`, `${SERVER}:443`]) expect({ host, problem: requestHostProblem(at(host), SERVER, 443) }).toEqual({ host, problem: null });
  expect(requestHostProblem(at(`${SERVER}:8080`), SERVER, 8443)).toBe(`the request's Host header names "${SERVER}:8080", not port 8443, the one the notary dialled`);
  expect(requestHostProblem(at(SERVER), SERVER, 8443)).toBe(`the request's Host header names "${SERVER}", not port 8443, the one the notary dialled (a Host without a port names 443)`);
  expect(requestHostProblem(at(`${SERVER}:443`), SERVER, 8443)).toMatch(/not port 8443/);
  // Without a dialled port (MPC mode: no notary dials) the name alone is checked.
  expect(requestHostProblem(at(`${SERVER}:8080`), SERVER)).toBeNull();
});

describe("the rule's edges, byte for byte", () => {
  const head = (fields: string) => `GET / HTTP/1.1\r\nHost: ${SERVER}\r\n${fields}\r\n\r\n`;

  test("a Content-Length must be digits only, revealed; anything else is named so", () => {
    for (const value of ["+5", "5x", "x5", "abc", " 5a"]) {
      const request = `POST / HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Length: ${value}\r\n\r\nhello`;
      expect({ value, problem: problem(request) }).toEqual({ value, problem: "the request's Content-Length is hidden or not a number" });
    }
  });

  test("the head and body's length in the message is their sum", () => {
    const request = `POST / HTTP/1.1\r\nHost: ${SERVER}\r\nContent-Length: 4\r\n\r\nhello`;
    const headLength = request.length - 5;
    expect(problem(request)).toBe(`the request is not one complete HTTP/1.1 request: its head and body make ${headLength + 4} bytes, but ${request.length} were sent`);
  });

  test("a hidden span may start at the first byte after the Host line", () => {
    const request = head("Authorization: Bearer t0k");
    expect(problem(request, [{ start: request.indexOf("Authorization"), end: request.indexOf("\r\n\r\n") }])).toBeNull();
  });

  test("a span before a Host that is not the first header is refused as before the Host line", () => {
    const request = `GET / HTTP/1.1\r\nAccept: a\r\nX-Key: secret\r\nHost: ${SERVER}\r\n\r\n`;
    expect(problem(request, ["secret"])).toMatch(/^the hidden span at bytes \d+\.\.\d+ starts before the end of the Host header/);
  });

  test("the first hidden span follows a header name that is a token: a line with a space in its name is no header value", () => {
    const request = head("Bad Name: s3cret");
    expect(problem(request, ["s3cret"])).toMatch(/is not a header value whose name is revealed, nor a whole header line/);
  });

  test("a body hidden in part is refused, from its start or to its end", () => {
    const request = body('{"a":"secret-1"}');
    const start = request.indexOf("{");
    expect(problem(request, [{ start, end: start + 3 }])).toMatch(/hides part of the body/);
    expect(problem(request, [{ start: request.length - 3, end: request.length }])).toMatch(/hides part of the body/);
  });

  test("after the first hidden byte nothing is revealed but line breaks: not a header between hidden values, not bytes after a hidden body", () => {
    const between = head("Authorization: tok-1\r\nX-Shown: 1\r\nCookie: sid-2");
    expect(problem(between, ["tok-1", "sid-2"])).toMatch(/reveals bytes \d+\.\.\d+ after a hidden span/);
    const json = '{"a":"x"}\r\n\r\n';
    const tail = body(json, "Authorization: tok-3\r\n");
    const bodyStart = tail.length - json.length;
    expect(problem(tail, ["tok-3", { start: bodyStart, end: tail.length - 4 }])).toMatch(/reveals bytes \d+\.\.\d+ after a hidden span/);
    // A line break revealed in the body is no hidden header line's end.
    expect(problem(tail, ["tok-3", { start: bodyStart, end: tail.length - 2 }])).toMatch(/reveals bytes \d+\.\.\d+ after a hidden span/);
  });
});

describe("what a verifier is told", () => {
  test("a request hides header values when a hidden span lies in its head; a body hidden whole, or nothing hidden, does not", () => {
    expect(hidesHeaderValues(direction(GET, ["a=1; sid=xyz"]))).toBe(true);
    expect(hidesHeaderValues(direction(GET, []))).toBe(false);
    const post = body('{"a":1}');
    expect(hidesHeaderValues(direction(post, ['{"a":1}']))).toBe(false);
    // A head whose blank line is not shown: every hidden span counts as in the head.
    expect(hidesHeaderValues(direction(GET, [{ start: GET.length - 2, end: GET.length }]))).toBe(true);
  });

  test("a request known but for its hidden spans becomes a direction revealing the rest, bytes and all", () => {
    const bytes = encoder.encode(GET);
    const start = GET.indexOf("xyz");
    expect(partlyRevealedDirection({ bytes, hidden: [{ start, end: start + 3 }] })).toEqual(direction(GET, ["xyz"]));
  });
});
