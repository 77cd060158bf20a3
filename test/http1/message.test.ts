import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { bodyBytes, finalHead, isFieldName, lowerAsciiLetters, messageComplete, parseHttpMessage } from "../../src/http1/message.ts";
import { chunked, concat, texts, utf8 } from "../redaction/fixtures/transcript.ts";

function parsed(bytes: Uint8Array) {
  const message = parseHttpMessage(bytes);
  return {
    startLine: texts(bytes, [message.startLine])[0],
    headers: message.headers.map((h) => [...texts(bytes, [h.name, h.value])]),
    body: texts(bytes, message.body),
    framing: texts(bytes, message.framing),
  };
}

describe("parseHttpMessage", () => {
  test("request line, headers with trimmed values, Content-Length body", () => {
    const m = parsed(utf8("POST /x HTTP/1.1\r\nHost: a.example\r\nX-Empty:\r\nX-Pad: \t v w \t\r\nContent-Length: 4\r\n\r\nbodyEXTRA"));
    expect(m.startLine).toBe("POST /x HTTP/1.1");
    expect(m.headers).toEqual([["Host", "a.example"], ["X-Empty", ""], ["X-Pad", "v w"], ["Content-Length", "4"]]);
    expect(m.body).toEqual(["body"]);
  });

  test("no framing headers: the body runs until the end (connection close)", () => {
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nA: b\r\n\r\nall of it")).body).toEqual(["all of it"]);
  });

  test("chunked: data pieces, framing kept apart, trailers become headers", () => {
    const bytes = concat("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n", chunked("hello world", [3, 5], "X-Trailer: tv\r\n"));
    const m = parsed(bytes);
    expect(m.body).toEqual(["hel", "lo wo", "rld"]);
    expect(m.framing).toEqual(["3\r\n", "\r\n", "5\r\n", "\r\n", "3\r\n", "\r\n", "0\r\n"]);
    expect(m.headers).toEqual([["Transfer-Encoding", "gzip, Chunked"], ["X-Trailer", "tv"]]);
  });

  test("chunk extensions and upper-case hex", () => {
    const m = parsed(utf8("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA;name=val\r\n0123456789\r\n0\r\n\r\n"));
    expect(m.body).toEqual(["0123456789"]);
    expect(m.framing).toEqual(["A;name=val\r\n", "\r\n", "0\r\n"]);
  });

  test("truncated chunk: the data present; unreadable chunk framing: the rest is body", () => {
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort")).body).toEqual(["short"]);
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nzz\r\nrest")).body).toEqual(["ab", "zz\r\nrest"]);
  });

  test("a Transfer-Encoding whose last coding is not chunked: the body runs until close, chunk-like lines and all", () => {
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n5\r\nabcde\r\n0\r\n\r\n")).body).toEqual(["5\r\nabcde\r\n0\r\n\r\n"]);
  });

  test("an empty Transfer-Encoding names no coding: Content-Length frames the body", () => {
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\nContent-Length: 2\r\n\r\nokNO")).body).toEqual(["ok"]);
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\nContent-Length: 2\r\n\r\nokNO")).body).toEqual(["ok"]);
  });

  test("Content-Length: any number of digits, and nothing but digits", () => {
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789EXTRA")).body).toEqual(["0123456789"]);
    for (const length of ["2x", "x2", "+2", "2 3"]) {
      expect(parsed(utf8(`HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\n\r\nabcdef`)).body).toEqual(["abcdef"]);
    }
  });

  test("conflicting Content-Length: until close", () => {
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabcdef")).body).toEqual(["abcdef"]);
    expect(parsed(utf8("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nabcdef")).body).toEqual(["ab"]);
  });

  test("interim 100 Continue: its headers count, the final head frames the body", () => {
    const m = parsed(utf8("HTTP/1.1 100 Continue\r\nX-A: 1\r\n\r\nHTTP/1.1 200 OK\r\nX-A: 2\r\nContent-Length: 2\r\n\r\nokNO"));
    expect(m.startLine).toBe("HTTP/1.1 100 Continue");
    expect(m.headers).toEqual([["X-A", "1"], ["X-A", "2"], ["Content-Length", "2"]]);
    expect(m.body).toEqual(["ok"]);
  });

  test("interim heads: the final head is the answer's own status line and fields; after an interim head alone the answer never came", () => {
    const bytes = utf8("HTTP/1.1 103 Early Hints\r\nLink: a\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-A: 2\r\nContent-Length: 2\r\n\r\nok");
    const head = finalHead(bytes);
    expect(texts(bytes, [head.startLine])).toEqual(["HTTP/1.1 200 OK"]);
    expect(head.headers.map((h) => texts(bytes, [h.name, h.value]))).toEqual([["X-A", "2"], ["Content-Length", "2"]]);
    expect(messageComplete(bytes)).toBe(true);
    for (const cut of ["HTTP/1.1 103 Early Hints\r\nLink: a\r\n\r\n", "HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n\r\n"]) {
      expect(messageComplete(utf8(cut))).toBe(false);
      expect(texts(utf8(cut), [finalHead(utf8(cut)).startLine])).toEqual([cut.slice(0, cut.indexOf("\r\n"))]);
    }
    // 101 Switching Protocols is final: what follows is another protocol's.
    const switching = utf8("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
    expect(texts(switching, [finalHead(switching).startLine])).toEqual(["HTTP/1.1 101 Switching Protocols"]);
    expect(messageComplete(switching)).toBe(true);
    // A status line with more before "HTTP/" is no interim head.
    const odd = utf8("XHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
    expect(texts(odd, [finalHead(odd).startLine])).toEqual(["XHTTP/1.1 100 Continue"]);
  });

  test("an interim status line needs its space or its end after the code", () => {
    for (const [line, interim] of [["HTTP/1.1 100", true], ["HTTP/1.1 100 Continue", true], ["HTTP/1.1 1000 x", false]] as const) {
      const bytes = utf8(`${line}\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n`);
      expect(texts(bytes, [finalHead(bytes).startLine])).toEqual([interim ? "HTTP/1.1 200 OK" : line]);
    }
  });

  test("stray line breaks before the start line are skipped", () => {
    for (const lead of ["\r\n", "\n", "\r\n\r\n", "\r"]) {
      expect(parsed(utf8(`${lead}HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok`))).toEqual({ startLine: "HTTP/1.1 200 OK", headers: [["Content-Length", "2"]], body: ["ok"], framing: [] });
    }
  });

  test("chunk data ended by a bare LF or a lone CR, or by nothing: the framing holds each break as it is, and no empty range", () => {
    const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    expect(parsed(utf8(`${head}3\nabc\n2\nde\n0\n\n`))).toMatchObject({ body: ["abc", "de"], framing: ["3\n", "\n", "2\n", "\n", "0\n"] });
    expect(parsed(utf8(`${head}3\r\nabc\r2\r\nde\r\n0\r\n\r\n`))).toMatchObject({ body: ["abc", "de"], framing: ["3\r\n", "\r", "2\r\n", "\r\n", "0\r\n"] });
    const cut = utf8(`${head}3\r\nabc`);
    expect(parseHttpMessage(cut).framing).toEqual([{ start: head.length, end: head.length + 3 }]);
    // A size line at the very end, its data not yet come: no piece of body at all.
    expect(parseHttpMessage(utf8(`${head}3\r\nabc\r\n1a\r\n`)).body).toEqual([{ start: head.length + 3, end: head.length + 6 }]);
  });

  test("a chunk-size line is hex digits, blanks, and extensions after a semicolon only", () => {
    const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    expect(parsed(utf8(`${head}3 \t;ext\r\nabc\r\n0\r\n\r\n`)).body).toEqual(["abc"]);
    for (const line of ["x3", "3x", "3 x", "3;"]) {
      const body = parsed(utf8(`${head}${line}\r\nabc\r\n0\r\n\r\n`)).body;
      expect({ line, body }).toEqual({ line, body: line === "3;" ? ["abc"] : [`${line}\r\nabc\r\n0\r\n\r\n`] });
    }
  });

  test("obsolete line folding extends the value over the continuation lines", () => {
    const m = parsed(utf8("GET / HTTP/1.1\r\nX-Fold: first\r\n  second \r\nX-Empty:\r\n\tlater\r\n\r\n"));
    expect(m.headers).toEqual([["X-Fold", "first\r\n  second"], ["X-Empty", "later"]]);
  });

  test("a continuation line of blanks only adds nothing: the value does not run over the line break", () => {
    const m = parsed(utf8("GET / HTTP/1.1\r\nX-A: v\r\n \t \r\nX-Empty:\r\n \r\nB: 2\r\n\r\n"));
    expect(m.headers).toEqual([["X-A", "v"], ["X-Empty", ""], ["B", "2"]]);
  });

  test("bare LF line endings and lines without a colon", () => {
    const m = parsed(utf8("GET / HTTP/1.1\nA: 1\ngarbage line\nB : 2\n\nbody"));
    expect(m.headers).toEqual([["A", "1"], ["B", "2"]]);
    expect(m.body).toEqual(["body"]);
  });

  test("truncated head: whatever headers are there, no body", () => {
    const m = parsed(utf8("HTTP/1.1 200 OK\r\nA: 1\r\nB: tru"));
    expect(m.headers).toEqual([["A", "1"], ["B", "tru"]]);
    expect(m.body).toEqual([]);
  });

  test("never throws, and every range stays inside the input", () => {
    const piece = fc.constantFrom("\r\n", "\n", "\r", ":", " ", "HTTP/1.1 100 x", "Transfer-Encoding: chunked", "Content-Length: 3", "0", "a", ";", "\r\n\r\n");
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 80 }), fc.array(piece, { maxLength: 30 }).map((p) => utf8(p.join("")))), (bytes) => {
        const m = parseHttpMessage(bytes);
        for (const r of [m.startLine, ...m.headers.flatMap((h) => [h.name, h.value]), ...m.body, ...m.framing]) {
          expect(0 <= r.start && r.start <= r.end && r.end <= bytes.length).toBe(true);
        }
      }),
      { numRuns: 3_000 },
    );
  });
});

describe("bodyBytes", () => {
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bodyBytes(bytes));

  test("one piece is a view of the input; chunks are joined in order; no body is empty", () => {
    const plain = utf8("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokNO");
    const view = bodyBytes(plain);
    expect(new TextDecoder().decode(view)).toBe("ok");
    expect(view.buffer).toBe(plain.buffer);
    expect(decode(concat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunked("hello world", [3, 5])))).toBe("hello world");
    expect(bodyBytes(utf8("HTTP/1.1 204 No Content\r\n\r\n"))).toEqual(new Uint8Array(0));
  });
});

describe("isFieldName", () => {
  const whole = (text: string) => ({ bytes: utf8(text), range: { start: 0, end: utf8(text).length } });

  test("the name in any case, and nothing longer, shorter or else", () => {
    for (const name of ["host", "Host", "HOST", "hOsT"]) expect(isFieldName(whole(name).bytes, whole(name).range, "host")).toBe(true);
    for (const name of ["hos", "hosts", " host", "h0st", ""]) expect(isFieldName(whole(name).bytes, whole(name).range, "host")).toBe(false);
  });

  test("only the range counts: the bytes around it are not read", () => {
    const bytes = utf8("xHostx");
    expect(isFieldName(bytes, { start: 1, end: 5 }, "host")).toBe(true);
    expect(isFieldName(bytes, { start: 0, end: 4 }, "host")).toBe(false);
    expect(isFieldName(bytes, { start: 2, end: 6 }, "host")).toBe(false);
  });

  test("folds ASCII letters only: the bytes just outside A..Z are not taken for a..z", () => {
    // '@' (0x40) and '[' (0x5b) sit beside 'A' and 'Z'; folded like letters they would read as '`' and '{'.
    expect(isFieldName(utf8("@"), { start: 0, end: 1 }, "`")).toBe(false);
    expect(isFieldName(utf8("["), { start: 0, end: 1 }, "{")).toBe(false);
    expect(isFieldName(utf8("A"), { start: 0, end: 1 }, "a")).toBe(true);
    expect(isFieldName(utf8("Z"), { start: 0, end: 1 }, "z")).toBe(true);
  });

  test("a name of any bytes, one char each, its ASCII letters lowered by lowerAsciiLetters, finds exactly those bytes in any ASCII case", () => {
    const bytes = Uint8Array.of(0x58, 0x2d, 0xc9, 0x80, 0x5a);
    const name = lowerAsciiLetters(String.fromCharCode(...bytes));
    expect(name).toBe("x-\u00c9\u0080z");
    expect(isFieldName(bytes, { start: 0, end: 5 }, name)).toBe(true);
    expect(isFieldName(Uint8Array.of(0x78, 0x2d, 0xc9, 0x80, 0x7a), { start: 0, end: 5 }, name)).toBe(true);
    // É and é differ outside ASCII: HTTP folds no other letters.
    expect(isFieldName(Uint8Array.of(0x78, 0x2d, 0xe9, 0x80, 0x7a), { start: 0, end: 5 }, name)).toBe(false);
    expect(lowerAsciiLetters("AZaz@[`{\u00c0\u0130")).toBe("azaz@[`{\u00c0\u0130");
  });

  test("agrees with decoding the name and lower-casing it, for any bytes and lower-case ASCII names", () => {
    const latin1 = new TextDecoder("latin1");
    const name = fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{0,6}$/);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 8 }), name, fc.boolean(), (bytes, lower, fromName) => {
        // Half the time the bytes are the name itself in a random case, so that matches are tried as well as misses.
        const input = fromName ? utf8([...lower].map((c, i) => (bytes[i]! % 2 ? c.toUpperCase() : c)).join("")) : bytes;
        const range = { start: 0, end: input.length };
        expect(isFieldName(input, range, lower)).toBe(latin1.decode(input).toLowerCase() === lower);
      }),
      { numRuns: 3_000 },
    );
  });
});

describe("messageComplete", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  test("a Content-Length or chunked body cut short is incomplete; a whole one, or one framed by the close, is complete", () => {
    expect(messageComplete(bytes("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"))).toBe(true);
    expect(messageComplete(bytes("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel"))).toBe(false);
    expect(messageComplete(bytes("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))).toBe(true);
    expect(messageComplete(bytes("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n"))).toBe(false);
    expect(messageComplete(bytes("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nanything"))).toBe(true);
  });
});
