import { describe, expect, test } from "bun:test";
import type { ByteRange } from "../../src/core/transcript.ts";
import { describeHiddenRanges } from "../../src/proof/hidden-ranges.ts";
import { directionHiding, spanOf } from "./fixtures.ts";

/** What each hidden range of `text` covers, hiding the first occurrence of each needle (or explicit spans). */
function covers(request: string, hide: (string | ByteRange)[], response = "HTTP/1.1 204 No Content\r\n\r\n") {
  const spans = hide.map((h) => (typeof h === "string" ? spanOf(request, h) : h)).sort((a, b) => a.start - b.start);
  const ranges = describeHiddenRanges({ sent: directionHiding(request, spans), recv: directionHiding(response, []) });
  return ranges.map((r) => [request.slice(r.start, r.end), r.covers, r.whole]);
}

describe("what a hidden range covers", () => {
  const request = 'POST /users/u-4711/items?key=k123&n=1 HTTP/1.1\r\nX-Api-Key: sk_9f8e\r\nContent-Length: 40\r\n\r\n{"a":{"pin":"1234","n":[true,5]},"b":""}';

  test("whole values of every kind are named", () => {
    expect(covers(request, ["u-4711", "k123", "sk_9f8e", '"1234"', "true"])).toEqual([
      ["u-4711", { kind: "path-segment", segment: 2 }, true],
      ["k123", { kind: "query-value", name: "key" }, true],
      ["sk_9f8e", { kind: "header-value", name: "X-Api-Key" }, true],
      ['"1234"', { kind: "json-value", path: "a.pin" }, true],
      ["true", { kind: "json-value", path: "a.n.0" }, true],
    ]);
  });

  test("a string's whole content between visible quotes, an object, the whole body", () => {
    expect(covers(request, ["1234"])).toEqual([["1234", { kind: "json-value", path: "a.pin" }, true]]);
    expect(covers(request, ['{"pin":"1234","n":[true,5]}'])).toEqual([['{"pin":"1234","n":[true,5]}', { kind: "json-value", path: "a" }, true]]);
    const body = '{"a":{"pin":"1234","n":[true,5]},"b":""}';
    expect(covers(request, [body])).toEqual([[body, { kind: "body" }, true]]);
  });

  test("a range cutting a value, a key, or more than a value is not aligned", () => {
    const notAligned = { kind: "not-aligned" } as const;
    expect(covers(request, ["sk_9"])).toEqual([["sk_9", notAligned, false]]);
    expect(covers(request, ["23"])).toEqual([["23", notAligned, false]]);
    expect(covers(request, ["pin"])).toEqual([["pin", notAligned, false]]);
    expect(covers(request, ["4711/items"])).toEqual([["4711/items", notAligned, false]]);
    // Part of a number: nothing after it parses, so no JSON value is recognised.
    expect(covers(request, ["5]"])).toEqual([["5]", notAligned, false]]);
  });

  test("a JSON value split by chunk framing: each piece is part of a whole value", () => {
    const chunked = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{"t":"ab\r\n4\r\ncd"}\r\n0\r\n\r\n';
    const first = spanOf(chunked, '"ab');
    const second = spanOf(chunked, 'cd"');
    const ranges = describeHiddenRanges({ sent: directionHiding("GET / HTTP/1.1\r\n\r\n", []), recv: directionHiding(chunked, [first, second]) });
    expect(ranges.map((r) => [r.start, r.end, r.covers])).toEqual([
      [first.start, first.end, { kind: "json-value", path: "t" }],
      [second.start, second.end, { kind: "json-value", path: "t" }],
    ]);
  });

  test("a header whose name is hidden too is not recognised", () => {
    const text = "GET / HTTP/1.1\r\nX-Secret: v1v2\r\n\r\n";
    expect(covers(text, ["X-Secret: v1v2"])).toEqual([["X-Secret: v1v2", { kind: "not-aligned" }, false]]);
  });
});
