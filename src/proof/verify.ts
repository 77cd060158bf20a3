/**
 * Offline proof verification against a pinned notary key. Order: JSON (no duplicate keys, canonical numbers)
 * → version → schema → a mode this verifier knows (modes.ts) → notary key → signature → transcript and redaction consistency (check.ts, the rules the
 * notary applies before signing, its cap on entries first) → what the caller expects (request id, server name,
 * mode, a request hidden whole only when the caller accepts one, the method and URL: expected-request.ts).
 * The signature comes before any rule on ranges and spans, and every step is linear in the proof's size (but
 * a binary search per declared span): a file nobody signed costs its parse and one signature check, however
 * many spans it lists. Every failure is
 * AppError("proof_invalid") with one readable reason naming the field at fault, except a valid proof of
 * something else than expected: AppError("proof_mismatch").
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { describeIssue } from "../core/schema.ts";
import { sameServerName } from "../core/server-name.ts";
import type { ProofBody, ProofMode, RevealedRange, TranscriptDirection } from "./format.ts";
import { unknownModeProblem } from "./modes.ts";
import { isCheckedBody, proofModeOf } from "./older-proofs.ts";
import { READ_VERSIONS, schemaOfVersion } from "./versions.ts";
import { decodePublicKeyPem, type PublicKey, publicKeyFingerprint, samePublicKey } from "./keys.ts";
import { checkedFieldsProblem, decodeBase64, isHiddenRequest, proofBodyProblem, requestHostProblem, revealedView } from "./check.ts";
import type { Claim } from "./format.ts";
import { claimsProblem } from "../claims/check.ts";
import { claimsMismatch } from "../claims/expect.ts";
import { expectedRequestMismatch } from "./expected-request.ts";
import { jsonTextProblem } from "./json-text.ts";
import { HIDDEN_HEADERS_CAN_ADD, hidesHeaderValues } from "./request-rule.ts";
import { signatureMatches } from "./sign.ts";
import { checkEvmAttestation, type VerifiedEvmAttestation } from "./evm-attestation.ts";

/** One hidden transcript byte in `TranscriptView.text`. */
export const HIDDEN_BYTE_MARKER = "█";

export interface TranscriptView {
  length: number;
  revealed: RevealedRange[];
  revealedBytes: number;
  /**
   * The whole direction as text: each hidden byte is one HIDDEN_BYTE_MARKER; revealed bytes are
   * decoded as UTF-8 range by range (a character cut by a hidden range is not guessed), a byte that
   * is not valid UTF-8 is written `\xNN`, and a revealed "█" is written `\u2588` so every marker
   * stands for exactly one hidden byte.
   */
  text: string;
}

/** What a proof must be about, beyond being signed by a pinned key. The names compare case-blind, a host's trailing dot aside. */
export interface ProofExpectations {
  /** The request id the client sent (a proof of another request is someone else's). */
  requestId?: string;
  /** The host the client asked for: the server name the TLS certificate must have proven. */
  serverName?: string;
  /** How the notary must have taken part (a proof that says nothing is an MPC proof; modes.ts). */
  mode?: ProofMode;
  /**
   * Accept a proof whose request is hidden whole (proxy mode without the request revealed): it shows the server's
   * answer, not the request it answers. Off by default: such a proof is `proof_mismatch`.
   */
  allowHiddenRequest?: boolean;
  /**
   * Accept a proof made under a test trust anchor (a test CA put in the engine's place of a public root): it proves
   * nothing about the public web. Off by default: such a proof is `proof_mismatch`, off chain as on chain.
   */
  allowTestTrustAnchor?: boolean;
  /** The request's method (compared exactly: `GET`). A hidden request (accepted on purpose) cannot show it. */
  method?: string;
  /**
   * The URL asked for (`https://host[:port]/path?query`): its host must be the server name and the request's Host,
   * its port the port the notary dialled where the proof names it, its path and query the request target.
   */
  url?: string;
  /**
   * Claims the proof must state, each written as in `T-CLAIM` (one may hold several, comma-separated): a comparison
   * as holding, a value or a commitment as stated for its subject (src/claims/expect.ts).
   */
  claims?: readonly string[];
  /** The Ethereum address the proof must be made for (`T-RECIPIENT`), compared case-blind. */
  recipient?: string;
}

export const TEST_TRUST_ANCHOR_WARNING = "WARNING: signed under a TEST trust anchor, not the public web PKI";
/** What a proof whose request is hidden does not prove. */
export const HIDDEN_REQUEST_LIMIT =
  "request is hidden: it does not show the method, URL, Host or port the request named, so the answer may answer any request the prover chose to send to that server";
/** What a proof from before notaries checked answers and dated them by the exchange does not prove. */
export const UNCHECKED_ANSWER_WARNING =
  "WARNING: a proof from before notaries checked answers: the answer may be cut short or followed by another, and its connection time may be the session's setup or the attestation";

export interface VerifiedProof {
  body: ProofBody;
  /** True when the session trusted a test CA: the proof says nothing about the public web. */
  testTrustAnchor: boolean;
  /** What a reader must not miss (TEST_TRUST_ANCHOR_WARNING); empty for an ordinary proof. */
  warnings: string[];
  notaryKey: PublicKey;
  /** publicKeyFingerprint(notaryKey). */
  notaryFingerprint: string;
  sent: TranscriptView;
  recv: TranscriptView;
  /** The checked EVM attestation; null when the proof has none (secp256r1 notary, or an older proof). */
  evm: VerifiedEvmAttestation | null;
  /** What the request's hidden header values may still do (HIDDEN_HEADERS_CAN_ADD); null when it hides none. */
  hiddenHeaders: string | null;
  /** What the notary stated of the answer beyond its bytes (none in proofs made before claims). */
  claims: Claim[];
  /** The lower-case address the proof was made for; null when it names none. */
  recipient: string | null;
}

// ---- checks ----

const fail = (reason: string): never => {
  throw new AppError("proof_invalid", `invalid proof: ${reason}`);
};

function proofKey(body: ProofBody): PublicKey {
  let key: PublicKey;
  try {
    key = decodePublicKeyPem(body.notary.publicKey);
  } catch (error) {
    return fail(`body.notary.publicKey: ${(error as Error).message}`);
  }
  if (key.algorithm !== body.notary.algorithm) fail(`body.notary.algorithm is ${body.notary.algorithm} but the key is ${key.algorithm}`);
  return key;
}

/** Why the proof is not about what the caller expects, or null. */
function expectationMismatch(body: ProofBody, expected: ProofExpectations, url: URL | undefined): string | null {
  const differs = (actual: string, wanted: string | undefined) => wanted !== undefined && actual.toLowerCase() !== wanted.toLowerCase();
  if (differs(body.requestId, expected.requestId)) return `the proof is of request id ${body.requestId}, expected ${expected.requestId}`;
  if (expected.serverName !== undefined && !sameServerName(body.serverName, expected.serverName)) return `the proof is of server ${body.serverName}, expected ${expected.serverName}`;
  const mode = proofModeOf(body);
  if (differs(mode, expected.mode)) return `the proof is of mode ${mode}, expected ${expected.mode}`;
  if (body.testTrustAnchor && !expected.allowTestTrustAnchor) {
    return "the proof was made under a TEST trust anchor: it proves nothing about the public web; accept such a proof only on purpose (cli verify --allow-test-anchor, verifyProof's allowTestTrustAnchor)";
  }
  if (isHiddenRequest(body) && !expected.allowHiddenRequest) {
    return `the proof's ${HIDDEN_REQUEST_LIMIT}; accept such a proof only on purpose (cli verify --allow-hidden-request, verifyProof's allowHiddenRequest)`;
  }
  if (expected.recipient !== undefined && body.recipient !== expected.recipient.toLowerCase()) {
    return body.recipient === undefined ? `the proof names no recipient, expected ${expected.recipient}` : `the proof was made for ${body.recipient}, expected ${expected.recipient}`;
  }
  return claimsMismatch(body.claims ?? [], expected.claims ?? []) ?? expectedRequestMismatch(body, expected.method, url);
}

/** The expected URL, parsed; one that is not an https URL is the caller's mistake (config_invalid), not the proof's. */
function expectedUrl(url: string | undefined): URL | undefined {
  if (url === undefined) return undefined;
  if (!URL.canParse(url) || new URL(url).protocol !== "https:") throw new AppError("config_invalid", `the expected URL ${JSON.stringify(url.slice(0, 200))} is not an https URL`);
  return new URL(url);
}

// ---- view ----

/** Length of the valid UTF-8 sequence at `i`, or 0 when the byte there does not start one (RFC 3629 table). */
function utf8SequenceLength(bytes: Uint8Array, i: number): number {
  const lead = bytes[i] as number;
  if (lead < 0x80) return 1;
  const [length, low, high] =
    lead >= 0xc2 && lead <= 0xdf ? [2, 0x80, 0xbf]
    : lead === 0xe0 ? [3, 0xa0, 0xbf]
    : lead === 0xed ? [3, 0x80, 0x9f]
    : lead >= 0xe1 && lead <= 0xef ? [3, 0x80, 0xbf]
    : lead === 0xf0 ? [4, 0x90, 0xbf]
    : lead >= 0xf1 && lead <= 0xf3 ? [4, 0x80, 0xbf]
    : lead === 0xf4 ? [4, 0x80, 0x8f]
    : [0, 0, 0];
  if (length === 0 || i + length > bytes.length) return 0;
  for (let k = 1; k < length; k++) {
    const byte = bytes[i + k] as number;
    const [min, max] = k === 1 ? [low, high] : [0x80, 0xbf];
    if (byte < min || byte > max) return 0;
  }
  return length;
}

function revealedText(bytes: Uint8Array): string {
  const decoder = new TextDecoder();
  let out = "";
  let runStart = 0;
  for (let i = 0; i < bytes.length; ) {
    const length = utf8SequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    out += decoder.decode(bytes.subarray(runStart, i)) + `\\x${(bytes[i] as number).toString(16).padStart(2, "0")}`;
    runStart = ++i;
  }
  return (out + decoder.decode(bytes.subarray(runStart))).replaceAll(HIDDEN_BYTE_MARKER, "\\u2588");
}

export function transcriptView(transcript: TranscriptDirection): TranscriptView {
  let text = "";
  let position = 0;
  let revealedBytes = 0;
  for (const range of transcript.revealed) {
    text += HIDDEN_BYTE_MARKER.repeat(range.start - position) + revealedText(decodeBase64(range.data) ?? new Uint8Array());
    revealedBytes += range.end - range.start;
    position = range.end;
  }
  text += HIDDEN_BYTE_MARKER.repeat(transcript.length - position);
  return { length: transcript.length, revealed: transcript.revealed, revealedBytes, text };
}

/**
 * What a reader must know of a genuine proof: a test trust anchor; a request hidden whole (accepted on purpose), and
 * what that leaves unproven; a request that does not show it asked the verified server (notaries refuse to sign
 * one now, src/notary/attest.ts; a proof signed before they did still verifies); an answer nobody checked (a proof
 * from before notaries did).
 */
function proofWarnings(body: ProofBody): string[] {
  const warnings = body.testTrustAnchor ? [TEST_TRUST_ANCHOR_WARNING] : [];
  const hostProblem = isHiddenRequest(body) ? null : requestHostProblem(body.transcript.sent, body.serverName, body.serverPort);
  if (isHiddenRequest(body)) warnings.push(`WARNING: this proof's ${HIDDEN_REQUEST_LIMIT}`);
  if (hostProblem) warnings.push(`WARNING: the request does not show that it asked ${body.serverName}: ${hostProblem}`);
  if (!isCheckedBody(body)) warnings.push(UNCHECKED_ANSWER_WARNING);
  return warnings;
}

// ---- entry ----

/**
 * Verifies a proof (parsed JSON, or its JSON text) against the pinned notary key (PEM text or decoded), or
 * against several (a deployment with several notaries): the proof must be signed by one of them, and be
 * about what `expected` names.
 * A pinned PEM that does not decode, or an expected URL that is not an https:// URL, throws AppError("config_invalid"):
 * that is the caller's input, not the proof.
 */
export function verifyProof(
  input: unknown,
  pinnedPublicKey: string | PublicKey | readonly PublicKey[],
  expected: ProofExpectations = {},
): VerifiedProof {
  const pinned = typeof pinnedPublicKey === "string" ? [decodePublicKeyPem(pinnedPublicKey)] : "algorithm" in pinnedPublicKey ? [pinnedPublicKey] : pinnedPublicKey;
  const url = expectedUrl(expected.url);
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch (error) {
      fail(`not JSON (${(error as Error).message})`);
    }
    // JSON.parse keeps the last of duplicate keys and rounds numbers; what another reader shows could differ.
    const problem = jsonTextProblem(input);
    if (problem) fail(problem);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("not a JSON object");
  const { version } = value as { version?: unknown };
  if (version === undefined) fail('missing key "version"');
  const schema = schemaOfVersion(version);
  if (!schema) return fail(`unsupported version ${JSON.stringify(version)} (expected ${READ_VERSIONS.map((known) => JSON.stringify(known)).join(" or ")})`);

  const parsed = v.safeParse(schema, value);
  if (!parsed.success) return fail(describeIssue(parsed.issues[0], { showInput: true }));
  const { body, signature } = parsed.output;
  const proofVersion: string = parsed.output.version;

  // A mode this verifier does not know has rules it cannot apply: refused, however well signed.
  const unknownMode = unknownModeProblem(proofModeOf(body));
  if (unknownMode) fail(`body.mode: ${unknownMode}`);
  const notaryKey = proofKey(body);
  if (!pinned.some((key) => samePublicKey(notaryKey, key))) {
    const expected = pinned.map(publicKeyFingerprint).join(" or ");
    fail(`signed by a different notary key (${publicKeyFingerprint(notaryKey)}, expected ${expected})`);
  }
  if (!signatureMatches(proofVersion, body, signature, notaryKey)) fail("signature does not match: the proof was altered or not signed by this key");
  // A signed body may still break the rules (a careless notary, or one from before a rule): refused all the same.
  const claims = body.claims ?? [];
  // The answer's bytes are laid out only for claims to be judged on: a megabyte answer costs a copy otherwise.
  const claimsJudged = () => (claims.length === 0 ? null : claimsProblem(claims, { bytes: revealedView(body.transcript.recv).bytes, revealed: body.transcript.recv.revealed }));
  const problem = proofBodyProblem(body) ?? checkedFieldsProblem(body) ?? claimsJudged();
  if (problem) fail(problem);
  // Both signatures must speak of the same data: a valid tlsproof/1 signature over a foreign EVM attestation fails.
  const evm = checkEvmAttestation(body, notaryKey);
  if (evm.status === "invalid") fail(evm.problem);
  const mismatch = expectationMismatch(body, expected, url);
  if (mismatch) throw new AppError("proof_mismatch", mismatch);

  const views: { sent?: TranscriptView; recv?: TranscriptView } = {};
  return {
    body,
    testTrustAnchor: body.testTrustAnchor,
    warnings: proofWarnings(body),
    notaryKey,
    notaryFingerprint: publicKeyFingerprint(notaryKey),
    // Built when first read: a caller that only needs the verdict (a prover checking its notary's answer) skips
    // decoding a megabyte answer into text.
    get sent() {
      return (views.sent ??= transcriptView(body.transcript.sent));
    },
    get recv() {
      return (views.recv ??= transcriptView(body.transcript.recv));
    },
    evm: evm.status === "valid" ? evm.attestation : null,
    hiddenHeaders: !isHiddenRequest(body) && hidesHeaderValues(body.transcript.sent) ? HIDDEN_HEADERS_CAN_ADD : null,
    claims,
    recipient: body.recipient ?? null,
  };
}
