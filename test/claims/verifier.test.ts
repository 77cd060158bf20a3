import { describe, expect, test } from "bun:test";
import { claimsProblem } from "../../src/claims/check.ts";
import { claimsMismatch, unansweredClaim } from "../../src/claims/expect.ts";
import { checkClaims } from "../../src/prover/proving/claim-check.ts";
import { type Claim, CLAIM_KINDS, claimJson, claimLine } from "../../src/claims/claim.ts";
import { parseClaims } from "../../src/claims/grammar.ts";
import { BUILT_IN_MODES, type ModeFacts } from "../../src/proof/modes.ts";
import { parseRedactions } from "../../src/redaction/patterns.ts";

const ANSWER = 'HTTP/1.1 200 OK\r\nContent-Length: 29\r\n\r\n{"balance":1234,"name":"bob"}';
const bytes = new TextEncoder().encode(ANSWER);
const all = { bytes, revealed: [{ start: 0, end: bytes.length }] };
const balanceAt = ANSWER.indexOf("1234");
/** The balance hidden: its bytes zero, as a verifier rebuilds them. */
const hidingBalance = {
  bytes: Uint8Array.from(bytes).fill(0, balanceAt, balanceAt + 4),
  revealed: [{ start: 0, end: balanceAt }, { start: balanceAt + 4, end: bytes.length }],
};

describe("a claim as people and programs read it", () => {
  test("one line each, and JSON with the value and operand parsed", () => {
    const claims: Claim[] = [
      { kind: "value", subject: "res:body:name", value: '"bob"' },
      { kind: "predicate", subject: "res:body:balance", op: ">=", operand: "1000", holds: false },
      { kind: "commitment", subject: "res:body:balance", commitment: `0x${"ab".repeat(32)}` },
    ];
    expect(claims.map(claimLine)).toEqual(['res:body:name = "bob"', "res:body:balance >= 1000: does not hold", `res:body:balance: committed 0x${"ab".repeat(32)}`]);
    expect(claims.map(claimJson)).toEqual([
      { kind: "value", subject: "res:body:name", text: 'res:body:name = "bob"', value: "bob", valueJson: '"bob"' },
      { kind: "predicate", subject: "res:body:balance", text: "res:body:balance >= 1000: does not hold", op: ">=", operand: 1000, holds: false },
      { kind: "commitment", subject: "res:body:balance", text: `res:body:balance: committed 0x${"ab".repeat(32)}`, commitment: `0x${"ab".repeat(32)}` },
    ]);
    expect(CLAIM_KINDS).toEqual({ value: 0, predicate: 1, commitment: 2 });
  });
});

describe("a verifier's check of the claims a proof states", () => {
  test("claims the revealed answer bears out pass; those it contradicts make the proof invalid", () => {
    const honest: Claim[] = [
      { kind: "value", subject: "res:body:name", value: '"bob"' },
      { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true },
      { kind: "commitment", subject: "res:body:balance", commitment: `0x${"ab".repeat(32)}` },
    ];
    expect(claimsProblem(honest, all)).toBeNull();
    expect(claimsProblem([{ kind: "value", subject: "res:body:name", value: '"eve"' }], all)).toBe("body.claims[0] states what the proof's own answer contradicts (res:body:name)");
    expect(claimsProblem([{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: false }], all)).toContain("contradicts");
  });

  test("a claim over a hidden value, or over an answer not revealed whole, stands on the signature alone", () => {
    // The name is revealed, but bytes hidden elsewhere in the body could change what it is: not judged again.
    expect(claimsProblem([{ kind: "value", subject: "res:body:name", value: '"eve"' }], hidingBalance)).toBeNull();
    expect(claimsProblem([{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "99999", holds: true }], hidingBalance)).toBeNull();
  });

  test("a claim not in normal form, or a value that is not JSON, is refused", () => {
    expect(claimsProblem([{ kind: "value", subject: "res:header:Content-Length", value: '"29"' }], all)).toBe("body.claims[0]: not a claim in normal form");
    expect(claimsProblem([{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "abc", holds: true }], all)).toContain("not a claim in normal form");
    expect(claimsProblem([{ kind: "predicate", subject: "res:body:name", op: "==", operand: "bob", holds: true }], all)).toContain("not a claim in normal form");
    expect(claimsProblem([{ kind: "value", subject: "res:body:x", value: "{" }], hidingBalance)).toBe("body.claims[0].value is not JSON");
  });
});

describe("what a verifier or a client requires of the claims", () => {
  const stated: Claim[] = [
    { kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true },
    { kind: "predicate", subject: "res:body:balance", op: ">", operand: "99999999", holds: false },
    { kind: "value", subject: "res:body:name", value: '"bob"' },
  ];

  test("an expected comparison must be stated as holding; numbers compare exactly, whatever their writing", () => {
    expect(claimsMismatch(stated, ["res:body:balance>1000", "res:body:balance > 1e3", "res:body:name"])).toBeNull();
    expect(claimsMismatch(stated, ["res:body:balance>99999999"])).toBe("the proof states that res:body:balance>99999999 does not hold");
    expect(claimsMismatch(stated, ["res:body:balance>=1000"])).toBe("the proof states no claim res:body:balance>=1000");
    expect(claimsMismatch(stated, ["commit:res:body:name"])).toBe("the proof states no claim commit:res:body:name");
  });

  test("the subject, the kind, the comparison and the operand must all be the ones expected", () => {
    expect(claimsMismatch(stated, ["res:body:other"])).toBe("the proof states no claim res:body:other");
    expect(claimsMismatch(stated, ["res:body:balance"])).toBe("the proof states no claim res:body:balance");
    expect(claimsMismatch(stated, ["res:body:name==bob"])).toBe("the proof states no claim res:body:name==bob");
    expect(claimsMismatch(stated, ["res:body:other>99999999"])).toBe("the proof states no claim res:body:other>99999999");
    expect(claimsMismatch(stated, ["res:body:balance<99999999"])).toBe("the proof states no claim res:body:balance<99999999");
    expect(claimsMismatch(stated, [" res:body:balance>99999999 "])).toBe("the proof states that res:body:balance>99999999 does not hold");
    expect(claimsMismatch(stated, [" res:body:owner "])).toBe("the proof states no claim res:body:owner");
    const strings: Claim[] = [{ kind: "predicate", subject: "res:body:name", op: "==", operand: '"bob"', holds: true }];
    expect(claimsMismatch(strings, ['res:body:name=="bob"', "res:body:name==bob"])).toBeNull();
    expect(claimsMismatch(strings, ["res:body:name==eve"])).toBe("the proof states no claim res:body:name==eve");
  });

  test("prove() requires an answer to every claim asked, holding or not", () => {
    expect(unansweredClaim(stated, parseClaims("res:body:balance>99999999, res:body:name"))).toBeNull();
    expect(unansweredClaim(stated, parseClaims("res:body:name, res:body:balance<5"))).toBe("res:body:balance<5");
  });
});

describe("the prover's check before anything is sent", () => {
  const check = (claims: string, redacted = "", mode: ModeFacts = BUILT_IN_MODES.proxy, claimSalt?: string) => () =>
    checkClaims({ claims: parseClaims(claims), patterns: parseRedactions(redacted), ...(claimSalt ? { claimSalt } : {}) }, mode);

  test("what hides a subject: a body path at, above or below it; a header by name in any case; nothing across kinds", () => {
    expect(check("res:header:x-rate", "res:header:X-Rate")).toThrow("which the proof hides (T-REDACTED entry 1)");
    expect(check("res:body:a.c, res:body:b, res:header:a, res:status", "res:body:a.b, res:header:x, res:body:c")).not.toThrow();
    expect(check("res:body:balance", "res:header:balance")).not.toThrow();
    expect(check("res:body:set-cookie, res:header:x-rate")).not.toThrow();
    expect(check("res:header:set-cookie", "reveal:req:header:cookie")).toThrow("by default");
    // Without claims, nothing is refused, whatever the mode hides.
    expect(check("", "res:body:secret", BUILT_IN_MODES.mpc)).not.toThrow();
  });

  test("claims a notary could judge pass", () => {
    expect(check("res:body:balance>1000, commit:res:body:balance", "res:body:balance", BUILT_IN_MODES.proxy, `0x${"00".repeat(32)}`)).not.toThrow();
    expect(check("res:body:name, res:body:balance>1", "req:header:x-key, res:query:key", BUILT_IN_MODES.mpc)).not.toThrow();
    expect(check("res:header:set-cookie", "reveal:res:header:set-cookie")).not.toThrow();
  });

  test("a value the proof hides, a commitment without salt, a hidden value in MPC mode: 400, naming the way out", () => {
    expect(check("res:body:balance", "res:body:balance")).toThrow("T-CLAIM entry 1: states the value of res:body:balance, which the proof hides (T-REDACTED entry 1): claim a comparison or commit: instead");
    expect(check("res:body:account.balance", "res:body:account")).toThrow("which the proof hides");
    expect(check("res:body:account", "res:body:account.balance")).toThrow("which the proof hides");
    expect(check("res:header:set-cookie")).toThrow("by default; reveal:res:header:set-cookie shows it");
    expect(check("commit:res:body:balance")).toThrow("T-CLAIM entry 1: commit: needs T-CLAIM-SALT");
    expect(check("res:status, res:body:balance>1000", "req:header:x-key, res:body:secret", BUILT_IN_MODES.mpc)).toThrow(
      "T-CLAIM entry 1: T-REDACTED entry 2 hides part of the answer, and a mpc notary judges claims only on an answer the proof reveals whole: use T-PROOF-MODE: proxy",
    );
    expect(check("res:status", "search:x", BUILT_IN_MODES.mpc)).toThrow("T-REDACTED entry 1 hides part of the answer");
    expect(check("res:status", "res:header:x-id", BUILT_IN_MODES.mpc)).toThrow("T-REDACTED entry 1 hides part of the answer");
  });
});
