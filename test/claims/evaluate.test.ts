import { describe, expect, test } from "bun:test";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { AppError } from "../../src/core/errors.ts";
import type { ByteRange } from "../../src/core/transcript.ts";
import { type ClaimContext, evaluateClaims } from "../../src/claims/evaluate.ts";
import { parseClaims } from "../../src/claims/grammar.ts";

const BODY = '{"name":"\\u0061lice","balance":123456,"items":[{"id":7},{"id":8}],"meta":{ "a" : [1, true] },"none":null,"ok":false}';
const ANSWER = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0${BODY.length}\r\nX-Rate: 42\r\nX-Twice: a\r\nX-Twice: b\r\n\r\n${BODY}`;

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
  });

  test("refusals name the claim: missing, ambiguous, of another type", () => {
    const cases: [string, string][] = [
      ["res:body:owner", "claim 1 (res:body:owner): the body has no value at this path"],
      ["res:body:items.2.id", "the body has no value at this path"],
      ["res:body:name.first", "the body has no value at this path"],
      ["res:header:x-missing", "the answer has no such header"],
      ["res:header:x-twice", "the answer has 2 lines of this header, so the subject is ambiguous"],
      ["res:body:name>1", "the value is a string, not a number"],
      ["res:body:balance==abc", "the value is a number, not a string"],
      ["res:body:meta==true", "the value is an object, not a boolean"],
      ["res:status==\"200\"", "the value is a number, not a string"],
      ["res:header:content-type>1", "the value is a string, not a number"],
    ];
    for (const [header, message] of cases) {
      const error = refusal(header);
      expect(error.code).toBe("claim_unsupported");
      expect(error.message).toContain(message);
    }
  });

  test("what a notary did not see (MPC mode) is never judged, and refused naming proxy mode", () => {
    const unseenValue = context([at("123456")]);
    expect(refusal("res:body:balance>1000", unseenValue).message).toContain("hidden from the notary");
    expect(refusal("res:body:balance>1000", unseenValue).message).toContain("T-PROOF-MODE: proxy");
    // A hidden key could be a second "balance": the path is ambiguous.
    expect(refusal("res:body:balance>1000", context([at('"name"')])).message).toContain("a key along the path is hidden");
    // A hidden header name could be a second line of the one asked about, or a Content-Encoding.
    expect(refusal("res:header:x-rate==42", context([at("Content-Type")])).message).toContain("a header name of the answer is hidden");
    expect(refusal("res:body:balance==1", context([at(`0${BODY.length}`)])).message).toContain("content-length is hidden");
    expect(refusal("res:status==200", context([at("200 OK")])).message).toContain("the status line is hidden");
    // A value seen whole beside hidden ones is judged.
    expect(judge("res:body:balance==123456", context([at('"\\u0061lice"')]))).toMatchObject([{ holds: true }]);
  });

  test("an encoded or non-JSON body is refused", () => {
    const gzip = new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}");
    const text = new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    const all = (b: Uint8Array): ClaimContext => ({ answer: { bytes: b, seen: new Uint8Array(b.length).fill(1) }, shown: () => true });
    expect(() => evaluateClaims(parseClaims("res:body:a"), all(gzip))).toThrow("the answer's body is encoded");
    expect(() => evaluateClaims(parseClaims("res:body:a"), all(text))).toThrow("the answer's body is not JSON");
  });
});
