/** occurrences and echoOccurrences: each occurrence of a byte string in one side of a transcript, once. */
import { describe, expect, test } from "bun:test";
import { parseTranscript } from "../../src/redaction/find.ts";
import { echoOccurrences, occurrences } from "../../src/redaction/search.ts";
import { texts, utf8 } from "./fixtures/transcript.ts";

const body = String.raw`{"plain":"token","escaped":"t\u006fken","x":"%74oken"}`;
const recv = utf8(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
const { search } = parseTranscript({ sent: utf8("GET / HTTP/1.1\r\n\r\n"), recv }).recv;

describe("occurrences", () => {
  test("each occurrence once: in a JSON string without escapes, and written with escapes", () => {
    expect(texts(recv, occurrences(search, utf8("token")))).toEqual(["token", String.raw`t\u006fken`]);
  });

  test("echoes are also found percent-encoded", () => {
    expect(texts(recv, echoOccurrences(search, utf8("token")))).toEqual(["token", String.raw`t\u006fken`, "%74oken"]);
  });

  test("an empty needle occurs nowhere", () => {
    expect(occurrences(search, new Uint8Array())).toEqual([]);
    expect(echoOccurrences(search, new Uint8Array())).toEqual([]);
  });
});
