import { describe, expect, test } from "bun:test";
import { pathSegments, queryParameters, requestTarget } from "../../src/http1/request-target.ts";
import { texts, utf8 } from "../redaction/fixtures/transcript.ts";

describe("request target", () => {
  function target(line: string) {
    const bytes = utf8(line);
    const t = requestTarget(bytes, { start: 0, end: bytes.length });
    return t && { target: texts(bytes, [t])[0], segments: texts(bytes, pathSegments(bytes, t)), query: queryParameters(bytes, t).map((q) => texts(bytes, [q.name, q.value])) };
  }

  test("origin-form: segments and query", () => {
    expect(target("GET /a/b/c?x=1&y=&z&x=%20 HTTP/1.1")).toEqual({
      target: "/a/b/c?x=1&y=&z&x=%20",
      segments: ["a", "b", "c"],
      query: [["x", "1"], ["y", ""], ["z", ""], ["x", "%20"]],
    });
  });

  test("trailing slash gives an empty last segment; empty segments count", () => {
    expect(target("GET /a/b/ HTTP/1.1")?.segments).toEqual(["a", "b", ""]);
    expect(target("GET /a//b?q=/x/y HTTP/1.1")?.segments).toEqual(["a", "", "b"]);
    expect(target("GET / HTTP/1.1")?.segments).toEqual([""]);
  });

  test("absolute-form skips the authority; fragments end the query", () => {
    expect(target("GET https://h.example:443/p/q?k=v#frag HTTP/1.1")).toEqual({
      target: "https://h.example:443/p/q?k=v#frag",
      segments: ["p", "q"],
      query: [["k", "v"]],
    });
    expect(target("GET https://h.example?k=/v HTTP/1.1")?.segments).toEqual([]);
  });

  test("no path: asterisk and authority forms; no target at all", () => {
    expect(target("OPTIONS * HTTP/1.1")?.segments).toEqual([]);
    expect(target("CONNECT h.example:443 HTTP/1.1")?.segments).toEqual([]);
    expect(target("GARBAGE")).toBeNull();
  });
});
