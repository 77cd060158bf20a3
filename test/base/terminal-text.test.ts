import { describe, expect, test } from "bun:test";
import { jsonSafe, terminalLine, terminalText, unsafePieces } from "../../src/base/terminal-text.ts";

describe("terminal-safe text", () => {
  test("C0, DEL, C1, bidi, zero-width, BOM, separators and tag characters are written as \\uNNNN", () => {
    const cases: [string, string][] = [
      ["\u001b[31m", "\\u001b[31m"],
      ["\u0000\u0007\b\r", "\\u0000\\u0007\\u0008\\u000d"],
      ["\u007f\u0085\u009b", "\\u007f\\u0085\\u009b"],
      ["\u202a\u202e\u2066\u2069\u200e\u200f\u061c", "\\u202a\\u202e\\u2066\\u2069\\u200e\\u200f\\u061c"],
      ["\u200b\u200c\u200d\u2060\ufeff\u00ad", "\\u200b\\u200c\\u200d\\u2060\\ufeff\\u00ad"],
      ["\u2028\u2029", "\\u2028\\u2029"],
      ["\u{e0041}\u{e007f}", "\\u{e0041}\\u{e007f}"],
      ["plain é ✓ █ 日本", "plain é ✓ █ 日本"],
    ];
    for (const [raw, shown] of cases) expect({ raw, shown: terminalLine(raw) }).toEqual({ raw, shown });
  });

  test("one line escapes line breaks and tabs; several lines keep LF and tab, CR LF becomes LF, a lone CR is escaped", () => {
    expect(terminalLine("a\nb\tc")).toBe("a\\u000ab\\u0009c");
    expect(terminalText("a\r\nb\nc\td\re")).toBe("a\nb\nc\td\\u000de");
  });

  test("escaping is idempotent: an escape is printable ASCII", () => {
    const once = terminalLine("\u001b\u202e\u{e0041}x");
    expect(terminalLine(once)).toBe(once);
  });

  test("JSON: the same value for a parser, nothing raw a terminal acts on", () => {
    const value = { text: "a\u007f\u009b\u202e\u200b\u2028\u{e0041}b\u001b" };
    const json = jsonSafe(JSON.stringify(value, null, 2));
    expect(json).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}\u2028\u2029]/u);
    expect(JSON.parse(json)).toEqual(value);
  });

  test("pieces mark each unsafe character on its own, line feeds (CR LF too) and tabs not", () => {
    expect(unsafePieces("x\r\ny\rz")).toEqual([
      { text: "x", unsafe: false },
      { text: "\n", unsafe: false },
      { text: "y", unsafe: false },
      { text: "\r", unsafe: true },
      { text: "z", unsafe: false },
    ]);
    expect(unsafePieces("a\u200bb\nc\u001b")).toEqual([
      { text: "a", unsafe: false },
      { text: "\u200b", unsafe: true },
      { text: "b", unsafe: false },
      { text: "\n", unsafe: false },
      { text: "c", unsafe: false },
      { text: "\u001b", unsafe: true },
    ]);
  });
});
