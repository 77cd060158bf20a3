// The parts of `npm run test:mutation`: the code each mutates and the unit test files that must notice.
export const PARTS = {
  /** What the notary verifies of a TLS session, and our TLS 1.3 client. */
  tls: {
    mutate: ["src/tls/**/*.ts"],
    tests: ["test/tls/"],
  },
  /** The notary's attestation path and proxy-mode sessions, with the answer rule it applies. */
  notary: {
    mutate: [
      "src/notary/attest.ts",
      "src/notary/attestation.ts",
      "src/notary/ledger.ts",
      "src/notary/verified-transcript.ts",
      "src/notary/modes.ts",
      "src/notary/sockets.ts",
      "src/notary/mpc/transcript.ts",
      "src/notary/proxy-mode/*.ts",
      "src/http1/answer-rule.ts",
      "src/http1/strict-message.ts",
      "src/http1/codings.ts",
      "src/core/http-token.ts",
    ],
    // answer-encoding.test.ts: the prover's refusal of an encoded answer is codings.ts's answerCodings and codingsText;
    // transport.test.ts: the notary's sockets opened in its prover's process.
    tests: ["test/notary/", "test/http1/answer-rule.test.ts", "test/prover/exchange/answer-encoding.test.ts", "test/prover/notary/transport.test.ts"],
  },
  /** What a verifier accepts. */
  proof: {
    // The prover's quorum decisions too: what it refuses, and the quorum proof it delivers (src/prover/proving/quorum.ts).
    // json-text.ts: the duplicate keys and non-canonical numbers a proof's text is refused for. message.ts: the HTTP
    // structure the request rule, the Host check and the hidden ranges read (and the prover's answer head, its completeness).
    mutate: ["src/proof/verify.ts", "src/proof/check.ts", "src/proof/older-proofs.ts", "src/proof/expected-request.ts", "src/proof/request-rule.ts", "src/proof/quorum.ts", "src/proof/json-text.ts", "src/prover/proving/quorum.ts", "src/http1/message.ts"],
    // The claims verifier test: verifyProof refusing a claim its own answer contradicts.
    tests: ["test/proof/", "test/prover/proving/quorum.test.ts", "test/claims/verifier.test.ts", "test/http1/message.test.ts"],
  },
  /**
   * Signatures: a proof's and the canonical bytes it covers, an Ethereum one (EVM attestations, the store's messages), the
   * secp256k1 adapters under both, the SHA-256 a proof's signature covers, and the bytes (base64) a proof's ranges are
   * checked in.
   */
  signatures: {
    // The build plugins are the bundler's: the client package's and the binary's tests hold them.
    mutate: ["src/proof/sign.ts", "src/proof/canonical.ts", "src/core/eth-signature.ts", "src/core/secp256k1/*.ts", "src/core/keccak/*.ts", "src/core/sha256.ts", "src/base/bytes.ts"],
    tests: ["test/proof/sign.test.ts", "test/proof/canonical.test.ts", "test/proof/verify.test.ts", "test/proof/evm-attestation.test.ts", "test/core/eth-signature.test.ts", "test/core/secp256k1/", "test/core/keccak/", "test/core/sha256.test.ts", "test/base/bytes.test.ts", "test/proof/check.test.ts"],
  },
  /** What a notary states of an answer beyond its bytes, and what a verifier and a prover check of it. */
  claims: {
    mutate: ["src/claims/**/*.ts", "src/prover/proving/claim-check.ts"],
    tests: ["test/claims/"],
    skip: ["**/*.e2e.test.ts"],
  },
  /**
   * What a proof hides. The property test over random transcripts is left out: on this code it kills no mutant the
   * other files do not (docs/testing.md), and it would take two thirds of every mutant's run (2.7 s against 1.4 s).
   */
  redaction: {
    mutate: ["src/redaction/**/*.ts"],
    tests: ["test/redaction/"],
    skip: ["**/redaction/property.test.ts"],
  },
};
