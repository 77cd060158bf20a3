/**
 * findSpans: what one pattern hides of a real transcript, and the values it hid as the echo guard looks for them
 * again (find.ts's Found): exactly those, nothing for a pattern that hid nothing.
 */
import { describe, expect, test } from "bun:test";
import { findSpans, parseTranscript } from "../../src/redaction/find.ts";
import { parseRedactions } from "../../src/redaction/index.ts";
import type { HidingPattern } from "../../src/redaction/patterns.ts";
import { texts, utf8 } from "./fixtures/transcript.ts";

const body = String.raw`{"pw":"p\u0041ss-word","n":41}`;
const sent = utf8(
  `POST /users/42?key=abc%2Fdef&other=1 HTTP/1.1\r\nHost: api.example\r\nAuthorization: Bearer tok-123456\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
);
const recv = utf8(`HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\n{"echo":"a needle in it"}`);
const transcript = parseTranscript({ sent, recv });
const decoder = new TextDecoder();

/** One pattern's Found, as text: the spans' bytes per direction, the values and the parts. */
function found(entry: string, t = transcript, bytes = { sent, recv }) {
  const result = findSpans(t, parseRedactions(entry)[0] as HidingPattern);
  return {
    sent: texts(bytes.sent, result.spans.sent),
    recv: texts(bytes.recv, result.spans.recv),
    values: result.values.map((value) => decoder.decode(value)),
    parts: result.parts.map((part) => decoder.decode(part)),
  };
}

describe("findSpans: the values each kind of pattern hid", () => {
  test("a header: its value, and the credential after its scheme as a part", () => {
    expect(found("req:header:authorization")).toEqual({ sent: ["Bearer tok-123456"], recv: [], values: ["Bearer tok-123456"], parts: ["tok-123456"] });
  });

  test("a query value and a path segment: their raw bytes, no parts", () => {
    expect(found("res:query:key")).toEqual({ sent: ["abc%2Fdef"], recv: [], values: ["abc%2Fdef"], parts: [] });
    expect(found("res:path:2")).toEqual({ sent: ["42"], recv: [], values: ["42"], parts: [] });
  });

  test("a JSON string: quoted, its content raw and decoded; another JSON value: as written", () => {
    expect(found("req:body:pw")).toEqual({
      sent: [String.raw`"p\u0041ss-word"`],
      recv: [],
      values: [String.raw`"p\u0041ss-word"`, String.raw`p\u0041ss-word`, "pAss-word"],
      parts: [],
    });
    expect(found("req:body:n")).toEqual({ sent: ["41"], recv: [], values: ["41"], parts: [] });
  });

  test("the empty path: the whole body, one value", () => {
    expect(found("req:body:")).toEqual({ sent: [body], recv: [], values: [body], parts: [] });
  });

  test("a search: the text it found", () => {
    expect(found("search:needle")).toEqual({ sent: [], recv: ["needle"], values: ["needle"], parts: [] });
  });

  test("a pattern that hid nothing hid no value", () => {
    const nothing = { sent: [], recv: [], values: [], parts: [] };
    for (const entry of ["req:header:x-absent", "res:query:absent", "res:path:9", "res:body:absent", "search:absent"]) {
      expect(found(entry)).toEqual(nothing);
    }
    // An empty body has a value, the empty one, which hides nothing.
    const empty = { sent: utf8("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), recv: utf8("HTTP/1.1 204 No Content\r\n\r\n") };
    expect(found("res:body:", parseTranscript(empty), empty)).toEqual(nothing);
  });
});

describe("header names compare case-blind, letters only", () => {
  const request = utf8("GET / HTTP/1.1\r\nX_Key: hidden-1\r\nX-Kez: shown-1\r\nx_KEY: hidden-2\r\nX?Key: shown-2\r\n\r\n");
  const bytes = { sent: request, recv: utf8("HTTP/1.1 204 No Content\r\n\r\n") };

  test("a name of the same length that differs in one byte, or only where case folding would not apply, is another header", () => {
    expect(found("req:header:x_key", parseTranscript(bytes), bytes).sent).toEqual(["hidden-1", "hidden-2"]);
  });
});
