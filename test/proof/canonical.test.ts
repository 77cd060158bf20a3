import { describe, expect, test } from "bun:test";
import { canonicalEncoding, canonicalPrefix, canonicalJson } from "../../src/proof/canonical.ts";
import type { ProofBody } from "../../src/proof/format.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { legacySampleBody } from "./fixtures.ts";

/** The same value with every object's keys inserted in reverse order. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([key, item]) => [key, reverseKeys(item)]));
}

describe("canonicalJson", () => {
  test("fixed vector: sorted keys by UTF-16 code units, no whitespace, JSON.stringify strings", () => {
    const value = {
      b: [1, "x\n\"q\"", true, null, -7, 0],
      a: { é: -5, Z: "\u0001", aa: 0, "\uff61": 1, "\u{1f600}": 2 },
      "": false,
    };
    // "\u{1f600}" is the surrogate pair D83D DE00, which sorts before U+FF61 by code unit
    // (though after it by code point); é (U+00E9) sorts after "aa".
    const expected = '{"":false,"a":{"Z":"\\u0001","aa":0,"é":-5,"\u{1f600}":2,"\uff61":1},"b":[1,"x\\n\\"q\\"",true,null,-7,0]}';
    expect(canonicalJson(value)).toBe(expected);
  });

  test("negative zero is written 0 and safe integer bounds are accepted", () => {
    expect(canonicalJson([-0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER])).toBe("[0,9007199254740991,-9007199254740991]");
  });

  test.each([
    ["fraction", { a: 1.5 }, "$.a"],
    ["unsafe integer", { a: [2 ** 53] }, "$.a[0]"],
    ["NaN", { n: Number.NaN }, "$.n"],
    ["Infinity", { n: Number.POSITIVE_INFINITY }, "$.n"],
    ["undefined member", { u: undefined }, "$.u"],
    ["bigint", { b: 1n }, "$.b"],
    ["Date", { d: new Date(0) }, "$.d"],
  ])("rejects %s, naming the path", (_, value, path) => {
    expect(() => canonicalJson(value)).toThrow(path);
  });

  test("the path named is the whole path to the value, from the root given", () => {
    const deep = { a: [{ b: [1, { c: 0.5 }] }] };
    expect(() => canonicalJson(deep)).toThrow(new TypeError("canonical JSON: $.a[0].b[1].c is not a safe integer: 0.5"));
    expect(() => canonicalJson(deep, "body")).toThrow(new TypeError("canonical JSON: body.a[0].b[1].c is not a safe integer: 0.5"));
    expect(() => canonicalJson([1, { d: () => 0 }])).toThrow(new TypeError("canonical JSON: $[1].d cannot be encoded (function)"));
  });
});

describe("canonicalEncoding", () => {
  // The body of a fixed vector: the sample as signed before the answer's checked fields existed.
  const body = legacySampleBody(generateKey("secp256k1"));

  test("is the prefix then the canonical JSON, as UTF-8", () => {
    const text = new TextDecoder().decode(canonicalEncoding("tlsproof/1", body));
    expect(canonicalPrefix("tlsproof/1")).toBe("tlsproof/1\n");
    expect(text.startsWith('tlsproof/1\n{"connectionTime":1717171717,"notarizedAt":1717171720123,"notary":{"algorithm":"secp256k1","publicKey":"-----BEGIN PUBLIC KEY-----\\n')).toBe(true);
    expect(text).toContain('"notaryVersion":"0.1.0","redactions":[{"matched":true,"pattern":"header:authorization","spans":[{"direction":"sent","end":91,"start":71}]}');
    const json = text.slice(canonicalPrefix("tlsproof/1").length);
    // No whitespace between tokens: re-serialising the parsed text gives it back unchanged.
    expect(JSON.stringify(JSON.parse(json))).toBe(json);
    expect(Object.keys(JSON.parse(json))).toEqual([
      "connectionTime", "notarizedAt", "notary", "notaryVersion", "redactions",
      "requestId", "serverName", "testTrustAnchor", "tlsVersion", "transcript",
    ]);
  });

  test("does not depend on key insertion order", () => {
    const reordered = reverseKeys(body) as ProofBody;
    expect(Object.keys(reordered)[0]).toBe("notaryVersion");
    expect(canonicalEncoding("tlsproof/1", reordered)).toEqual(canonicalEncoding("tlsproof/1", body));
  });

  test("any changed field changes the bytes", () => {
    const changed = { ...body, serverName: "api.example.org" };
    expect(canonicalEncoding("tlsproof/1", changed)).not.toEqual(canonicalEncoding("tlsproof/1", body));
  });

  test("the version is signed with the body: another version, other bytes", () => {
    const text = new TextDecoder().decode(canonicalEncoding("tlsproof/2", body));
    expect(text.startsWith('tlsproof/2\n{"connectionTime":')).toBe(true);
    expect(canonicalEncoding("tlsproof/2", body)).not.toEqual(canonicalEncoding("tlsproof/1", body));
  });
});
