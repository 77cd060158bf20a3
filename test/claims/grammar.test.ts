import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { AppError } from "../../src/core/errors.ts";
import { CLAIM_SALT, claimText, MAX_CLAIM_LENGTH, MAX_CLAIMS, parseClaims, RECIPIENT } from "../../src/claims/grammar.ts";

function refusal(header: string): AppError {
  try {
    parseClaims(header);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`expected ${JSON.stringify(header)} to be refused`);
}

describe("the T-CLAIM grammar", () => {
  test("values, comparisons of every kind of literal, and commitments", () => {
    expect(parseClaims(' res:body:balance>1000, res:body:currency == EUR ,res:body:name, commit:res:body:balance, res:status!=404, res:header:Content-Type=="application/json", res:body:ok==true, res:body:gone==null')).toEqual([
      { subject: { kind: "res:body", path: ["balance"] }, subjectText: "res:body:balance", kind: "predicate", op: ">", operand: { type: "number", text: "1000" } },
      { subject: { kind: "res:body", path: ["currency"] }, subjectText: "res:body:currency", kind: "predicate", op: "==", operand: { type: "string", value: "EUR" } },
      { subject: { kind: "res:body", path: ["name"] }, subjectText: "res:body:name", kind: "value" },
      { subject: { kind: "res:body", path: ["balance"] }, subjectText: "res:body:balance", kind: "commitment" },
      { subject: { kind: "res:status" }, subjectText: "res:status", kind: "predicate", op: "!=", operand: { type: "number", text: "404" } },
      { subject: { kind: "res:header", name: "content-type" }, subjectText: "res:header:content-type", kind: "predicate", op: "==", operand: { type: "string", value: "application/json" } },
      { subject: { kind: "res:body", path: ["ok"] }, subjectText: "res:body:ok", kind: "predicate", op: "==", operand: { type: "boolean", value: true } },
      { subject: { kind: "res:body", path: ["gone"] }, subjectText: "res:body:gone", kind: "predicate", op: "==", operand: { type: "null" } },
    ]);
  });

  test("the longest operator wins; nested paths, array indices and escaped dots, commas and operators in keys", () => {
    const [a, b, c] = parseClaims("res:body:a.0.b>=-1.5e3, res:body:x\\.y\\,z\\>w<=2, res:body:s==\"a, \\\"b\\\"\"");
    expect(a).toMatchObject({ subject: { path: ["a", "0", "b"] }, op: ">=", operand: { type: "number", text: "-1.5e3" } });
    expect(b).toMatchObject({ subject: { path: ["x.y,z>w"] }, subjectText: "res:body:x\\.y\\,z\\>w", op: "<=" });
    expect(c).toMatchObject({ op: "==", operand: { type: "string", value: 'a, "b"' } });
  });

  test("an absent or blank header asks for nothing", () => {
    expect(parseClaims(undefined)).toEqual([]);
    expect(parseClaims("  ")).toEqual([]);
  });

  test("every malformed entry is refused, named by its position, never skipped", () => {
    const cases: [string, string][] = [
      ["res:body:a,,res:status", "T-CLAIM entry 2: empty entry"],
      ["res:body:a>", "entry 1: the comparison has no value"],
      ["res:body:a=1", "entry 1: unknown comparison"],
      ["res:body:a>abc", "entry 1: > compares numbers only"],
      ["res:body:a<true", "entry 1: < compares numbers only"],
      ["res:query:a", "entry 1: a subject is res:status"],
      ["res:status:x", "entry 1: a subject is res:status"],
      ["res:header:bad name", "entry 1: res:header: needs a header name"],
      ["res:body:a..b", "entry 1: body path has an empty segment"],
      ["res:body:a\\q", "entry 1: a backslash must be followed"],
      ["commit:res:body:a>1", "entry 1: commit: takes a subject only"],
      ['res:body:a=="x', "entry 1: a quoted value must be one JSON string"],
      ["res:body:a==x\\y", "entry 1: write a value holding a backslash as a JSON string"],
      [`res:body:${"a".repeat(600)}`, "entry 1: longer than 512 characters"],
      [Array.from({ length: MAX_CLAIMS + 1 }, () => "res:status").join(","), `at most ${MAX_CLAIMS} claims`],
    ];
    for (const [header, message] of cases) {
      const error = refusal(header);
      expect(error.code).toBe("invalid_claim");
      expect(error.message).toContain(message);
    }
  });

  test("a claim written in normal form reads back as the same claim", () => {
    const segment = fc.string({ minLength: 1, maxLength: 8 }).filter((s) => s.trim() === s && !s.includes('"'));
    const literal = fc.oneof(fc.constantFrom("1000", "-0.5", "1e99", "true", "false", "null"), fc.string({ maxLength: 8 }).map((s) => JSON.stringify(s)));
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 3 }), fc.constantFrom("==", "!=", "", "commit"), literal, (path, op, operand) => {
        const subject = `res:body:${path.map((s) => s.replace(/[\\,.=!<>]/g, (char) => `\\${char}`)).join(".")}`;
        const entry = op === "" ? subject : op === "commit" ? `commit:${subject}` : `${subject}${op}${operand}`;
        const [claim] = parseClaims(entry);
        expect(claim!.subject).toEqual({ kind: "res:body", path });
        expect(parseClaims(claimText(claim!))).toEqual([claim!]);
      }),
    );
  });
});

describe("the T-CLAIM grammar, edges", () => {
  test("spaces around a subject's parts are not part of it", () => {
    expect(parseClaims("res:header: X-Rate , commit: res:body: a.b, res:body:c >1")).toMatchObject([
      { subject: { kind: "res:header", name: "x-rate" } },
      { kind: "commitment", subject: { kind: "res:body", path: ["a", "b"] } },
      { kind: "predicate", subject: { kind: "res:body", path: ["c"] } },
    ]);
  });

  test("the limits are inclusive, and a refusal carries the entry's position", () => {
    expect(parseClaims(`res:body:${"a".repeat(MAX_CLAIM_LENGTH - 9)}`)).toHaveLength(1);
    expect(refusal(`res:body:${"a".repeat(MAX_CLAIM_LENGTH - 8)}`).message).toContain("longer than");
    expect(parseClaims(Array.from({ length: MAX_CLAIMS }, () => "res:status").join(","))).toHaveLength(MAX_CLAIMS);
    expect(refusal(Array.from({ length: MAX_CLAIMS + 1 }, () => "res:status").join(",")).message).toBe(`T-CLAIM entry ${MAX_CLAIMS + 1}: at most ${MAX_CLAIMS} claims`);
    expect(refusal("res:status, res:status==").details).toEqual({ entry: 2 });
  });

  test("what a comparison or commitment cannot start with is named", () => {
    expect(refusal("commit:>5").message).toContain("commit: takes a subject only, no comparison");
    expect(refusal("res:body:a=5").message).toBe("T-CLAIM entry 1: unknown comparison (expected one of == != >= <= > <)");
  });

  test("the salt and the recipient are exactly 32 bytes and 20 bytes of hex", () => {
    expect(CLAIM_SALT.test(`0x${"aB".repeat(32)}`)).toBe(true);
    for (const salt of [`0x${"ab".repeat(31)}`, `0x${"ab".repeat(33)}`, `x0x${"ab".repeat(32)}`, `0x${"ab".repeat(32)}\n`, `0x${"gh".repeat(32)}`]) expect(CLAIM_SALT.test(salt)).toBe(false);
    expect(RECIPIENT.test(`0x${"Cd".repeat(20)}`)).toBe(true);
    for (const address of [`0x${"cd".repeat(19)}`, `0x${"cd".repeat(21)}`, ` 0x${"cd".repeat(20)}`, `0x${"zz".repeat(20)}`]) expect(RECIPIENT.test(address)).toBe(false);
  });
});
