import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decodeString, type JsonNode, parseJson, valuesAtPath } from "../../src/http1/json.ts";
import { texts, utf8 } from "../redaction/fixtures/transcript.ts";

function at(json: string, path: string[]): string[] {
  const bytes = utf8(json);
  const root = parseJson(bytes);
  if (!root) throw new Error("not JSON");
  return texts(bytes, valuesAtPath(root, path).map((n) => n.range));
}

describe("parseJson", () => {
  test("scalars: strings keep their quotes, numbers, true/false/null", () => {
    const json = ` {"s": "a\\"b\\\\c\\u00e9\\n", "n": -12.5e+3, "z": 0, "t": true, "f": false, "x": null, "e": ""} `;
    expect(at(json, ["s"])).toEqual([`"a\\"b\\\\c\\u00e9\\n"`]);
    expect(at(json, ["n"])).toEqual(["-12.5e+3"]);
    expect(at(json, ["z"])).toEqual(["0"]);
    expect(at(json, ["t"])).toEqual(["true"]);
    expect(at(json, ["f"])).toEqual(["false"]);
    expect(at(json, ["x"])).toEqual(["null"]);
    expect(at(json, ["e"])).toEqual([`""`]);
    expect(at(json, [])).toEqual([json.trim()]);
  });

  test("objects and arrays whole, nested paths, array indices", () => {
    const json = `{"a":{"b":[1,{"c":"d"},[2,3]]},"list":[ {"p":1} , {"p":2} ]}`;
    expect(at(json, ["a"])).toEqual([`{"b":[1,{"c":"d"},[2,3]]}`]);
    expect(at(json, ["a", "b"])).toEqual([`[1,{"c":"d"},[2,3]]`]);
    expect(at(json, ["a", "b", "1", "c"])).toEqual([`"d"`]);
    expect(at(json, ["a", "b", "2", "1"])).toEqual(["3"]);
    expect(at(json, ["list", "1", "p"])).toEqual(["2"]);
    expect(at(json, ["list", "2"])).toEqual([]);
    expect(at(json, ["a", "b", "x"])).toEqual([]);
    expect(at(json, ["a", "b", "01"])).toEqual([]);
    expect(at(json, ["missing"])).toEqual([]);
    expect(at(`[10,20]`, ["1"])).toEqual(["20"]);
  });

  test("keys compare decoded: escapes and UTF-8", () => {
    expect(at(`{"\\u0061b":1}`, ["ab"])).toEqual(["1"]);
    expect(at(`{"caf\\u00e9":1,"café":2}`, ["café"])).toEqual(["1", "2"]);
    expect(at(`{"\\ud83d\\ude00":"smile"}`, ["😀"])).toEqual([`"smile"`]);
    expect(at(`{"a\\"b":1}`, ['a"b'])).toEqual(["1"]);
    // A numeric segment names a key on an object.
    expect(at(`{"0":"zero"}`, ["0"])).toEqual([`"zero"`]);
  });

  test("duplicate keys: every one is selected", () => {
    expect(at(`{"k":1,"k":2}`, ["k"])).toEqual(["1", "2"]);
  });

  test("offsets are byte offsets in UTF-8", () => {
    const json = `{"é":"ü","x":"y"}`;
    const root = parseJson(utf8(json));
    expect(root?.kind).toBe("object");
    const members = root?.kind === "object" ? root.members : [];
    expect(members.map((m) => [m.key, m.keyRange, m.value.range])).toEqual([
      ["é", { start: 1, end: 5 }, { start: 6, end: 10 }],
      ["x", { start: 11, end: 14 }, { start: 15, end: 18 }],
    ]);
  });

  test("a leading byte-order mark is skipped; offsets stay those of the bytes given", () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8(`{"a":1}`)]);
    expect(valuesAtPath(parseJson(bytes)!, ["a"]).map((n) => n.range)).toEqual([{ start: 8, end: 9 }]);
    expect(parseJson(new Uint8Array([0xef, 0xbb, ...utf8(`{"a":1}`)]))).toBeNull();
  });

  test("with hidden bytes: a hidden run is a value or a key; hidden bytes inside a string are its content", () => {
    const text = `{"a":#####,"b":"x##y",###:1}`;
    const bytes = utf8(text);
    const root = parseJson(bytes, (pos) => text[pos] === "#");
    expect(root?.kind).toBe("object");
    const members = root?.kind === "object" ? root.members : [];
    expect(members.map((m) => [m.key, m.value.kind, texts(bytes, [m.value.range])[0]])).toEqual([
      ["a", "hidden", "#####"],
      ["b", "string", `"x##y"`],
      [null, "scalar", "1"],
    ]);
    // Hidden bytes cutting a number leave no structure to read.
    expect(parseJson(utf8(`[12##]`), (pos) => pos === 3 || pos === 4)).toBeNull();
  });

  test("decodeString: each decoded byte maps to the escape it came from", () => {
    const text = String.raw`"a\/\u00e9\ud83d\ude00\ud800x"`;
    const decoded = decodeString(utf8(text), { start: 0, end: utf8(text).length });
    expect(new TextDecoder().decode(decoded.bytes)).toBe("a/é😀\ufffdx");
    expect(decoded.sources.map((r) => text.slice(r.start, r.end))).toEqual([
      "a", "\\/", "\\u00e9", "\\u00e9", ...Array(4).fill("\\ud83d\\ude00"), ...Array(3).fill("\\ud800"), "x",
    ]);
  });

  const invalid = [
    "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "'a'", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "True",
    "\"abc", "\"a\\x\"", "\"\\u12G4\"", "\"tab\there\"", "{} {}", "[1] x", "NaN", "{\"a\" 1}", "[1 2]",
  ];
  for (const text of invalid) {
    test(`not JSON: ${JSON.stringify(text)}`, () => expect(parseJson(utf8(text))).toBeNull());
  }

  test("a \\u escape takes hex digits in either case, and nothing else", () => {
    for (const digit of ["0", "9", "A", "F", "a", "f"]) expect(parseJson(utf8(`"\\u00${digit}9"`))).not.toBeNull();
    for (const other of ["G", "g", "@", "!", "/", ":"]) expect(parseJson(utf8(`"\\u00${other}9"`))).toBeNull();
  });

  test("only input that is not JSON gives null: an error of the caller's `hidden` is thrown on", () => {
    expect(parseJson(utf8(""))).toBeNull();
    expect(() =>
      parseJson(utf8('{"a": 1}'), () => {
        throw new Error("the caller's own error");
      }),
    ).toThrow("the caller's own error");
  });

  test("very deep nesting is not JSON, without blowing the stack", () => {
    expect(parseJson(utf8("[".repeat(100_000) + "]".repeat(100_000)))).toBeNull();
    expect(parseJson(utf8("[".repeat(100) + "]".repeat(100)))).not.toBeNull();
  });

  /** Every node's bytes parse (with JSON.parse) to the value found at that path in the original. */
  function checkRanges(bytes: Uint8Array, node: JsonNode, expected: unknown) {
    expect(JSON.parse(new TextDecoder().decode(bytes.subarray(node.range.start, node.range.end)))).toEqual(expected);
    if (node.kind === "array") node.items.forEach((item, i) => checkRanges(bytes, item, (expected as unknown[])[i]));
    if (node.kind === "object") {
      for (const m of node.members) {
        expect(JSON.parse(new TextDecoder().decode(bytes.subarray(m.keyRange.start, m.keyRange.end)))).toBe(m.key);
        checkRanges(bytes, m.value, (expected as Record<string, unknown>)[m.key!]);
      }
    }
  }

  test("agrees with JSON.parse on generated JSON, node by node", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(0, 1, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        if (text === undefined) return;
        const bytes = utf8(text);
        const root = parseJson(bytes);
        expect(root).not.toBeNull();
        // Duplicate keys cannot come out of JSON.stringify, so the last-wins of JSON.parse is no issue here.
        checkRanges(bytes, root!, JSON.parse(text));
      }),
      { numRuns: 1_000 },
    );
  });

  test("accepts exactly what JSON.parse accepts, on mutated JSON", () => {
    const mutated = fc
      .tuple(fc.json({ maxDepth: 2 }), fc.nat(), fc.constantFrom("", ",", "]", "}", '"', "\\", "-", "0", " ", "e", "\u0001", "\n"), fc.nat(3))
      .map(([text, at, insert, cut]) => {
        const i = at % (text.length + 1);
        return text.slice(0, i) + insert + text.slice(i + cut);
      });
    fc.assert(
      fc.property(fc.oneof(mutated, fc.string({ maxLength: 12 })), (text) => {
        let valid = true;
        try {
          JSON.parse(text);
        } catch {
          valid = false;
        }
        expect(parseJson(utf8(text)) !== null).toBe(valid);
      }),
      { numRuns: 3_000 },
    );
  });
});
