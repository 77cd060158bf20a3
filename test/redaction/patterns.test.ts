import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { AppError } from "../../src/core/errors.ts";
import { parseRedactions, publicPattern } from "../../src/redaction/index.ts";
import { DEFAULT_HIDDEN, entryText, isDefaultHidden, isSecretHeaderName, MAX_ENTRIES, MAX_ENTRY_LENGTH } from "../../src/redaction/patterns.ts";

function parseError(header: string): AppError {
  try {
    parseRedactions(header);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected parseRedactions to throw");
}

describe("parseRedactions", () => {
  test("absent or blank header: no patterns", () => {
    expect(parseRedactions(undefined)).toEqual([]);
    expect(parseRedactions("")).toEqual([]);
    expect(parseRedactions("  \t ")).toEqual([]);
  });

  test("every kind, in order, whitespace around entries ignored", () => {
    expect(
      parseRedactions(
        " req:header:Authorization ,req:body:user.tokens.0,res:header:set-cookie,  res:body:,res:body:items.3.price," +
          "res:query:api_key,res:path:2,search:hello world",
      ),
    ).toEqual([
      { kind: "req:header", name: "Authorization" },
      { kind: "req:body", path: ["user", "tokens", "0"] },
      { kind: "res:header", name: "set-cookie" },
      { kind: "res:body", path: [] },
      { kind: "res:body", path: ["items", "3", "price"] },
      { kind: "res:query", name: "api_key" },
      { kind: "res:path", segment: 2 },
      { kind: "search", text: "hello world" },
    ]);
  });

  test("search text keeps colons and inner spaces", () => {
    expect(parseRedactions("search:a:b c")).toEqual([{ kind: "search", text: "a:b c" }]);
  });

  test("query names are kept as raw bytes, percent-encoding included", () => {
    expect(parseRedactions("res:query:a%20b")).toEqual([{ kind: "res:query", name: "a%20b" }]);
  });

  const malformed: [string, string, number, RegExp][] = [
    ["unknown prefix", "req:headers:x", 1, /unknown kind/],
    ["prefix without colon", "search", 1, /unknown kind/],
    ["upper-case prefix", "REQ:HEADER:x", 1, /unknown kind/],
    ["missing header name", "res:header:", 1, /missing header name/],
    ["header name with a space", "req:header:x y", 1, /header name/],
    ["missing query name", "res:query:", 1, /missing query/],
    ["query name with =", "res:query:a=b", 1, /query parameter name/],
    ["path 0", "res:path:0", 1, /whole number/],
    ["path x", "res:path:x", 1, /whole number/],
    ["path with leading zero", "res:path:01", 1, /whole number/],
    ["negative path", "res:path:-1", 1, /whole number/],
    ["empty path number", "res:path:", 1, /whole number/],
    ["path number followed by text", "res:path:2a", 1, /whole number/],
    ["huge path", "res:path:99999999999999999999", 1, /too large/],
    ["empty search", "search:", 1, /empty search/],
    ["empty entry between commas", "req:header:a,,search:x", 2, /empty entry/],
    ["trailing comma", "req:header:a,", 2, /empty entry/],
    ["blank entry", "req:header:a, ,search:x", 2, /empty entry/],
    ["empty body path segment", "res:body:a..b", 1, /empty segment/],
    ["leading dot in body path", "req:body:.a", 1, /empty segment/],
    ["trailing dot in body path", "res:body:a.", 1, /empty segment/],
    ["error in third entry", "res:path:1,search:ok,res:paht:2", 3, /unknown kind/],
  ];
  for (const [name, header, position, problem] of malformed) {
    test(`rejects: ${name}`, () => {
      const error = parseError(header);
      expect(error.code).toBe("invalid_redaction");
      expect(error.message).toMatch(new RegExp(`entry ${position}:`));
      expect(error.message).toMatch(problem);
      expect(error.details).toEqual({ entry: position });
    });
  }

  test("error messages never echo the entry's text", () => {
    for (const header of [
      "Bearer-sk_live_abcdef123",
      "req:header:sk_live abcdef123",
      "res:query:sk_live=abcdef123",
      "res:path:sk_live_abcdef123",
      "res:body:sk_live..abcdef123",
      "search:ok,,Bearer-sk_live_abcdef123",
    ]) {
      const error = parseError(header);
      expect(error.message).not.toContain("sk_live");
      expect(error.message).not.toContain("abcdef123");
    }
  });
});

describe("whitespace, escapes, reveal and limits", () => {
  test("whitespace after the prefix is ignored for every kind", () => {
    expect(parseRedactions("req:header: X-A ,res:body:\ta.b ,res:query: q,res:path: 2,search:  s3cr3t ,reveal: req:header:cookie")).toEqual([
      { kind: "req:header", name: "X-A" },
      { kind: "res:body", path: ["a", "b"] },
      { kind: "res:query", name: "q" },
      { kind: "res:path", segment: 2 },
      { kind: "search", text: "s3cr3t" },
      { kind: "reveal", header: { kind: "req:header", name: "cookie" } },
    ]);
  });

  test("backslash escapes: a dot inside a key, a comma inside an entry, a backslash", () => {
    expect(parseRedactions(String.raw`res:body:a\.b.c\,d.e\\f,search:x\,y`)).toEqual([
      { kind: "res:body", path: ["a.b", "c,d", "e\\f"] },
      { kind: "search", text: "x,y" },
    ]);
    expect(parseError(String.raw`search:a\nb`).message).toMatch(/entry 1: a backslash/);
    expect(parseError("search:a\\").message).toMatch(/entry 1: a backslash/);
  });

  test("reveal: only what is hidden by default (secret-named headers and query parameters), never together with hiding it", () => {
    expect(parseError("reveal:RES:HEADER:set-cookie").message).toMatch(/entry 1: reveal: applies only to/);
    expect(parseRedactions("reveal:res:header:Set-Cookie")).toEqual([
      { kind: "reveal", header: { kind: "res:header", name: "set-cookie" } },
    ]);
    expect(parseRedactions("reveal:req:header:X-Api-Key, reveal:req:header:x-client-secret, reveal:res:query:API_KEY")).toEqual([
      { kind: "reveal", header: { kind: "req:header", name: "x-api-key" } },
      { kind: "reveal", header: { kind: "req:header", name: "x-client-secret" } },
      { kind: "reveal", header: { kind: "res:query", name: "api_key" } },
    ]);
    for (const notHidden of ["reveal:req:header:accept", "reveal:res:query:user", "reveal:res:header:x-secret-token"]) {
      expect(parseError(notHidden).message).toMatch(/entry 1: reveal: applies only to what is hidden by default/);
    }
    expect(parseError("req:header:Cookie,reveal:req:header:cookie").message).toMatch(/entry 2: reveals what entry 1 hides/);
    expect(parseError("req:header:X-Session-Id,reveal:req:header:x-session-id").message).toMatch(/entry 2: reveals what entry 1 hides/);
  });

  test("secret names: the documented list, case-blind", () => {
    for (const name of ["Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key", "X-Auth-Token", "X-Access-Token", "X-CSRF-Token", "X-Client-Secret", "X-Password", "X-Session-Id", "X-My-Api-Key", "X-Apikey"]) {
      expect(isSecretHeaderName(name)).toBe(true);
    }
    for (const name of ["Accept", "Host", "Content-Type", "X-Account", "X-Request-Id", "User-Agent", "Connection"]) expect(isSecretHeaderName(name)).toBe(false);
    for (const name of ["api_key", "APIKEY", "access_token", "token", "key", "sig", "signature"]) expect(isDefaultHidden("res:query", name)).toBe(true);
    for (const name of ["user", "keys", "page", "api-key"]) expect(isDefaultHidden("res:query", name)).toBe(false);
    expect(isDefaultHidden("res:header", "Set-Cookie")).toBe(true);
    for (const [kind, name] of [["res:body", "set-cookie"], ["res:header", "x-api-key"], ["req:body", "token"]]) expect(isDefaultHidden(kind!, name!)).toBe(false);
  });

  test("at most MAX_ENTRIES entries of MAX_ENTRY_LENGTH characters", () => {
    expect(parseRedactions(Array(MAX_ENTRIES).fill("search:x").join(","))).toHaveLength(MAX_ENTRIES);
    const tooMany = parseError(Array(MAX_ENTRIES + 1).fill("search:x").join(","));
    expect(tooMany.message).toBe(`T-REDACTED entry ${MAX_ENTRIES + 1}: at most ${MAX_ENTRIES} entries`);
    expect(tooMany.details).toEqual({ entry: MAX_ENTRIES + 1 });
    expect(parseRedactions(`search:${"x".repeat(MAX_ENTRY_LENGTH - "search:".length)}`)).toHaveLength(1);
    expect(parseError(`search:${"x".repeat(MAX_ENTRY_LENGTH - "search:".length + 1)}`).message).toBe(`T-REDACTED entry 1: longer than ${MAX_ENTRY_LENGTH} characters`);
  });

  test("an unknown kind or reveal target is refused naming what is accepted", () => {
    expect(parseError("req:hdr:x").message).toBe(
      "T-REDACTED entry 1: unknown kind (expected one of req:header:, req:body:, res:header:, res:body:, res:query:, res:path:, search:, reveal:)",
    );
    expect(parseError("reveal:req:header:accept").message).toBe(
      "T-REDACTED entry 1: reveal: applies only to what is hidden by default: req:header:authorization, proxy-authorization, cookie, x-api-key, api-key, x-auth-token, x-access-token or a name holding token, secret, password, session, api-key, apikey; res:query:api_key, apikey, access_token, token, key, sig, signature; res:header:set-cookie",
    );
  });
});

describe("entryText", () => {
  test("a reveal entry is written as the client wrote it, in normal form, and reads back the same", () => {
    for (const header of DEFAULT_HIDDEN) {
      const pattern = { kind: "reveal" as const, header };
      expect(entryText(pattern)).toBe(`reveal:${header.kind}:${header.name}`);
      expect(parseRedactions(entryText(pattern))).toEqual([pattern]);
    }
  });
});

describe("publicPattern", () => {
  test("the entry as given, except search text", () => {
    const header = "req:header:X-Key,req:body:,res:body:a.0.b,res:header:Set-Cookie,res:query:k%41,res:path:12,search:my secret";
    expect(parseRedactions(header).map(publicPattern)).toEqual([
      "req:header:X-Key",
      "req:body:",
      "res:body:a.0.b",
      "res:header:Set-Cookie",
      "res:query:k%41",
      "res:path:12",
      "search:*",
    ]);
  });
});

/** Entries near the grammar: valid and invalid prefixes followed by random text. */
const nearEntry = fc
  .tuple(
    fc.constantFrom("req:header:", "res:header:", "req:body:", "res:body:", "res:query:", "res:path:", "search:", "res:", "", " ", "req:hdr:"),
    fc.oneof(fc.string({ maxLength: 12 }), fc.stringMatching(/^[0-9a-z.=&%#?\\,\- ]{0,8}$/), fc.constantFrom("0", "1", "12", "a.b", "a..b", "a\\.b", "k\\,v", "x\\\\y")),
  )
  .map(([prefix, rest]) => prefix + rest);

describe("parser fuzz", () => {
  test("any string: a list of patterns or AppError invalid_redaction, nothing else", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: "binary", maxLength: 40 }), fc.array(nearEntry, { maxLength: 5 }).map((e) => e.join(","))),
        (header) => {
          let patterns;
          try {
            patterns = parseRedactions(header);
          } catch (error) {
            expect(error).toBeInstanceOf(AppError);
            expect((error as AppError).code).toBe("invalid_redaction");
            return;
          }
          expect(Array.isArray(patterns)).toBe(true);
          // Whatever parses round-trips through its public text (search text aside).
          for (const pattern of patterns) {
            const text = publicPattern(pattern);
            if (pattern.kind === "search") expect(text).toBe("search:*");
            else expect(parseRedactions(text)).toEqual([pattern]);
            // And through its entry text, search text included.
            expect(parseRedactions(entryText(pattern))).toEqual([pattern]);
          }
        },
      ),
      { numRuns: 20_000 },
    );
  }, 60_000);

  test("a secret in a rejected entry never appears in the message", () => {
    fc.assert(
      fc.property(
        // Each shape is malformed whatever the secret: parseError fails the property if nothing is rejected.
        fc.constantFrom<[string, string]>(
          ["req:header:", " x"],
          ["res:query:", "=1"],
          ["res:path:x", ""],
          ["res:body:a..", ""],
          ["bogus:", ""],
          ["", ""],
          ["search:,", ""],
          ["search:", "\\x"],
          ["reveal:", ""],
          ["req:header:a,res:path:0", ",search:"],
        ),
        fc.stringMatching(/^[A-Za-z0-9]{8,16}$/),
        ([prefix, suffix], secret) => {
          const error = parseError(prefix + secret + suffix);
          expect(error.code).toBe("invalid_redaction");
          expect(error.message).not.toContain(secret);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
