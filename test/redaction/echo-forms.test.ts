/**
 * The pieces and spellings of hidden values the echo guard looks for: credentials.ts (what is inside a
 * header's value), encodings.ts (spellings of a value), percent.ts (percent-encoded text decoded in place).
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { credentialParts } from "../../src/redaction/credentials.ts";
import { echoSpellings } from "../../src/redaction/encodings.ts";
import { percentDecoded, percentEncodedRuns } from "../../src/redaction/percent.ts";
import { utf8 } from "./fixtures/transcript.ts";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");
const parts = (name: string, value: string) => {
  const found = credentialParts(name, Buffer.from(value, "latin1"));
  return { whole: found.whole.map(text), parts: found.parts.map(text) };
};
const basic = (credential: string) => `Basic ${Buffer.from(credential, "latin1").toString("base64")}`;

describe("credentialParts: the secrets inside a header's value", () => {
  test("the credential after any auth scheme", () => {
    expect(parts("authorization", "Bearer sk_live_51HxQ")).toEqual({ whole: [], parts: ["sk_live_51HxQ"] });
    expect(parts("x-api-key", "Token  abc.def-ghi==")).toEqual({ whole: [], parts: ["abc.def-ghi=="] });
    expect(parts("authorization", "sk_live_51HxQ")).toEqual({ whole: [], parts: [] });
    // Not `scheme token68`: auth-params, a media type, free text.
    expect(parts("authorization", 'Digest username="bob", realm="x"')).toEqual({ whole: [], parts: [] });
    expect(parts("x-note", "application/json; charset=utf-8")).toEqual({ whole: [], parts: [] });
    // The whole value is `scheme credential`, not only its end.
    expect(parts("x-note", "three plain words")).toEqual({ whole: [], parts: [] });
    // Only Basic is decoded, though another scheme's credential may look like base64.
    expect(parts("authorization", "Bearer dXNlcjpwYXNz")).toEqual({ whole: [], parts: ["dXNlcjpwYXNz"] });
  });

  test("Basic: the credential, its decoded user:password, the user and the password", () => {
    const header = basic("api-user:correct horse");
    expect(parts("Proxy-Authorization", header)).toEqual({
      whole: ["api-user:correct horse"],
      parts: [header.slice(6), "api-user", "correct horse"],
    });
    // The password may hold colons; the user id cannot (RFC 7617).
    expect(parts("authorization", basic("u:p:w")).parts.slice(1)).toEqual(["u", "p:w"]);
    // An API key as the user and no password (as Stripe's API takes it).
    expect(parts("authorization", basic("sk_test_123:")).parts.slice(1)).toEqual(["sk_test_123", ""]);
    // No user, a password: the colon still divides them.
    expect(parts("authorization", basic(":hunter2pw"))).toEqual({ whole: [":hunter2pw"], parts: [basic(":hunter2pw").slice(6), "", "hunter2pw"] });
    expect(parts("authorization", basic("no-colon-here"))).toEqual({ whole: ["no-colon-here"], parts: [basic("no-colon-here").slice(6)] });
    // Unpadded base64 is read too; bytes that are not base64 are only a credential.
    expect(parts("authorization", "basic dXNlcjpwYXNz").whole).toEqual(["user:pass"]);
    expect(parts("authorization", "Basic abc")).toEqual({ whole: ["i·"], parts: ["abc"] });
    expect(parts("authorization", "Basic a")).toEqual({ whole: [], parts: ["a"] });
  });

  test("Cookie: each cookie's value, quoted ones also without quotes; Set-Cookie: the value it sets", () => {
    expect(parts("cookie", 'sid=abc123; theme=dark;flag; q="quoted val"')).toEqual({
      whole: [],
      parts: ["abc123", "dark", '"quoted val"', "quoted val"],
    });
    expect(parts("Set-Cookie", "sid=xyz789; Path=/; HttpOnly; Domain=example.com")).toEqual({ whole: [], parts: ["xyz789"] });
    // Spaces around a value are not part of it; a nameless cookie has a value; a quote at one end only, or a lone
    // quote, is part of the value; an empty quoted value is the empty string inside.
    expect(parts("cookie", 'e=  spaced  ;=nameless; b=abc"; c="abc; a="; d=""')).toEqual({
      whole: [],
      parts: ["spaced", "nameless", 'abc"', '"abc', '"', '""', ""],
    });
    // Another header with the same text is not split into cookies.
    expect(parts("x-cookie-copy", "sid=abc123; theme=dark")).toEqual({ whole: [], parts: [] });
  });
});

describe("echoSpellings: the value, percent-decoded, with + for space, JSON-escaped", () => {
  const spellings = (value: string) => [...new Set(echoSpellings(utf8(value)).map((s) => Buffer.from(s).toString()))];

  test("a plain token has one spelling", () => {
    expect(spellings("sk_live_51HxQ")).toEqual(["sk_live_51HxQ"]);
  });

  test("percent-decoded, and + for each space", () => {
    expect(spellings("a%2Fb%20c")).toEqual(["a%2Fb%20c", "a/b c", "a/b+c", String.raw`a\/b c`]);
  });

  test("JSON escapes: quotes, backslashes, controls; \\/ for slashes; \\u for non-ASCII", () => {
    expect(spellings('p"w\\d')).toEqual(['p"w\\d', String.raw`p\"w\\d`]);
    expect(spellings("tab\there")).toEqual(["tab\there", String.raw`tab\there`]);
    expect(spellings("pässwörd😀")).toEqual(["pässwörd😀", String.raw`p\u00e4ssw\u00f6rd\ud83d\ude00`]);
  });

  test("bytes that are not UTF-8 have no JSON spelling", () => {
    expect(echoSpellings(Uint8Array.from([0xff, 0xfe, 0x41, 0x22]))).toHaveLength(1);
  });
});

describe("percent-encoded runs", () => {
  const runs = (input: string) => percentEncodedRuns(utf8(input)).map((run) => Buffer.from(run.bytes).toString("latin1"));

  test("only runs of URI characters holding an escape, each decoded; + kept; bad escapes kept as written", () => {
    expect(runs('see "https://x.example/?k=a%2fb%2Bc+d&z=1" or %zz and plain')).toEqual(["https://x.example/?k=a/b+c+d&z=1"]);
    expect(runs("100% sure, %4")).toEqual([]);
    expect(runs("%41%42%43\r\n%44")).toEqual(["ABC", "D"]);
  });

  test("an escape is % and two hex digits, 0-9, A-F or a-f, any byte from %00 on", () => {
    // The characters just past each range of hex digits are not digits: `:` and `@` after 9, `W` to backquote.
    expect(runs("a%4:b %@1 %W1 %_Z %G0 %5z")).toEqual([]);
    expect(runs("a%00b %0Ab %fFc")).toEqual(["a\0b", "\nb", "\xffc"]);
    expect([...percentDecoded(utf8("%00%0a"))!]).toEqual([0, 10]);
  });

  test("each decoded byte's source is the escape or the byte that wrote it", () => {
    const input = utf8("x y%41b%2");
    const [run] = percentEncodedRuns(input);
    expect(run!.sources).toEqual([
      { start: 2, end: 3 },
      { start: 3, end: 6 },
      { start: 6, end: 7 },
      { start: 7, end: 8 },
      { start: 8, end: 9 },
    ]);
  });

  test("percentDecoded: null without escapes", () => {
    expect(percentDecoded(utf8("plain+text"))).toBeNull();
    expect(text(percentDecoded(utf8("a%3Db"))!)).toBe("a=b");
  });

  test("property: any encoder's output decodes back to the value, and its sources cover the encoded text", () => {
    const encoders: ((value: string) => string)[] = [
      encodeURIComponent,
      (value) => encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
      // RFC 3986 strict: also !'()* escaped.
      (value) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
      // Every byte escaped.
      (value) => Array.from(utf8(value), (b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    ];
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: encoders.length - 1 }), (value, which) => {
        const encoded = encoders[which]!(value);
        fc.pre(encoded.includes("%"));
        const input = utf8(`<p>${encoded}</p>`);
        const found = percentEncodedRuns(input);
        expect(found).toHaveLength(1);
        expect(Buffer.from(found[0]!.bytes).toString()).toBe(value);
        expect(found[0]!.sources[0]!.start).toBe(3);
        expect(found[0]!.sources.at(-1)!.end).toBe(3 + encoded.length);
      }),
      { numRuns: 500 },
    );
  });
});
