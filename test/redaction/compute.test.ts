import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { computeRedactions, parseRedactions, revealedRanges } from "../../src/redaction/index.ts";
import { chunked, concat, masked, texts, utf8 } from "./fixtures/transcript.ts";

interface Transcript {
  sent: Uint8Array;
  recv: Uint8Array;
}

function redact(transcript: Transcript, header: string) {
  const result = computeRedactions(transcript, parseRedactions(header));
  return {
    result,
    sent: masked(transcript.sent, result.hidden.sent),
    recv: masked(transcript.recv, result.hidden.recv),
    /** Per pattern: its public text, whether it matched, and the text of its spans. */
    declared: result.declared.map((d) => [
      d.pattern,
      d.matched,
      d.spans.map((s) => `${s.direction}:${texts(transcript[s.direction], [s])[0]}`),
    ]),
  };
}

const request = (head: string, body = "") => utf8(`${head}\r\n\r\n${body}`);
const emptyResponse = utf8("HTTP/1.1 204 No Content\r\n\r\n");
const plainResponse = (headers: string, body: string) =>
  utf8(`HTTP/1.1 200 OK\r\n${headers}Content-Length: ${utf8(body).length}\r\n\r\n${body}`);
const chunkedResponse = (headers: string, body: string, sizes: number[], trailer = "") =>
  concat(`HTTP/1.1 200 OK\r\n${headers}Transfer-Encoding: chunked\r\n\r\n`, chunked(body, sizes, trailer));

describe("headers", () => {
  const sent = request("GET /x HTTP/1.1\r\nHost: api.example\r\nauthorization:  Bearer tok \r\nX-Key: k1\r\nX-KEY: k2\r\nX-None:");

  test("req:header hides every value of that name, any case; names stay visible", () => {
    const r = redact({ sent, recv: emptyResponse }, "req:header:x-key,req:header:AUTHORIZATION");
    expect(r.sent).toBe("GET /x HTTP/1.1\r\nHost: api.example\r\nauthorization:  ********** \r\nX-Key: **\r\nX-KEY: **\r\nX-None:\r\n\r\n");
    expect(r.declared).toEqual([
      ["req:header:x-key", true, ["sent:k1", "sent:k2"]],
      ["req:header:AUTHORIZATION", true, ["sent:Bearer tok"]],
    ]);
    expect(r.recv).toBe("HTTP/1.1 204 No Content\r\n\r\n");
  });

  test("an empty value has nothing to hide: unmatched; an absent header: unmatched", () => {
    const r = redact({ sent, recv: emptyResponse }, "req:header:x-none,req:header:cookie,reveal:req:header:authorization");
    expect(r.declared).toEqual([
      ["req:header:x-none", false, []],
      ["req:header:cookie", false, []],
    ]);
    expect(r.result.unmatched).toEqual([1, 2]);
    expect(r.result.hidden).toEqual({ sent: [], recv: [] });
  });

  test("res:header covers trailers and interim responses, never the request", () => {
    const recv = concat(
      "HTTP/1.1 100 Continue\r\nSet-Cookie: early\r\n\r\n",
      chunkedResponse("Set-Cookie: a=1; Secure\r\n", "{}", [], "set-cookie: late\r\n"),
    );
    const r = redact({ sent: request("GET / HTTP/1.1\r\nSet-Cookie: req"), recv }, "res:header:Set-Cookie");
    expect(r.declared).toEqual([["res:header:Set-Cookie", true, ["recv:early", "recv:a=1; Secure", "recv:late"]]]);
    expect(r.sent).toContain("Set-Cookie: req");
  });
});

describe("bodies", () => {
  const json = `{"user":{"name":"Zoë \\"Z\\"","age":41,"tags":["a","b"],"ok":true,"none":null},"items":[{"price":9.5},{"price":-1e3}]}`;
  const sent = request(`POST /api HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${utf8(json).length}`, json);

  test("req:body: strings with quotes, numbers, literals, arrays and objects whole; keys visible", () => {
    const r = redact({ sent, recv: emptyResponse }, "req:body:user.name,req:body:items.1.price,req:body:user.tags,req:body:user.ok,req:body:user.none");
    expect(r.declared.map((d) => d[2])).toEqual([
      [`sent:"Zoë \\"Z\\""`],
      ["sent:-1e3"],
      [`sent:["a","b"]`],
      ["sent:true"],
      ["sent:null"],
    ]);
    expect(r.sent.endsWith(`{"user":{"name":************,"age":41,"tags":*********,"ok":****,"none":****},"items":[{"price":9.5},{"price":****}]}`)).toBe(true);
  });

  test("res:body on a chunked body: a value split across chunks is hidden piece by piece, framing visible", () => {
    const body = `{"token":"abcdefgh","n":1}`;
    const recv = chunkedResponse("", body, [12, 3]);
    const r = redact({ sent, recv }, "res:body:token");
    expect(r.declared).toEqual([["res:body:token", true, ['recv:"ab', "recv:cde", 'recv:fgh"']]]);
    expect(r.recv).toBe(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nc\r\n{"token":***\r\n3\r\n***\r\nb\r\n****,"n":1}\r\n0\r\n\r\n`);
  });

  test("a chunk boundary inside a key still finds the key", () => {
    const recv = chunkedResponse("", `{"secret":1}`, [4]);
    expect(redact({ sent, recv }, "res:body:secret").declared).toEqual([["res:body:secret", true, ["recv:1"]]]);
  });

  test("empty path hides the whole body: plain, and every data piece of a chunked one", () => {
    const plain = redact({ sent, recv: plainResponse("", "not json at all") }, "res:body:,req:body:");
    expect(plain.declared).toEqual([
      ["res:body:", true, ["recv:not json at all"]],
      ["req:body:", true, [`sent:${json}`]],
    ]);
    const recv = chunkedResponse("", "hello world", [5]);
    expect(redact({ sent, recv }, "res:body:").recv).toBe(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n*****\r\n6\r\n******\r\n0\r\n\r\n",
    );
  });

  test("a non-JSON body: a non-empty path matches nothing", () => {
    const r = redact({ sent, recv: plainResponse("", `{"a":1} trailing`) }, "res:body:a");
    expect(r.declared).toEqual([["res:body:a", false, []]]);
  });

  test("an empty body: even the empty path has nothing to hide", () => {
    expect(redact({ sent, recv: emptyResponse }, "res:body:").declared).toEqual([["res:body:", false, []]]);
  });
});

describe("request target", () => {
  const recv = plainResponse("", "{}");

  test("res:query: every parameter of that name, raw bytes, names visible", () => {
    const sent = request("GET /v1/q?key=one&a%20b=enc&other=x&key=two%2Fthree&key&keys=no&kez=no#key=frag HTTP/1.1\r\nHost: h");
    const r = redact({ sent, recv }, "res:query:key,res:query:a%20b,res:query:KEY");
    expect(r.declared).toEqual([
      ["res:query:key", true, ["sent:one", "sent:two%2Fthree"]],
      ["res:query:a%20b", true, ["sent:enc"]],
      ["res:query:KEY", false, []],
    ]);
    expect(r.sent.startsWith("GET /v1/q?key=***&a%20b=***&other=x&key=***********&key&keys=no&kez=no#key=frag HTTP/1.1")).toBe(true);
  });

  test("res:path: 1-based segments; trailing slash and query do not shift them", () => {
    const hide = (target: string, header: string) => redact({ sent: request(`GET ${target} HTTP/1.1`), recv }, header).declared;
    expect(hide("/a/b/c", "res:path:2")).toEqual([["res:path:2", true, ["sent:b"]]]);
    expect(hide("/users/42/?x=1", "res:path:2,res:path:3")).toEqual([
      ["res:path:2", true, ["sent:42"]],
      ["res:path:3", false, []],
    ]);
    expect(hide("/a/b?c=/d/e", "res:path:3")).toEqual([["res:path:3", false, []]]);
    expect(hide("https://h.example/x/y", "res:path:1")).toEqual([["res:path:1", true, ["sent:x"]]]);
  });
});

describe("search", () => {
  test("every occurrence in status line, headers and body; the request's copies as echoes", () => {
    const sent = request("GET /?q=needle HTTP/1.1");
    const recv = plainResponse("X-Echo: needle\r\n", `{"a":"needle","b":"needleneedle"}`);
    const r = redact({ sent, recv }, "search:needle");
    // Adjacent occurrences merge into one span.
    expect(r.declared[0]?.[2]).toEqual(["recv:needle", "recv:needle", "recv:needleneedle"]);
    expect(r.declared[1]).toEqual(["echo:*", true, ["sent:needle"]]);
    expect(r.recv).not.toContain("needle");
    expect(r.sent).not.toContain("needle");
    expect(redact({ sent, recv }, "search:200 OK").recv.startsWith("HTTP/1.1 ******\r\n")).toBe(true);
  });

  test("overlapping occurrences are all hidden", () => {
    const r = redact({ sent: request("GET / HTTP/1.1"), recv: plainResponse("", "xaaay") }, "search:aa");
    expect(r.recv.endsWith("x***y")).toBe(true);
  });

  test("finds text split by chunk boundaries, hides each piece, leaves framing visible", () => {
    const recv = chunkedResponse("", "say hello world", [6, 1, 3]);
    const r = redact({ sent: request("GET / HTTP/1.1"), recv }, "search:hello w");
    expect(r.declared).toEqual([["search:*", true, ["recv:he", "recv:l", "recv:lo ", "recv:w"]]]);
    expect(r.recv).toBe("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsay **\r\n1\r\n*\r\n3\r\n***\r\n5\r\n*orld\r\n0\r\n\r\n");
  });

  test("chunk framing is not searchable", () => {
    const recv = chunkedResponse("", "ab", [1]);
    expect(redact({ sent: request("GET / HTTP/1.1"), recv }, "search:a\r\n1").declared).toEqual([["search:*", false, []]]);
  });

  test("byte-wise UTF-8", () => {
    const recv = plainResponse("", `{"city":"Zürich","emoji":"😀"}`);
    const r = redact({ sent: request("GET / HTTP/1.1"), recv }, "search:ürich,search:😀");
    expect(r.declared.map((d) => d[2])).toEqual([["recv:ürich"], ["recv:😀"]]);
  });

  test("the search text appears nowhere in the result", () => {
    const recv = plainResponse("", "has sk_live_123 inside");
    const r = redact({ sent: request("GET / HTTP/1.1"), recv }, "search:sk_live_123,search:sk_absent_456");
    const published = JSON.stringify(r.result.declared);
    expect(published).not.toContain("sk_live_123");
    expect(published).not.toContain("sk_absent_456");
    expect(r.declared.map((d) => [d[0], d[1]])).toEqual([["search:*", true], ["search:*", false]]);
  });
});

describe("every pattern is located on the full transcript: order never changes what is hidden", () => {
  const sent = request("GET /a HTTP/1.1");
  const recv = plainResponse("X-Secret: v\r\n", `{"secret":"value","other":"secret"}`);

  test("an earlier search hiding a key does not stop a later body path from finding it", () => {
    for (const header of ["search:secret,res:body:secret", "res:body:secret,search:secret"]) {
      const r = redact({ sent, recv }, header);
      expect(r.recv.endsWith(`{"******":*******,"other":"******"}`)).toBe(true);
      expect(r.result.unmatched).toEqual([]);
    }
    expect(redact({ sent, recv }, "search:secret,res:body:secret").declared).toEqual([
      ["search:*", true, ["recv:secret", "recv:secret"]],
      ["res:body:secret", true, ['recv:"value"']],
    ]);
  });

  test("a header name hidden by a search still locates the header's value", () => {
    const r = redact({ sent, recv }, "search:Secret,res:header:x-secret");
    expect(r.declared[1]).toEqual(["res:header:x-secret", true, ["recv:v"]]);
    expect(r.recv).toContain("X-******: *\r\n");
  });

  test("a search text inside a value already hidden is still found, and listed", () => {
    const r = redact({ sent, recv }, "res:body:secret,search:value");
    expect(r.declared).toEqual([
      ["res:body:secret", true, ['recv:"value"']],
      ["search:*", true, ["recv:value"]],
    ]);
  });

  test("a longer search containing a shorter one is found after it", () => {
    const recv = plainResponse("", `{"t":"secret-token-123"}`);
    const r = redact({ sent, recv }, "search:token,search:secret-token-123");
    expect(r.declared.map((d) => d[1])).toEqual([true, true]);
    expect(r.recv.endsWith(`{"t":"****************"}`)).toBe(true);
  });
});

describe("overlapping and nested spans never un-hide anything", () => {
  const sent = request("GET / HTTP/1.1");
  const recv = plainResponse("", `{"outer":{"inner":"xyz","tail":"0123456789"}}`);
  const outer = `{"inner":"xyz","tail":"0123456789"}`;
  const start = utf8(`HTTP/1.1 200 OK\r\nContent-Length: 46\r\n\r\n{"outer":`).length;

  test("nested body paths, both orders: the outer value stays hidden whole", () => {
    for (const header of ["res:body:outer,res:body:outer.inner", "res:body:outer.inner,res:body:outer"]) {
      const r = redact({ sent, recv }, header);
      expect(r.result.hidden.recv).toEqual([{ start, end: start + utf8(outer).length }]);
    }
  });

  test("a short span starting inside a long one (the last_end bug) does not shorten it", () => {
    // search:234 comes first, so its span is found; the outer value then contains it. Sorted by start the long
    // span comes first and the short one ends earlier: merging with `last_end = r.end` would reveal "789"}.
    const r = redact({ sent, recv }, "search:234,res:body:outer");
    expect(r.result.hidden.recv).toEqual([{ start, end: start + utf8(outer).length }]);
    expect(r.recv.endsWith(`{"outer":${"*".repeat(utf8(outer).length)}}`)).toBe(true);
    expect(revealedRanges(recv.length, r.result.hidden.recv)).toEqual([
      { start: 0, end: start },
      { start: start + utf8(outer).length, end: recv.length },
    ]);
  });
});

describe("robustness", () => {
  test("garbage and truncated transcripts never throw; hidden stays inside the transcript", () => {
    const patterns = parseRedactions("req:header:a,req:body:,req:body:a.0,res:header:b,res:body:,res:body:x.y,res:query:q,res:path:1,search:a");
    const full = {
      sent: request("POST /a/b?q=1 HTTP/1.1\r\nA: 1\r\nContent-Length: 9", `{"a":[1]}`),
      recv: chunkedResponse("B: 2\r\n", `{"x":{"y":"aaa"}}`, [3, 4]),
    };
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({ sent: fc.uint8Array({ maxLength: 60 }), recv: fc.uint8Array({ maxLength: 60 }) }),
          fc.record({ cutSent: fc.nat(full.sent.length), cutRecv: fc.nat(full.recv.length) }).map(({ cutSent, cutRecv }) => ({
            sent: full.sent.subarray(0, cutSent),
            recv: full.recv.subarray(0, cutRecv),
          })),
        ),
        (transcript) => {
          const { hidden, declared } = computeRedactions(transcript, patterns);
          expect(declared.length).toBeGreaterThanOrEqual(patterns.length);
          for (const direction of ["sent", "recv"] as const) {
            for (const r of hidden[direction]) expect(0 <= r.start && r.start < r.end && r.end <= transcript[direction].length).toBe(true);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe("what a client writes is what is hidden, or the proof is refused", () => {
  const sent = request("GET /a HTTP/1.1");

  test("whitespace after the prefix is ignored for every kind", () => {
    const recv = plainResponse("X-Token: t0k3n-value\r\n", `{"balance":1234,"note":"s3cr3t"}`);
    const r = redact({ sent, recv }, "res:body: balance, search:  s3cr3t ,res:header:\tx-token");
    expect(r.declared).toEqual([
      ["res:body:balance", true, ["recv:1234"]],
      ["search:*", true, ["recv:s3cr3t"]],
      ["res:header:x-token", true, ["recv:t0k3n-value"]],
    ]);
    expect(r.result.unmatched).toEqual([]);
  });

  test("keys containing dots, commas and backslashes are addressed with backslash escapes", () => {
    const recv = plainResponse("", String.raw`{"a.b":{"c,d":1,"e\\f":2},"a":{"b":3}}`);
    const r = redact({ sent, recv }, String.raw`res:body:a\.b.c\,d,res:body:a\.b.e\\f`);
    expect(r.declared).toEqual([
      [String.raw`res:body:a\.b.c\,d`, true, ["recv:1"]],
      [String.raw`res:body:a\.b.e\\f`, true, ["recv:2"]],
    ]);
    expect(r.recv.endsWith(`"b":3}}`)).toBe(true);
  });

  test("a body with a byte-order mark is JSON", () => {
    const recv = concat("HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n", new Uint8Array([0xef, 0xbb, 0xbf]), `{"k":"vv"}`);
    expect(redact({ sent, recv }, "res:body:k").declared).toEqual([["res:body:k", true, ['recv:"vv"']]]);
  });

  test("a compressed or non-JSON body: body paths are unmatched, by position", () => {
    const gzip = concat("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 6\r\n\r\n", new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0]));
    const r = computeRedactions({ sent, recv: gzip }, parseRedactions("res:header:content-encoding,res:body:balance,res:body:"));
    expect(r.unmatched).toEqual([2]);
    const text = computeRedactions({ sent, recv: plainResponse("", "balance=12") }, parseRedactions("search:balance,res:body:balance"));
    expect(text.unmatched).toEqual([2]);
  });

  test("search finds the secret written with JSON escapes, and hides the escapes whole", () => {
    const recv = plainResponse("", String.raw`{"a":"x\u0041BC/d","b":"ABC\/d","c":"\ud83d\ude00!"}`);
    const r = redact({ sent, recv }, "search:ABC/d,search:😀!");
    expect(r.declared).toEqual([
      ["search:*", true, [String.raw`recv:\u0041BC/d`, String.raw`recv:ABC\/d`]],
      ["search:*", true, [String.raw`recv:\ud83d\ude00!`]],
    ]);
    expect(r.recv.endsWith(String.raw`{"a":"x**********","b":"******","c":"*************"}`)).toBe(true);
  });

  test("unmatched lists client entries only: reveal entries and default headers never count", () => {
    const r = computeRedactions({ sent, recv: emptyResponse }, parseRedactions("reveal:req:header:cookie,res:header:x-a,req:header:host"));
    expect(r.unmatched).toEqual([2, 3]);
  });
});

describe("echoes: a hidden value met again elsewhere is hidden too", () => {
  test("a request body value echoed in the response body and a header, listed as echo:*", () => {
    const body = `{"user":"ann","password":"hunter22"}`;
    const sent = request(`POST /login HTTP/1.1\r\nContent-Length: ${body.length}`, body);
    const recv = plainResponse("X-Debug: pw=hunter22\r\n", `{"echo":{"user":"ann","password":"hunter22"},"msg":"bad \\"hunter22\\""}`);
    const r = redact({ sent, recv }, "req:body:password");
    expect(r.declared).toEqual([
      ["req:body:password", true, ['sent:"hunter22"']],
      // The quoted value, written with escaped quotes inside a JSON string, is found whole.
      ["echo:*", true, ["recv:hunter22", 'recv:"hunter22"', String.raw`recv:\"hunter22\"`]],
    ]);
    expect(r.recv).not.toContain("hunter22");
  });

  test("JSON-escaped echoes of a header value; values shorter than 4 bytes are not looked for", () => {
    const sent = request("GET / HTTP/1.1\r\nX-Key: k/ey-1\r\nX-Short: abc");
    const recv = plainResponse("", String.raw`{"seen":"k\/ey-1","short":"abc"}`);
    const r = redact({ sent, recv }, "req:header:x-key,req:header:x-short");
    expect(r.declared[2]).toEqual(["echo:*", true, [String.raw`recv:k\/ey-1`]]);
    expect(r.recv).toContain(`"short":"abc"`);
  });

  test("a value under 4 bytes is not looked for in a longer spelling, nor a longer value in a spelling under 4 bytes", () => {
    const sent = request('GET /?key=%41%42 HTTP/1.1\r\nX-Short: a"b');
    const recv = plainResponse("", String.raw`{"note":"a\"b","AB":1}`);
    const r = redact({ sent, recv }, "req:header:x-short,res:query:key");
    expect(r.sent).toStartWith("GET /?key=****** HTTP/1.1\r\nX-Short: ***\r\n");
    expect(r.recv).toEndWith(String.raw`{"note":"a\"b","AB":1}`);
  });

  test("a value echoed in the request itself is hidden there too", () => {
    const sent = request("GET /?token=abcd1234 HTTP/1.1\r\nX-Echo: abcd1234");
    const r = redact({ sent, recv: emptyResponse }, "res:query:token");
    expect(r.sent).not.toContain("abcd1234");
    expect(r.declared[1]).toEqual(["echo:*", true, ["sent:abcd1234"]]);
  });
});

describe("echoes of the secrets inside a hidden value, and of other spellings of it", () => {
  const textResponse = (body: string) => plainResponse("Content-Type: text/plain\r\n", body);
  const basic = (credential: string) => `Basic ${Buffer.from(credential).toString("base64")}`;
  const stars = (text: string) => "*".repeat(utf8(text).length);

  test("a default-hidden bearer token, echoed without its scheme in an error body", () => {
    const sent = request("GET /v1/charges HTTP/1.1\r\nAuthorization: Bearer sk_live_51HxQabc");
    const recv = plainResponse("", `{"error":{"message":"invalid api key sk_live_51HxQabc","type":"auth"}}`);
    const r = redact({ sent, recv }, "");
    expect(r.recv).toContain(`"invalid api key ****************"`);
    expect(r.declared).toEqual([
      ["default:req:header:authorization", true, ["sent:Bearer sk_live_51HxQabc"]],
      ["echo:*", true, ["recv:sk_live_51HxQabc"]],
    ]);
  });

  test("each cookie value of a hidden Cookie header and the value Set-Cookie sets; short values stay", () => {
    const sent = request("GET / HTTP/1.1\r\nCookie: sid=sess-a1b2c3; lang=en; theme=dark");
    const recv = plainResponse("Set-Cookie: refresh=rt-998877; Path=/; HttpOnly\r\n", "session sess-a1b2c3 expired; renew with rt-998877 (lang en, theme dark)");
    const r = redact({ sent, recv }, "");
    expect(r.recv).toContain("session *********** expired; renew with ********* (lang en, theme dark)");
    expect(r.recv).toContain(`Set-Cookie: ${stars("refresh=rt-998877; Path=/; HttpOnly")}\r\n`);
  });

  test("a decoded Basic credential: user:password, the user and the password, each from 6 bytes", () => {
    const sent = request(`GET / HTTP/1.1\r\nAuthorization: ${basic("api-user:hunter2pw")}`);
    const recv = textResponse("who: api-user\npw: hunter2pw\nboth: api-user:hunter2pw\nuser: api");
    const r = redact({ sent, recv }, "");
    expect(r.recv).toEndWith("who: ********\npw: *********\nboth: ******************\nuser: api");
    // A user or password under 6 bytes is not looked for alone (it would hide every "admin"); whole, it is.
    const short = redact({ sent: request(`GET / HTTP/1.1\r\nAuthorization: ${basic("admin:s3cr3t-pw")}`), recv: textResponse("admin: admin:s3cr3t-pw / s3cr3t-pw") }, "");
    expect(short.recv).toEndWith("admin: *************** / *********");
  });

  test("a hidden value echoed percent-encoded, in any case, form-encoded, and across chunk framing", () => {
    const body = `{"password":"p@ss w/rd"}`;
    const sent = request(`POST /login HTTP/1.1\r\nContent-Length: ${body.length}`, body);
    const echoed = "next=/retry?pw=p%40ss%20w%2Frd&raw=p%40ss+w%2frd&all=%70%40%73%73%20%77%2F%72%64";
    const r = redact({ sent, recv: textResponse(echoed) }, "req:body:password");
    expect(r.recv).toEndWith(`next=/retry?pw=${stars("p%40ss%20w%2Frd")}&raw=${stars("p%40ss+w%2frd")}&all=${stars("%70%40%73%73%20%77%2F%72%64")}`);
    const split = redact({ sent, recv: chunkedResponse("", `go to /x?pw=p%40ss%20w%2Frd now`, [17]) }, "req:body:password");
    expect(split.recv).not.toMatch(/p%40|w%2Frd/);
    expect(split.recv).toContain("go to /x?pw=");
    expect(split.recv).toContain(" now");
  });

  test("a percent-encoded query value echoed decoded; a value with JSON escapes echoed in a non-JSON body", () => {
    const sent = request("GET /search?key=tok%2Fab%3D12 HTTP/1.1\r\nX-Pass: say \"hi\\there\"");
    const recv = textResponse(`<script>var k = "tok/ab=12", p = "say \\"hi\\\\there\\"";</script>`);
    const r = redact({ sent, recv }, "res:query:key,req:header:x-pass");
    expect(r.recv).toEndWith(`<script>var k = "${stars("tok/ab=12")}", p = "${stars(String.raw`say \"hi\\there\"`)}";</script>`);
  });

  test("property: a credential, a cookie value or a hidden value, echoed in any spelling, is never revealed", () => {
    const spell: ((value: string) => string)[] = [
      (value) => value,
      encodeURIComponent,
      (value) => encodeURIComponent(value).replaceAll("%20", "+"),
      (value) => encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
      (value) => JSON.stringify(value).slice(1, -1),
    ];
    const secret = fc.string({ unit: fc.constantFrom(..."aZ09_-.~+/= \"\\@:%é"), minLength: 6, maxLength: 16 });
    const carriers = [
      (value: string) => ({ header: `Authorization: Bearer ${value}`, patterns: "" }),
      (value: string) => ({ header: `Cookie: a=1; sid=${value}; b=2`, patterns: "" }),
      (value: string) => ({ header: `Authorization: ${basic(`someone:${value}`)}`, patterns: "" }),
      (value: string) => ({ header: `X-Key: ${value}`, patterns: "req:header:x-key" }),
    ];
    fc.assert(
      fc.property(secret, fc.nat(spell.length - 1), fc.nat(carriers.length - 1), fc.string({ maxLength: 5 }), (value, how, carrier, filler) => {
        const tokenLike = /^[A-Za-z0-9\-._~+/]+=*$/.test(value);
        const cookieLike = !/[;\s"]/.test(value);
        fc.pre(carrier === 0 ? tokenLike : carrier === 1 ? cookieLike : carrier !== 3 || value.trim() === value);
        const { header, patterns } = carriers[carrier]!(value);
        const echo = spell[how]!(value);
        const before = `error <${filler}> for `;
        const recv = textResponse(`${before}${echo} !`);
        const r = redact({ sent: request(`GET / HTTP/1.1\r\n${header}`), recv }, patterns);
        const start = recv.length - utf8(`${echo} !`).length;
        const hidden = r.result.hidden.recv;
        for (let at = start; at < start + utf8(echo).length; at++) {
          expect(hidden.some((range) => range.start <= at && at < range.end)).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });
});

describe("credential headers are hidden by default", () => {
  const sent = request("GET / HTTP/1.1\r\nAuthorization: Bearer abc\r\nProxy-Authorization: Basic eHk=\r\nCookie: sid=42");
  const recv = utf8("HTTP/1.1 204 No Content\r\nSet-Cookie: sid=43; HttpOnly\r\n\r\n");

  test("values hidden, names visible, listed as default: entries", () => {
    const r = redact({ sent, recv }, "");
    expect(r.sent).toBe("GET / HTTP/1.1\r\nAuthorization: **********\r\nProxy-Authorization: **********\r\nCookie: ******\r\n\r\n");
    expect(r.recv).toBe("HTTP/1.1 204 No Content\r\nSet-Cookie: ****************\r\n\r\n");
    expect(r.declared.map((d) => d[0])).toEqual([
      "default:req:header:authorization",
      "default:req:header:proxy-authorization",
      "default:req:header:cookie",
      "default:res:header:set-cookie",
    ]);
    expect(r.result.unmatched).toEqual([]);
  });

  test("a pattern naming the same header elsewhere, or a query parameter of that name, leaves the default in place", () => {
    const r = redact({ sent, recv }, "res:header:cookie,res:query:authorization");
    expect(r.sent).toBe("GET / HTTP/1.1\r\nAuthorization: **********\r\nProxy-Authorization: **********\r\nCookie: ******\r\n\r\n");
    expect(r.declared.map((d) => d[0])).toEqual([
      "res:header:cookie",
      "res:query:authorization",
      "default:req:header:authorization",
      "default:req:header:proxy-authorization",
      "default:req:header:cookie",
      "default:res:header:set-cookie",
    ]);
  });

  test("reveal: shows one of them; naming one explicitly lists the client's entry instead", () => {
    const r = redact({ sent, recv }, "reveal:req:header:Cookie,reveal:res:header:set-cookie,req:header:AUTHORIZATION");
    expect(r.sent).toContain("Cookie: sid=42");
    expect(r.recv).toContain("Set-Cookie: sid=43; HttpOnly");
    expect(r.declared.map((d) => d[0])).toEqual(["req:header:AUTHORIZATION", "default:req:header:proxy-authorization"]);
  });
});

describe("hidden by default by their names: request headers and query parameters that say they hold a secret", () => {
  const sent = request(
    "GET /v1/quote?symbol=ETH&token=t0k-777777&user=u1 HTTP/1.1\r\nHost: api.example\r\nAuthorization: Bearer b-1234567\r\nX-API-KEY: k-1234567\r\nx-api-key: k-7654321\r\nX-Session-Id: s-9876543\r\nToken: h-5555555\r\nAccept: */*",
  );

  test("each such name once, in the request's order, after the fixed list; what no name says stays visible", () => {
    const r = redact({ sent, recv: emptyResponse }, "");
    expect(r.declared).toEqual([
      ["default:req:header:authorization", true, ["sent:Bearer b-1234567"]],
      ["default:req:header:x-api-key", true, ["sent:k-1234567", "sent:k-7654321"]],
      ["default:req:header:x-session-id", true, ["sent:s-9876543"]],
      ["default:req:header:token", true, ["sent:h-5555555"]],
      ["default:res:query:token", true, ["sent:t0k-777777"]],
    ]);
    expect(r.sent).toContain("symbol=ETH&token=");
    expect(r.sent).toContain("&user=u1 ");
    expect(r.sent).toContain("Accept: */*");
  });

  test("a reveal shows exactly the kind and name it says: the Token header, not the token query parameter", () => {
    const r = redact({ sent, recv: emptyResponse }, "reveal:req:header:token, reveal:req:header:X-Api-Key");
    expect(r.declared.map(([pattern]) => pattern)).toEqual(["default:req:header:authorization", "default:req:header:x-session-id", "default:res:query:token"]);
    expect(r.sent).toContain("Token: h-5555555");
    expect(r.sent).toContain("X-API-KEY: k-1234567");
    expect(r.sent).not.toContain("t0k-777777");
    const query = redact({ sent, recv: emptyResponse }, "reveal:res:query:token");
    expect(query.sent).toContain("token=t0k-777777");
    expect(query.sent).not.toContain("h-5555555");
  });

  test("a name holding bytes outside ASCII is matched byte for byte, only its ASCII letters folded", () => {
    // Bun's parser refuses such names, so no client of the prover can send one; computeRedactions still holds for any bytes.
    const latin1 = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
    const sent = concat(latin1("GET / HTTP/1.1\r\nHost: api.example\r\nX-\xc9-Token: v-1111111\r\nX-\xe9-TOKEN: v-2222222\r\nX-\x80-Token: v-3333333\r\n\r\n"));
    const r = redact({ sent, recv: emptyResponse }, "");
    expect(r.declared.map(([, matched, spans]) => [matched, spans])).toEqual([
      [true, ["sent:v-1111111"]],
      [true, ["sent:v-2222222"]],
      [true, ["sent:v-3333333"]],
    ]);
    expect(r.sent).toEndWith("Token: *********\r\n\r\n");
    for (const value of ["v-1111111", "v-2222222", "v-3333333"]) expect(r.sent).not.toContain(value);
  });

  test("a request line with no target names no query parameter", () => {
    const r = redact({ sent: request("GET\r\nHost: api.example"), recv: emptyResponse }, "");
    expect(r.declared).toEqual([]);
  });
});
