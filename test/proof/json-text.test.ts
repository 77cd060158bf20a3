import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { jsonTextProblem } from "../../src/proof/json-text.ts";

describe("jsonTextProblem: strings end where JSON says", () => {
  test("an escaped quote or backslash inside a string does not end it", () => {
    expect(jsonTextProblem('{"a":"x\\"y","a":1}')).toBe('duplicate key "a" at the top level');
    expect(jsonTextProblem('{"a":"x\\\\","b":1,"b":2}')).toBe('duplicate key "b" at the top level');
    expect(jsonTextProblem('{"a":"\\\\\\"\\\\","b":1,"b":2}')).toBe('duplicate key "b" at the top level');
    expect(jsonTextProblem('{"a\\"b":1,"a\\"b":2}')).toBe('duplicate key "a\\"b" at the top level');
  });

  test("a text that is one string, its first character escaped", () => {
    expect(jsonTextProblem('"\\n"')).toBeNull();
    expect(jsonTextProblem('"\\"1.0"')).toBeNull();
  });

  test("what looks like a key or a number inside a string is neither", () => {
    expect(jsonTextProblem('{"a":"\\",\\"a\\":1.0","b":1}')).toBeNull();
    expect(jsonTextProblem('{"s":"\\\\","n":1.0}')).toBe("non-canonical number 1.0 at n");
  });

  test("a number is named by its path: the top level, a member, an array's item counted from 0", () => {
    expect(jsonTextProblem("1.0")).toBe("non-canonical number 1.0 at the top level");
    expect(jsonTextProblem('{"a":[1,"x",1.0]}')).toBe("non-canonical number 1.0 at a[2]");
    expect(jsonTextProblem('{"a":{"b":[[2e0]]}}')).toBe("non-canonical number 2e0 at a.b[0][0]");
  });

  test("equal strings in an array are no duplicate keys", () => {
    expect(jsonTextProblem('{"list":["a","a"],"b":["a","a"]}')).toBeNull();
  });

  test("backslashes far apart, and strings between them that hold none", () => {
    const long = "A".repeat(100_000);
    expect(jsonTextProblem(`{"a":"${long}","b":"\\n","c":"${long}","d":"${long}\\\\","d":1}`)).toBe('duplicate key "d" at the top level');
    expect(jsonTextProblem(`{"a":"\\t${long}","b":"${long}","b":"\\\\"}`)).toBe('duplicate key "b" at the top level');
  });

  test("agrees with JSON.parse on where keys are: any text JSON.stringify writes has no problem, one key written twice has", () => {
    const key = fc.string({ unit: fc.constantFrom("a", '"', "\\", "\n", "\u0001", "é", "/") , maxLength: 6 });
    fc.assert(
      fc.property(fc.dictionary(key, fc.oneof(key, fc.integer()), { maxKeys: 5 }), key, (object, extra) => {
        const text = JSON.stringify({ ...object, [extra]: 1 });
        expect(jsonTextProblem(text)).toBeNull();
        expect(jsonTextProblem(`${text.slice(0, -1)},${JSON.stringify(extra)}:2}`)).toBe(`duplicate key ${JSON.stringify(extra)} at the top level`);
      }),
      { numRuns: 2_000 },
    );
  });
});
