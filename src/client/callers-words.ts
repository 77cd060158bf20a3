/**
 * The prover speaks of its `/proxy` headers (`no proof is made without T-PROVE-FAILED-REQ: true`); a caller of prove()
 * chose options, a user of `cli prove` flags. Its messages are passed on in the caller's own words: one table, the
 * header's phrase, the option's and the flag's.
 */
const WORDS: readonly (readonly [header: string, option: string, flag: string])[] = [
  ["T-PROVE-FAILED-REQ: true", "proveFailed: true", "--prove-failed"],
  ["T-REDACTED-UNMATCHED: allow", "allowUnmatchedRedactions: true", "--allow-unmatched"],
  ["T-PROXY-REVEAL: none", 'reveal: "none"', "--reveal none"],
  ["T-PROXY-REVEAL: request", 'reveal: "request"', "--reveal request"],
  ["T-PROOF-MODE: proxy", 'mode: "proxy"', "--mode proxy"],
  ["T-PROOF-MODE: mpc", 'mode: "mpc"', "--mode mpc"],
  ["T-REDACTED entr", "redact entr", "--redact entr"],
  ["T-REDACTED: ", "redact: ", "--redact "],
  ["T-CLAIM-SALT", "claimSalt", "--claim-salt"],
  ["T-CLAIM entr", "claims entr", "--claim entr"],
  ["T-RECIPIENT", "recipient", "--recipient"],
  ["T-QUORUM", "quorum", "--quorum"],
  ["T-CLAIM", "claims", "--claim"],
  // A verifier's generic advice, as verifyProof gives it.
  ["cli verify --allow-test-anchor, verifyProof's allowTestTrustAnchor", "allowTestTrustAnchor: true", "--allow-test-anchor"],
  ["cli verify --allow-hidden-request, verifyProof's allowHiddenRequest", "allowHiddenRequest: true", "--allow-hidden-request"],
];

/** A prover's message as a prove() caller reads it: the headers named by the options that set them. */
export const inOptionWords = (message: string): string => WORDS.reduce((text, [header, option]) => text.replaceAll(header, option), message);

/** A prover's message, or prove()'s, as a `cli prove` user reads it: headers and options named by the flags that set them. */
export const inFlagWords = (message: string): string => {
  // Options first: a flag holds an option's words (`--redact entr…`), never a header's.
  const fromOptions = WORDS.reduce((text, [, option, flag]) => text.replaceAll(option, flag), message);
  return WORDS.reduce((text, [header, , flag]) => text.replaceAll(header, flag), fromOptions);
};
