import { describe, expect, test } from "bun:test";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { AppError } from "../../src/core/errors.ts";
import type { ByteRange } from "../../src/core/transcript.ts";
import { type ClaimContext, evaluateClaims } from "../../src/claims/evaluate.ts";
import { parseClaims } from "../../src/claims/grammar.ts";

const BODY = '{"name":"\\u0061lice","balance":123456,"items":[{"id":7},{"id":8}],"meta":{ "a" : [1, true] },"none":null,"ok":false,"yes":true,"dup":{"x":1,"x":2}}';
const ANSWER =
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0${BODY.length}\r\nX-Rate: 42\r\nX-Twice: a\r\nX-Twice: b\r\n` +
  `X-Zeros: 0042\r\nX-Mixed: v42\r\nContent-Encoding: Identity\r\n\r\n${BODY}`;

const bytes = new TextEncoder().encode(ANSWER);
const at = (needle: string): ByteRange => {
  const start = ANSWER.indexOf(needle);
  if (start < 0) throw new Error(`not in the answer: ${needle}`);
  return { start, end: start + needle.length };
};

/** The answer as a notary saw it: everything but `unseen`; the proof showing everything the notary saw but `hidden`. */
function context(unseen: ByteRange[] = [], hidden: ByteRange[] = [], salt?: Uint8Array): ClaimContext {
  const seen = new Uint8Array(bytes.length).fill(1);
  const shownMask = new Uint8Array(bytes.length).fill(1);
  const seenBytes = Uint8Array.from(bytes);
  for (const range of unseen) {
    seen.fill(0, range.start, range.end);
    seenBytes.fill(0, range.start, range.end);
  }
  for (const range of [...unseen, ...hidden]) shownMask.fill(0, range.start, range.end);
  return {
    answer: { bytes: seenBytes, seen },
    shown: (range) => shownMask.subarray(range.start, range.end).every((b) => b === 1),
    ...(salt ? { salt } : {}),
  };
}

const judge = (header: string, ctx = context()) => evaluateClaims(parseClaims(header), ctx);

function refusal(header: string, ctx = context()): AppError {
  try {
    judge(header, ctx);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`expected ${header} to be refused`);
}

describe("the notary's judgement of claims", () => {
  test("values as JSON in normal form: escapes resolved, whitespace dropped, numbers as written", () => {
    expect(judge("res:body:name, res:body:balance, res:body:items.1.id, res:body:meta, res:body:none, res:status, res:header:x-rate")).toEqual([
      { kind: "value", subject: "res:body:name", value: '"alice"' },
      { kind: "value", subject: "res:body:balance", value: "123456" },
      { kind: "value", subject: "res:body:items.1.id", value: "8" },
      { kind: "value", subject: "res:body:meta", value: '{"a":[1,true]}' },
      { kind: "value", subject: "res:body:none", value: "null" },
      { kind: "value", subject: "res:status", value: "200" },
      { kind: "value", subject: "res:header:x-rate", value: '"42"' },
    ]);
  });

  test("comparisons hold or not, exactly, for every type", () => {
    const holds = (header: string) => judge(header).map((claim) => (claim.kind === "predicate" ? claim.holds : undefined));
    expect(holds("res:body:balance>1000, res:body:balance>123456, res:body:balance>=123456, res:body:balance<1.23456e5, res:body:balance<=123456.0, res:body:balance==123456, res:body:balance!=123456")).toEqual([
      true, false, true, false, true, true, false,
    ]);
    expect(holds("res:body:name==alice, res:body:name!=alice, res:body:name==\"Alice\", res:body:ok==false, res:body:ok!=true")).toEqual([true, false, false, true, true]);
    expect(holds(`res:body:none==null, res:body:balance==null, res:body:balance!=null, res:status<300, res:header:x-rate>=42, res:header:content-length==${BODY.length}`)).toEqual([
      true, false, true, true, true, true,
    ]);
  });

  test("booleans, headers written with leading zeros, a header that is not a number", () => {
    expect(judge("res:body:yes, res:body:ok, res:body:yes==true, res:header:x-zeros==42, res:header:x-zeros<43")).toEqual([
      { kind: "value", subject: "res:body:yes", value: "true" },
      { kind: "value", subject: "res:body:ok", value: "false" },
      { kind: "predicate", subject: "res:body:yes", op: "==", operand: "true", holds: true },
      { kind: "predicate", subject: "res:header:x-zeros", op: "==", operand: "42", holds: true },
      { kind: "predicate", subject: "res:header:x-zeros", op: "<", operand: "43", holds: true },
    ]);
    expect(refusal("res:header:x-mixed>1").message).toContain("the value is a string, not a number");
  });

  test("a status or header value the proof hides is not stated; a refusal carries the claim's position", () => {
    expect(refusal("res:status", context([], [at("200")])).message).toContain("the proof hides this value");
    expect(refusal("res:header:x-rate", context([], [at("42\r")])).message).toContain("the proof hides this value");
    expect(refusal("res:status, res:body:owner").details).toEqual({ claim: 2 });
  });

  test("each comparison fails where it should: the boundary either side", () => {
    const holds = (header: string) => judge(header).map((claim) => (claim.kind === "predicate" ? claim.holds : undefined));
    expect(holds("res:body:balance>=123457, res:body:balance<=123455, res:body:balance<123456, res:body:balance>123456.0, res:body:balance==123456.01")).toEqual([false, false, false, false, false]);
    expect(holds("res:body:balance>=123455.999, res:body:balance<=123456.001, res:body:balance!=7")).toEqual([true, true, true]);
  });

  test("a comparison states its operand as JSON text, never the value", () => {
    const [claim] = judge("res:body:balance>1000");
    expect(claim).toEqual({ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true });
    expect(JSON.stringify(claim)).not.toContain("123456");
  });

  test("a commitment is keccak256 over the salt and the value's JSON text", () => {
    const salt = new Uint8Array(32).fill(7);
    const [claim] = judge("commit:res:body:name", context([], [], salt));
    const expected = keccak_256(Buffer.concat([salt, Buffer.from('"alice"')]));
    expect(claim).toEqual({ kind: "commitment", subject: "res:body:name", commitment: `0x${Buffer.from(expected).toString("hex")}` });
    expect(refusal("commit:res:body:name").message).toContain("commit: needs T-CLAIM-SALT");
  });

  test("a value the proof hides may be compared or committed, never stated", () => {
    const hidden = context([], [at("123456")], new Uint8Array(32));
    expect(judge("res:body:balance>1000, commit:res:body:balance", hidden).map((claim) => claim.kind)).toEqual(["predicate", "commitment"]);
    const error = refusal("res:body:name, res:body:balance", hidden);
    expect(error.code).toBe("claim_unsupported");
    expect(error.message).toBe("claim 2 (res:body:balance): the proof hides this value: claim a comparison or commit: instead");
    // Part of a value hidden is the value hidden.
    expect(refusal("res:body:balance", context([], [at("3456")])).message).toContain("the proof hides this value");
  });

  test("refusals name the claim: missing, ambiguous, of another type", () => {
    const cases: [string, string][] = [
      ["res:body:owner", "claim 1 (res:body:owner): the body has no value at this path"],
      ["res:body:items.2.id", "the body has no value at this path"],
      ["res:body:items.01.id", "the body has no value at this path"],
      ["res:body:balance.0", "the body has no value at this path"],
      ["res:body:dup.x", 'the body has 2 members named "x", so the subject is ambiguous'],
      ["res:body:name.first", "the body has no value at this path"],
      ["res:header:x-missing", "the answer has no such header"],
      ["res:header:x-twice", "the answer has 2 lines of this header, so the subject is ambiguous"],
      ["res:body:name>1", "the value is a string, not a number"],
      ["res:body:balance==abc", "the value is a number, not a string"],
      ["res:body:meta==true", "the value is an object, not a boolean"],
      ["res:body:items>1", "the value is an array, not a number"],
      ["res:body:ok>1", "the value is a boolean, not a number"],
      ["res:body:none>1", "the value is a null, not a number"],
      ["res:status==\"200\"", "the value is a number, not a string"],
      ["res:header:content-type>1", "the value is a string, not a number"],
    ];
    for (const [header, message] of cases) {
      const error = refusal(header);
      expect(error.code).toBe("claim_unsupported");
      expect(error.message).toContain(message);
    }
  });

  test("a notary that did not see the whole answer (MPC mode) judges only what it saw whole, else refuses naming proxy mode", () => {
    const unseen = (needle: string, header: string) => refusal(header, context([at(needle)])).message;
    // Hidden bytes anywhere in the body could hold a second "balance", or end a string early: no body claim.
    expect(unseen("123456", "res:body:balance>1000")).toContain("part of the answer is hidden from the notary");
    expect(unseen('"\\u0061lice"', "res:body:balance==123456")).toContain("use T-PROOF-MODE: proxy");
    // Hidden bytes in the head could hold a line break and a second header line: no claim at all.
    expect(unseen("X-Twice: a", "res:header:x-rate==42")).toContain("the answer's head is hidden from the notary");
    expect(unseen("200 OK", "res:status==200")).toContain("the answer's head is hidden");
    // A head seen whole is judged though the body hides bytes.
    expect(judge("res:header:x-rate==42, res:status==200", context([at("123456")]))).toMatchObject([{ holds: true }, { holds: true }]);
  });

  test("a value split over chunks is hidden if any part of it is", () => {
    const text = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nd\r\n{"balance":12\r\n5\r\n3456}\r\n0\r\n\r\n';
    const b = new TextEncoder().encode(text);
    const tail = text.indexOf("3456}");
    const shownMask = new Uint8Array(b.length).fill(1).fill(0, tail, tail + 4);
    const ctx: ClaimContext = { answer: { bytes: b, seen: new Uint8Array(b.length).fill(1) }, shown: (r) => shownMask.subarray(r.start, r.end).every((x) => x === 1) };
    expect(evaluateClaims(parseClaims("res:body:balance>1"), ctx)).toMatchObject([{ holds: true }]);
    expect(() => evaluateClaims(parseClaims("res:body:balance"), ctx)).toThrow("the proof hides this value");
  });

  test("an answer with no status line, or no body (its head is all of it)", () => {
    const all = (text: string): ClaimContext => {
      const b = new TextEncoder().encode(text);
      return { answer: { bytes: b, seen: new Uint8Array(b.length).fill(1) }, shown: () => true };
    };
    expect(() => evaluateClaims(parseClaims("res:status"), all("HTTX/1.1 200 OK\r\n\r\n"))).toThrow("the answer has no status line");
    expect(evaluateClaims(parseClaims("res:status, res:header:x-a"), all("HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"))).toEqual([
      { kind: "value", subject: "res:status", value: "204" },
      { kind: "value", subject: "res:header:x-a", value: '"1"' },
    ]);
  });

  test("an encoded or non-JSON body is refused", () => {
    const gzip = new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}");
    const text = new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    const all = (b: Uint8Array): ClaimContext => ({ answer: { bytes: b, seen: new Uint8Array(b.length).fill(1) }, shown: () => true });
    expect(() => evaluateClaims(parseClaims("res:body:a"), all(gzip))).toThrow("the answer's body is encoded");
    expect(() => evaluateClaims(parseClaims("res:body:a"), all(text))).toThrow("the answer's body is not JSON");
  });
});
