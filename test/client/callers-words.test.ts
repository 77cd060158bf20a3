import { expect, test } from "bun:test";
import { inFlagWords, inOptionWords } from "../../src/client/callers-words.ts";

/** The prover's messages name its headers; prove() and cli prove name the option or flag their caller set. */

const PROVER = "the target answered 503; no proof is made without T-PROVE-FAILED-REQ: true";

test("prove() speaks of its options, cli prove of its flags, for every header the prover names", () => {
  expect(inOptionWords(PROVER)).toBe("the target answered 503; no proof is made without proveFailed: true");
  expect(inFlagWords(PROVER)).toBe("the target answered 503; no proof is made without --prove-failed");
  // What prove() already said in its words reads in flags too.
  expect(inFlagWords(inOptionWords(PROVER))).toBe(inFlagWords(PROVER));
  const unmatched = "T-REDACTED entries 1, 3 matched nothing; no proof is made (T-REDACTED-UNMATCHED: allow proves anyway)";
  expect(inFlagWords(unmatched)).toBe("--redact entries 1, 3 matched nothing; no proof is made (--allow-unmatched proves anyway)");
  expect(inOptionWords(unmatched)).toBe("redact entries 1, 3 matched nothing; no proof is made (allowUnmatchedRedactions: true proves anyway)");
  expect(inFlagWords("hide it whole (T-REDACTED: req:body:), or send T-PROXY-REVEAL: request; or T-PROOF-MODE: proxy")).toBe(
    "hide it whole (--redact req:body:), or send --reveal request; or --mode proxy",
  );
  expect(inFlagWords("accept such a proof only on purpose (cli verify --allow-test-anchor, verifyProof's allowTestTrustAnchor)")).toBe(
    "accept such a proof only on purpose (--allow-test-anchor)",
  );
});

test("a message naming no header is left as it is", () => {
  expect(inFlagWords("the target is unreachable")).toBe("the target is unreachable");
});
