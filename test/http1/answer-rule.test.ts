import { describe, expect, test } from "bun:test";
import { type AnswerContext, RESPONSE_FRAMINGS, checkAnswer, checkSingleRequest } from "../../src/http1/answer-rule.ts";
import { type SeenBytes, allSeen } from "../../src/http1/strict-message.ts";
import type { ByteRange } from "../../src/core/transcript.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const closed: AnswerContext = { end: { closed: true } };
const open: AnswerContext = { end: { closed: false, why: "the server did not close" } };
const unseen: AnswerContext = { end: { closed: false, why: "this notary cannot see the connection" } };

/** What `rule` decides: its result, or the refusal's code and message (less the rule's prefix). */
function decided(rule: () => string): string {
  try {
    return rule();
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return `${code}: ${message.replace(/^(the answer is not one complete HTTP\/1\.1 answer|request refused): /, "")}`;
  }
}

/** What the rule decides on `text`, all of it seen: the framing, or the refusal's code and message. */
const verdict = (text: string, context: AnswerContext = open): string => decided(() => checkAnswer(allSeen(bytes(text)), context));

/** `text` as an MPC notary sees it: the bytes of `hidden` are 0 and unseen. */
function partlySeen(text: string, hidden: ByteRange[]): SeenBytes {
  const view = bytes(text);
  for (const range of hidden) view.fill(0, range.start, range.end);
  return { bytes: view, isSeen: (range) => !hidden.some((h) => h.start < range.end && range.start < h.end) };
}

/** What the rule decides on `text` with the bytes of `hidden` unseen, as an MPC notary reads it. */
const seenVerdict = (text: string, hidden: ByteRange[]): string => decided(() => checkAnswer(partlySeen(text, hidden), unseen));
const requestVerdict = (text: string, hidden: ByteRange[] = []): string => decided(() => checkSingleRequest(partlySeen(text, hidden)));
const at = (text: string, part: string, length = part.length): ByteRange => ({ start: text.indexOf(part), end: text.indexOf(part) + length });

const JSON_BODY = '{"transfers":[{"to":"bob","amount":5}]}';
const lengthAnswer = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${JSON_BODY.length}\r\n\r\n${JSON_BODY}`;
const [firstChunk, secondChunk] = [JSON_BODY.slice(0, 19), JSON_BODY.slice(19)];
const chunkedAnswer =
  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
  `13\r\n${firstChunk}\r\n${secondChunk.length.toString(16)};ext=1\r\n${secondChunk}\r\n0\r\nX-Trailer: t\r\n\r\n`;

describe("the answer rule: one complete HTTP/1.1 answer", () => {
  test("a Content-Length body exactly that long, a chunked body through its trailers, a 204 and a 304 pass", () => {
    expect(verdict(lengthAnswer)).toBe("content-length");
    expect(verdict(chunkedAnswer)).toBe("chunked");
    expect(verdict("HTTP/1.1 204 No Content\r\n\r\n")).toBe("no-body");
    expect(verdict("HTTP/1.1 304 Not Modified\r\nContent-Length: 120\r\n\r\n")).toBe("no-body");
    expect(verdict("HTTP/1.0 200\r\nContent-Length: 0\r\n\r\n")).toBe("content-length");
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Length: 2\r\n\r\nok")).toBe("content-length");
  });

  test("a body cut short is incomplete: Content-Length, chunk data, the last chunk, the trailers, the head", () => {
    const cut = lengthAnswer.slice(0, lengthAnswer.indexOf("5}"));
    expect(verdict(cut)).toBe(`answer_incomplete: its body has ${cut.length - lengthAnswer.indexOf("{")} of the ${JSON_BODY.length} bytes its Content-Length says`);
    expect(verdict(chunkedAnswer.slice(0, chunkedAnswer.indexOf("bob")))).toBe("answer_incomplete: a chunk is cut short");
    expect(verdict(chunkedAnswer.slice(0, chunkedAnswer.indexOf("0\r\n")))).toBe("answer_incomplete: the chunked body ends before its last chunk");
    expect(verdict(chunkedAnswer.slice(0, -2))).toBe("answer_incomplete: the chunked body's trailers does not end (no empty line)");
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n")).toBe("answer_incomplete: the answer's head does not end (no empty line)");
    expect(verdict("HTTP/1.1 200 O")).toBe("answer_incomplete: the answer's start line does not end");
    expect(verdict("")).toBe("answer_incomplete: there is no answer");
  });

  test("a body ended by the connection passes only when the connection's end was seen", () => {
    const byClose = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, part two";
    expect(verdict(byClose, closed)).toBe("close");
    expect(verdict(byClose, open)).toBe("answer_incomplete: its body ends with the connection, but the server did not close");
    expect(verdict(byClose, unseen)).toBe("answer_incomplete: its body ends with the connection, but this notary cannot see the connection");
  });

  test("anything after the answer: a second answer, a pipelined one, trailing bytes", () => {
    expect(verdict(lengthAnswer + lengthAnswer)).toBe(`answer_not_single: ${lengthAnswer.length} bytes follow its end`);
    expect(verdict(`${chunkedAnswer}x`)).toBe("answer_not_single: 1 bytes follow its end");
    expect(verdict("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", closed)).toBe("answer_not_single: 19 bytes follow its end");
  });

  test("an answer to HEAD has no body: what follows its head is another answer (the HEAD-then-GET desync)", () => {
    const head = `HTTP/1.1 200 OK\r\nContent-Length: ${lengthAnswer.length}\r\n\r\n`;
    // Read as the answer to a GET, the second answer passes for the first one's body.
    expect(verdict(head + lengthAnswer)).toBe("content-length");
    expect(checkAnswer(allSeen(bytes(head)), { ...open, requestMethod: "HEAD" })).toBe("no-body");
    expect(() => checkAnswer(allSeen(bytes(head + lengthAnswer)), { ...open, requestMethod: "HEAD" })).toThrow(
      `${lengthAnswer.length} bytes follow its end`,
    );
  });

  test("interim and protocol-switching answers are refused", () => {
    expect(verdict(`HTTP/1.1 100 Continue\r\n\r\n${lengthAnswer}`)).toBe("answer_not_single: it is an interim answer (status 100): what follows is another answer");
    expect(verdict("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x00", closed)).toBe(
      "answer_not_single: it is an interim answer (status 101): what follows is another answer, or not HTTP/1.1 at all",
    );
  });

  test("an encoded answer is refused, by content coding or by transfer coding", () => {
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc")).toBe("answer_encoded: it is encoded (gzip), so it cannot be redacted");
    expect(verdict("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")).toBe("answer_encoded: the body has a transfer coding other than chunked");
  });

  test("what cannot be framed one way is malformed", () => {
    expect(verdict("\x00\x00\x12\x04\x00\x00\x00\x00\x00\r\n\r\n")).toBe("answer_malformed: its first line is not an HTTP/1.1 status line");
    expect(verdict("HTTP/2 200\r\n\r\n")).toBe("answer_malformed: its first line is not an HTTP/1.1 status line");
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")).toBe("answer_malformed: the Content-Length is not one decimal number");
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")).toBe(
      "answer_malformed: the head has both Transfer-Encoding and Content-Length",
    );
    expect(verdict("HTTP/1.1 200 OK\nContent-Length: 0\n\n")).toBe("answer_malformed: the answer's start line ends with a bare LF, not CRLF");
    expect(verdict("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n")).toBe(
      "answer_malformed: the answer's head continues a field on a new line (obsolete line folding)",
    );
    expect(verdict("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")).toBe("answer_malformed: a chunk-size line is not a hexadecimal size");
    expect(verdict("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n")).toBe("answer_malformed: a chunk's data is not followed by CRLF");
  });

  test("the proof format lists exactly the framings the rule returns", () => {
    const framings = [verdict(lengthAnswer), verdict(chunkedAnswer), verdict("HTTP/1.1 200 OK\r\n\r\nabc", closed), verdict("HTTP/1.1 204 No Content\r\n\r\n")];
    expect(framings.sort()).toEqual([...RESPONSE_FRAMINGS].sort());
  });

  test("the status line is read strictly: where it starts and ends, its three digits", () => {
    expect(verdict("XHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")).toBe("answer_malformed: its first line is not an HTTP/1.1 status line");
    expect(verdict("HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n")).toBe("answer_malformed: its first line is not an HTTP/1.1 status line");
    expect(verdict("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")).toBe("content-length");
    expect(verdict("\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")).toBe("answer_malformed: the answer's start line ends with a bare LF, not CRLF");
  });

  test("field lines are read strictly: a name that is a token, a colon, no bare CR, no folding by tab either", () => {
    expect(verdict("HTTP/1.1 200 OK\r\nBad Name: 1\r\nContent-Length: 0\r\n\r\n")).toBe("answer_malformed: the answer's head holds a line that is not a field (name: value)");
    expect(verdict("HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 0\r\n\r\n")).toBe("answer_malformed: the answer's head holds a line that is not a field (name: value)");
    // A seen NUL or other control byte in a name is no token (an unseen byte may stand for one, a seen one may not).
    for (const name of ["X\u0000Y", "X\u0001Y", "\u0000", "X\u007fY"]) {
      expect({ name, verdict: verdict(`HTTP/1.1 200 OK\r\n${name}: x\r\nContent-Length: 0\r\n\r\n`) }).toEqual({ name, verdict: "answer_malformed: the answer's head holds a line that is not a field (name: value)" });
    }
    expect(decided(() => checkSingleRequest(allSeen(bytes("GET / HTTP/1.1\r\nHost: a\r\nX\u0000Y: x\r\n\r\n"))))).toBe("invalid_body: the request's head holds a line that is not a field (name: value)");
    expect(verdict("HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n")).toBe("answer_malformed: the answer's head holds a bare CR");
    expect(verdict("HTTP/1.1 200 OK\r\nX-A: 1\r\n\tfolded\r\nContent-Length: 0\r\n\r\n")).toBe(
      "answer_malformed: the answer's head continues a field on a new line (obsolete line folding)",
    );
  });

  test("framing fields: names and codings in any case, blanks and empty list items around values", () => {
    expect(verdict("HTTP/1.1 200 OK\r\ncontent-LENGTH:\t 2 \t\r\n\r\nok")).toBe("content-length");
    expect(verdict("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n")).toBe("chunked");
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Encoding: , IDENTITY,\r\nContent-Length: 2\r\n\r\nok")).toBe("content-length");
    expect(verdict("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n")).toBe("answer_malformed: the body is chunked more than once");
    expect(verdict("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")).toBe(
      "answer_malformed: the body is chunked more than once",
    );
    for (const length of ["x2", "2x", "-2", "1234567890123456"]) {
      expect(verdict(`HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\n\r\nok`)).toBe("answer_malformed: the Content-Length is not one decimal number");
    }
    expect(verdict("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok")).toBe("content-length");
  });

  test("chunk-size lines are read strictly; each chunk's data ends with CRLF", () => {
    const chunked = (body: string) => `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body}`;
    expect(verdict(chunked("2 \t;name=value\r\nok\r\n0\r\n\r\n"))).toBe("chunked");
    expect(verdict(chunked("A\r\n0123456789\r\n0\r\n\r\n"))).toBe("chunked");
    for (const size of ["x2", "2x", "1234567890abc"]) {
      expect(verdict(chunked(`${size}\r\nok\r\n0\r\n\r\n`))).toBe("answer_malformed: a chunk-size line is not a hexadecimal size");
    }
    expect(verdict(chunked("2\nok\r\n0\r\n\r\n"))).toBe("answer_malformed: a chunk-size line ends with a bare LF, not CRLF");
    expect(verdict(chunked("2\r\nok"))).toBe("answer_incomplete: a chunk is cut short");
    expect(verdict(chunked("2\r\nok\r"))).toBe("answer_incomplete: a chunk is cut short");
    expect(verdict(chunked("2\r\nok\rX0\r\n\r\n"))).toBe("answer_malformed: a chunk's data is not followed by CRLF");
    expect(verdict(chunked("2\r\nokX\n0\r\n\r\n"))).toBe("answer_malformed: a chunk's data is not followed by CRLF");
  });

  describe("on what an MPC notary saw", () => {
    test("hidden body bytes and header values are fine; the framing must be seen", () => {
      const secretAt = lengthAnswer.indexOf("bob");
      expect(checkAnswer(partlySeen(lengthAnswer, [{ start: secretAt, end: secretAt + 3 }]), unseen)).toBe("content-length");
      const typeAt = lengthAnswer.indexOf("application/json");
      expect(checkAnswer(partlySeen(lengthAnswer, [{ start: typeAt, end: typeAt + 16 }]), unseen)).toBe("content-length");
      const dataAt = chunkedAnswer.indexOf("bob");
      expect(checkAnswer(partlySeen(chunkedAnswer, [{ start: dataAt, end: dataAt + 3 }]), unseen)).toBe("chunked");
    });

    test("each hidden byte a decision rests on is refused as answer_incomplete, naming it", () => {
      expect(seenVerdict(lengthAnswer, [at(lengthAnswer, "200")])).toBe("answer_incomplete: its status line is hidden");
      expect(seenVerdict(lengthAnswer, [at(lengthAnswer, String(JSON_BODY.length))])).toBe("answer_incomplete: the content-length field's value is hidden");
      // The name's last byte hidden: it could still be Content-Length. A whole field line: its name cannot be read.
      expect(seenVerdict(lengthAnswer, [at(lengthAnswer, "Content-Length", 14)].map((r) => ({ start: r.end - 1, end: r.end })))).toBe(
        "answer_incomplete: a hidden field name could be content-length",
      );
      expect(seenVerdict(lengthAnswer, [at(lengthAnswer, "Content-Type: application/json")])).toBe("answer_incomplete: a field name in the answer's head is hidden");
      const sizeAt = chunkedAnswer.indexOf("13\r\n");
      expect(seenVerdict(chunkedAnswer, [{ start: sizeAt, end: sizeAt + 1 }])).toBe("answer_incomplete: a chunk-size line is hidden");
      const breakAt = chunkedAnswer.indexOf(firstChunk) + firstChunk.length;
      expect(seenVerdict(chunkedAnswer, [{ start: breakAt, end: breakAt + 1 }])).toBe("answer_incomplete: the line break after a chunk is hidden");
      expect(seenVerdict(chunkedAnswer, [{ start: breakAt + 1, end: breakAt + 2 }])).toBe("answer_incomplete: the line break after a chunk is hidden");
    });

    test("a field line with nothing but a colon and a hidden value is no field, whatever it hid", () => {
      const answer = "HTTP/1.1 200 OK\r\n: hidden\r\nContent-Length: 0\r\n\r\n";
      expect(seenVerdict(answer, [at(answer, "hidden")])).toBe("answer_malformed: the answer's head holds a line that is not a field (name: value)");
    });

    test("a hidden Content-Length, Content-Encoding, chunk size or status line cannot be checked: refused", () => {
      const lengthAt = lengthAnswer.indexOf(String(JSON_BODY.length));
      expect(() => checkAnswer(partlySeen(lengthAnswer, [{ start: lengthAt, end: lengthAt + 2 }]), unseen)).toThrow("the content-length field's value is hidden");
      const encoded = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc";
      const codingAt = encoded.indexOf("gzip");
      expect(() => checkAnswer(partlySeen(encoded, [{ start: codingAt, end: codingAt + 4 }]), unseen)).toThrow("the content-encoding field's value is hidden");
      const sizeAt = chunkedAnswer.indexOf(";ext") - 2;
      expect(() => checkAnswer(partlySeen(chunkedAnswer, [{ start: sizeAt, end: sizeAt + 2 }]), unseen)).toThrow("a chunk-size line is hidden");
      expect(() => checkAnswer(partlySeen(lengthAnswer, [{ start: 9, end: 12 }]), unseen)).toThrow("its status line is hidden");
      const nameAt = lengthAnswer.indexOf("Content-Length");
      expect(() => checkAnswer(partlySeen(lengthAnswer, [{ start: nameAt, end: nameAt + 3 }]), unseen)).toThrow("a field name in the answer's head is hidden");
      // The name's end hidden: "Content-" then anything could still be Content-Length or Content-Encoding.
      expect(() => checkAnswer(partlySeen(lengthAnswer, [{ start: nameAt + 8, end: nameAt + 14 }]), unseen)).toThrow("a hidden field name could be content-length");
      // The colon hidden too: the name could end anywhere in the hidden bytes.
      expect(() => checkAnswer(partlySeen(lengthAnswer, [{ start: nameAt + 8, end: nameAt + 16 }]), unseen)).toThrow("a hidden field name could be content-length");
    });

    test("a field name partly hidden (a search hit inside it) passes when its seen bytes rule out every field the rule reads", () => {
      const answer = `HTTP/1.1 200 OK\r\nX-Session-Token: abc\r\nContent-Length: 2\r\n\r\nok`;
      const tokenAt = answer.indexOf("Session-Token");
      expect(checkAnswer(partlySeen(answer, [{ start: tokenAt, end: tokenAt + 13 }]), unseen)).toBe("content-length");
      // "Content-" and a hidden part, then a seen byte where Content-Length's colon would be that is no colon: not it.
      const longer = `HTTP/1.1 200 OK\r\nContent-Length-Hint: 5\r\nContent-Length: 2\r\n\r\nok`;
      const hintAt = longer.indexOf("Length-Hint");
      expect(checkAnswer(partlySeen(longer, [{ start: hintAt, end: hintAt + 6 }]), unseen)).toBe("content-length");
      // The same length as Content-Length with a seen first byte that differs: not it.
      const lookalike = `HTTP/1.1 200 OK\r\nXontent-Length: 5\r\nContent-Length: 2\r\n\r\nok`;
      const at = lookalike.indexOf("ontent-Length: 5");
      expect(checkAnswer(partlySeen(lookalike, [{ start: at, end: at + 13 }]), unseen)).toBe("content-length");
      const request = "POST /api HTTP/1.1\r\nHost: target.test\r\nX-Session-Token: abc\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
      const requestTokenAt = request.indexOf("Session-Token");
      expect(checkSingleRequest(partlySeen(request, [{ start: requestTokenAt, end: requestTokenAt + 13 }]))).toBe("POST");
    });
  });
});

describe("the request rule: one request", () => {
  const get = "GET /data HTTP/1.1\r\nHost: target.test\r\nConnection: close\r\n\r\n";
  const post = 'POST /api HTTP/1.1\r\nHost: target.test\r\nContent-Length: 7\r\n\r\n{"a":1}';

  test("one request passes and its method is read", () => {
    expect(checkSingleRequest(allSeen(bytes(get)))).toBe("GET");
    expect(checkSingleRequest(allSeen(bytes(post)))).toBe("POST");
    expect(checkSingleRequest(allSeen(bytes("PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")))).toBe("PUT");
  });

  test("a second, pipelined request is refused as answer_not_single", () => {
    for (const pipelined of [get + get, `HEAD /data HTTP/1.1\r\nHost: target.test\r\n\r\n${get}`, `${post}${get}`]) {
      expect(() => checkSingleRequest(allSeen(bytes(pipelined)))).toThrow(expect.objectContaining({ code: "answer_not_single" }));
    }
  });

  test("each refusal says why, with its code", () => {
    expect(requestVerdict(get, [{ start: 1, end: 3 }])).toBe("invalid_body: its method is hidden");
    expect(requestVerdict(get, [{ start: 0, end: 1 }])).toBe("invalid_body: its method is hidden");
    expect(requestVerdict(post.slice(0, -2))).toBe("invalid_body: its body is shorter than its Content-Length says");
    expect(requestVerdict(get + get)).toBe(`answer_not_single: ${get.length} bytes follow the request's end: a second, pipelined request would get a second answer`);
    expect(requestVerdict("GET /data HTTP/1.1\r\nHost: target.test")).toBe("invalid_body: the request's head does not end (no empty line)");
    expect(requestVerdict("GET /data HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n")).toBe("invalid_body: the body has a transfer coding other than chunked");
    const secret = "GET /data HTTP/1.1\r\nX-Key: secret\r\nContent-Length: 0\r\n\r\n";
    expect(requestVerdict(secret, [at(secret, "Content-Length: 0")])).toBe("invalid_body: a field name in the request's head is hidden");
  });

  test("the request line is read strictly: where it starts and ends", () => {
    for (const line of [" GET / HTTP/1.1", "GET / HTTP/1.10", "GET / HTTP/2", "GET  HTTP/1.1"]) {
      expect(requestVerdict(`${line}\r\nHost: target.test\r\n\r\n`)).toBe("invalid_body: its first line is not an HTTP/1.1 request line");
    }
  });

  test("a hidden path is fine; a hidden method, a cut body or a malformed line is refused", () => {
    expect(checkSingleRequest(partlySeen(get, [{ start: 5, end: 9 }]))).toBe("GET");
    expect(() => checkSingleRequest(partlySeen(get, [{ start: 0, end: 2 }]))).toThrow("request refused: its method is hidden");
    expect(() => checkSingleRequest(allSeen(bytes(post.slice(0, -2))))).toThrow("request refused: its body is shorter than its Content-Length says");
    expect(() => checkSingleRequest(allSeen(bytes("GET /\r\n\r\n")))).toThrow(expect.objectContaining({ code: "invalid_body" }));
  });
});
