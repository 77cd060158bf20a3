import { expect, test } from "bun:test";
import { bytesToBase64 } from "../../src/base/bytes.ts";
import { complementRanges } from "../../src/core/ranges.ts";
import { answerJson } from "../../src/proof/answer-json.ts";
import type { TranscriptDirection } from "../../src/proof/format.ts";

/** The proven answer as a program reads it: status, fields (hidden values null), body text and JSON. */

const M = "█";
function shown(text: string, hidden: string[] = []): TranscriptDirection {
  const bytes = Buffer.from(text, "latin1");
  const ranges = hidden.map((value) => ({ start: text.indexOf(value), end: text.indexOf(value) + value.length }));
  const revealed = complementRanges(bytes.length, ranges).map((r) => ({ ...r, data: bytesToBase64(bytes.subarray(r.start, r.end)) }));
  return { length: bytes.length, revealed };
}

test("a chunked JSON answer with a hidden header value and a value hidden across a chunk boundary", () => {
  const text = 'HTTP/1.1 201 Created\r\nX-Token: abc123\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"id":7,"secret"\r\n0d\r\n:"s3cr3t-12"}\r\n0\r\n\r\n';
  const answer = answerJson(shown(text, ["abc123", '"s3cr3t-12"']), M);
  expect(answer.status).toBe(201);
  expect(answer.headers).toEqual([
    { name: "X-Token", value: null },
    { name: "Transfer-Encoding", value: "chunked" },
  ]);
  expect(answer.bodyText).toBe(`{"id":7,"secret":${M.repeat(11)}}`);
  expect(answer.json).toEqual({ id: 7, secret: M.repeat(11) });
});

test("markers inside a string stay in it; a body that is no JSON has only its text; a hidden status line is null", () => {
  const inString = answerJson(shown('HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{"name":"alice!"}', ["alice"]), M);
  expect(inString.json).toEqual({ name: `${M.repeat(5)}!` });
  const plain = answerJson(shown("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", ["ell"]), M);
  expect(plain).toMatchObject({ bodyText: `h${M.repeat(3)}o`, json: null });
  expect(answerJson(shown("HTTP/1.1 200 OK\r\n\r\n", ["200"]), M).status).toBeNull();
});
