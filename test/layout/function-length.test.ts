import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * No function of src/ is over 80 lines (docs/design.md): a longer one holds several concerns. Functions are found by
 * reading the code as tokens (strings, template literals, comments and regular expressions set aside): a body is a
 * `{` after a parameter list (and its return type) or after `=>`; its length is from the line of its start to the
 * line of its `}`, nested functions included.
 */
const REPO = resolve(import.meta.dir, "../..");
const MAX_LINES = 80;
const NOT_FUNCTIONS = new Set(["if", "for", "while", "switch", "catch", "with", "return", "typeof", "await", "void", "in", "of", "new", "delete"]);

/** The code with strings, templates, comments and regular expressions blanked out (their line breaks kept). */
function blankOut(code: string): string {
  let out = "";
  let i = 0;
  const templateDepths: number[] = [];
  let braces = 0;
  /** Whether a `/` here starts a regular expression: after an operator, a bracket or a keyword, not after a value. */
  const regexAllowed = () => {
    let end = out.length;
    while (end > 0 && /\s/.test(out[end - 1]!)) end--;
    const last = out[end - 1] ?? "";
    if (/[\w$]/.test(last)) return /\b(return|typeof|case|in|of|void|yield|await|delete|new|else|do)$/.test(out.slice(Math.max(0, end - 12), end));
    return !/[)\]}"'`]/.test(last);
  };
  const skip = (end: number) => {
    out += code.slice(i, end).replace(/[^\n]/g, " ");
    i = end;
  };
  while (i < code.length) {
    const c = code[i]!;
    const next = code[i + 1];
    if (c === "/" && next === "/") skip(code.indexOf("\n", i) === -1 ? code.length : code.indexOf("\n", i));
    else if (c === "/" && next === "*") skip(code.indexOf("*/", i + 2) + 2);
    else if (c === '"' || c === "'") {
      let j = i + 1;
      while (code[j] !== c) j += code[j] === "\\" ? 2 : 1;
      skip(j + 1);
    } else if (c === "`" || (c === "}" && templateDepths.at(-1) === braces)) {
      if (c === "}") templateDepths.pop();
      let j = i + 1;
      while (code[j] !== "`" && !(code[j] === "$" && code[j + 1] === "{")) j += code[j] === "\\" ? 2 : 1;
      if (code[j] === "$") {
        templateDepths.push(braces);
        skip(j + 2);
      } else skip(j + 1);
    } else if (c === "/" && regexAllowed()) {
      let j = i + 1;
      let inClass = false;
      while (code[j] !== "/" || inClass) {
        if (code[j] === "\\") j++;
        else if (code[j] === "[") inClass = true;
        else if (code[j] === "]") inClass = false;
        j++;
      }
      skip(j + 1);
    } else {
      if (c === "{") braces++;
      if (c === "}") braces--;
      out += c;
      i++;
    }
  }
  return out;
}

/** The index of the bracket closing the one at `open`. */
function closing(code: string, open: number): number {
  const pairs: Record<string, string> = { "(": ")", "[": "]", "{": "}", "<": ">" };
  const stack: string[] = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i]!;
    if (c in pairs && (c !== "<" || code[open] === "<")) stack.push(pairs[c]!);
    else if (c === stack.at(-1)) {
      stack.pop();
      if (stack.length === 0) return i;
    } else if (c === "=" && code[i + 1] === ">") i++;
  }
  return -1;
}

/** Where the body after a parameter list ending at `close` opens: past `: ReturnType`, at a `{`; -1 when none (a call). */
function bodyAfterParameters(code: string, close: number): number {
  let i = close + 1;
  while (/\s/.test(code[i] ?? "")) i++;
  if (code[i] === "{") return i;
  if (code[i] !== ":") return -1;
  let previous = ":";
  for (i++; i < code.length; i++) {
    const c = code[i]!;
    if (/\s/.test(c)) continue;
    if (c === "=" && code[i + 1] === ">") return -1; // an arrow function's return type: found at its =>
    if (c === "{" && /[\w$>\])}?]/.test(previous)) return i; // after a type: the body
    if ("{(<[".includes(c)) {
      i = closing(code, i);
      if (i < 0) return -1;
      previous = code[i]!;
      continue;
    }
    if (";,=)}".includes(c)) return -1;
    previous = c;
  }
  return -1;
}

interface FunctionSpan {
  line: number;
  lines: number;
  name: string;
}

/** Every function body of a file, with its first line and its length in lines. */
function functionSpans(source: string): FunctionSpan[] {
  const code = blankOut(source);
  const lineStarts = [0, ...[...code.matchAll(/\n/g)].map((match) => match.index + 1)];
  const lineOf = (index: number) => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (lineStarts[middle]! <= index) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const spans: FunctionSpan[] = [];
  const add = (start: number, body: number, name: string) => {
    const end = closing(code, body);
    if (end > 0) spans.push({ line: lineOf(start), lines: lineOf(end) - lineOf(start) + 1, name });
  };
  for (const arrow of code.matchAll(/=>\s*\{/g)) add(arrow.index, arrow.index + arrow[0].length - 1, "arrow function");
  for (const open of code.matchAll(/\(/g)) {
    const close = closing(code, open.index);
    const body = close < 0 ? -1 : bodyAfterParameters(code, close);
    if (body < 0) continue;
    // Its name: the word before the parameters (and their type parameters), if any.
    const name = /([\w$]*)\s*(?:<[^()]*>)?\s*$/.exec(code.slice(Math.max(0, open.index - 200), open.index))?.[1] ?? "";
    if (!NOT_FUNCTIONS.has(name)) add(open.index, body, name || "function");
  }
  return spans;
}

describe("function length", () => {
  test("the scanner finds functions of every shape, and not what only looks like one", () => {
    const sample = [
      "export function plain(a: number): Promise<{ x: number }> {", "  return f(`${a}`);", "}",
      "const arrow = async (a: string): Promise<void> => {", "  if (a) {", "    g(/[{(]/);", "  }", "};",
      "class K {", "  method(): void {", '    const s = "{";', "  }", "}",
      "function typed(): { a: number; b: string } {", "  return { a: 1, b: `}` };", "}",
      "const notOne = call(x) + { a: 1 };",
    ].join("\n");
    expect(functionSpans(sample).map(({ name, line, lines }) => [name, line, lines]).sort()).toEqual([
      ["arrow function", 4, 5],
      ["method", 10, 3],
      ["plain", 1, 3],
      ["typed", 14, 3],
    ]);
  });

  test(`no function in src/ is over ${MAX_LINES} lines`, () => {
    const long: string[] = [];
    let files = 0;
    for (const path of new Bun.Glob("src/**/*.ts").scanSync(REPO)) {
      files++;
      for (const span of functionSpans(readFileSync(join(REPO, path), "utf8"))) {
        if (span.lines > MAX_LINES) long.push(`${path}:${span.line} ${span.name} (${span.lines} lines)`);
      }
    }
    expect(files).toBeGreaterThan(150);
    expect(long).toEqual([]);
  });
});
