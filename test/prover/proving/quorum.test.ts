import { describe, expect, test } from "bun:test";
import { refusalOf } from "../../../testkit/app-error.ts";
import type { Claim } from "../../../src/claims/claim.ts";
import { parseClaims } from "../../../src/claims/grammar.ts";
import type { ProofBody } from "../../../src/proof/format.ts";
import { generateKey } from "../../../src/proof/keys.ts";
import { signProof } from "../../../src/proof/sign.ts";
import { checkQuorum, provenBy } from "../../../src/prover/proving/quorum.ts";
import type { QuorumChoices } from "../../../src/prover/proving/quorum.ts";
import { sampleBody } from "../../proof/fixtures.ts";

/**
 * The prover's quorum decisions, pure: what is refused before anything is sent (checkQuorum), and what the M signed
 * proofs make (provenBy). The same through the real prover and notaries: quorum.process.test.ts.
 */
const through = { startThrough: () => ({}) as never };
const call = (change: Partial<QuorumChoices> = {}): QuorumChoices => ({ quorum: 2, claims: parseClaims("res:status"), exchange: { method: "GET" }, ...change });


describe("a quorum call, checked before anything is sent", () => {
  test("a quorum of one is any call; a quorum of 2 of 3 with claims, a GET, in a mode that chooses its notary, passes", () => {
    expect(() => checkQuorum(call({ quorum: 1, claims: [], exchange: { method: "POST" } }), {}, "mpc", 1)).not.toThrow();
    expect(() => checkQuorum(call(), through, "proxy", 3)).not.toThrow();
    expect(() => checkQuorum(call({ quorum: 3 }), through, "proxy", 3)).not.toThrow();
  });

  test("each refusal is a 400 invalid_header naming what to change", () => {
    const refused = (choices: Partial<QuorumChoices>) => {
      const error = refusalOf(() => checkQuorum(call(choices), through, "proxy", 3));
      expect(error.code).toBe("invalid_header");
      return error.message;
    };
    expect(refused({ quorum: 4 })).toBe("T-QUORUM: 4 distinct notaries asked, and this prover has 3 (PROVER_NOTARY_URL)");
    expect(refusalOf(() => checkQuorum(call(), {}, "mpc", 3)).message).toBe("T-QUORUM: the mpc mode cannot prove through several notaries; use T-PROOF-MODE: proxy");
    expect(refused({ claims: [] })).toBe("T-QUORUM: a quorum agrees on claims only (the sessions' bytes differ): name them in T-CLAIM");
    expect(refused({ exchange: { method: "DELETE" } })).toBe("T-QUORUM: each notary's session sends the request once, so a quorum proves GET requests only, not DELETE");
  });
});

describe("what the M proofs make", () => {
  const keys = [generateKey("secp256k1"), generateKey("secp256r1")];
  const requestId = crypto.randomUUID();
  const proofBy = (i: number, change: Partial<ProofBody> = {}) => signProof({ ...sampleBody(keys[i]!), requestId, ...change }, keys[i]!);

  test("one proof is itself; M proofs stating the same are one quorum proof of them", () => {
    const one = proofBy(0);
    expect(provenBy([one], 1)).toBe(one);
    const both = [proofBy(0), proofBy(1)];
    expect(provenBy(both, 2)).toMatchObject({ version: "tlsproof-quorum/1", quorum: 2, requestId, proofs: both });
  });

  test("proofs that state other claims, or show no one request, are quorum_disagreement, never a proof", () => {
    const changed: Claim[] = [{ kind: "value", subject: "res:body:currency", value: '"USD"' }];
    const claims = refusalOf(() => provenBy([proofBy(0), proofBy(1, { claims: changed })], 2));
    expect(claims.code).toBe("quorum_disagreement");
    expect(claims.message).toBe(
      'the 2 notaries\' sessions do not state the same claims (the answer changed between them): proof 2 states res:body:currency = "USD" where proof 1 states res:body:currency = "EUR"',
    );
    const hidden = refusalOf(() => provenBy([proofBy(0, { request: "hidden" }), proofBy(1)], 2));
    expect(hidden.code).toBe("quorum_disagreement");
    expect(hidden.message).toBe("the 2 notaries' proofs are no quorum: proof 1 hides its request: nothing shows the proofs are of one request");
  });
});
