/**
 * The one proof-body builder, for every mode: from a verified transcript (verified-transcript.ts) and what the prover
 * declared, the body a notary signs. Every rule holds whatever the mode verified:
 * - the server chose HTTP/1.1 or no application protocol (ALPN);
 * - a request the notary saw is one request, revealed with its request line and one Host naming the server
 *   (check.ts, requestHostProblem), held to the request rule where the mode asks (src/proof/request-rule.ts), and
 *   every byte of it the notary did not see is declared hidden; a request it never saw is hidden whole, and the
 *   proof says so;
 * - the answer is one complete HTTP/1.1 answer (src/http1/answer-rule.ts), checked on what the notary saw;
 * - the declared redactions keep the proof rules a verifier applies (check.ts, proofBodyProblem).
 * Only bytes the notary saw enter the proof.
 */
import { AppError } from "../core/errors.ts";
import { checkAnswer, checkSingleRequest } from "../http1/answer-rule.ts";
import { proofBodyProblem, requestHostProblem } from "../proof/check.ts";
import { revealedRequestProblem } from "../proof/request-rule.ts";
import type { ProofBody, RevealedRange, TranscriptDirection } from "../proof/format.ts";
import type { ByteRange, Direction } from "../core/transcript.ts";
import { complementRanges, subtractRanges } from "../core/ranges.ts";
import { modeFacts } from "../proof/modes.ts";
import type { AttestationRequest } from "../protocol/notary.ts";
import { type SeenDirection, type VerifiedTranscript, seenBytes } from "./verified-transcript.ts";
import { parseClaim } from "../claims/grammar.ts";
import { evaluateClaims } from "../claims/evaluate.ts";
import type { Claim } from "../claims/claim.ts";
import { hexToBytes } from "@noble/hashes/utils.js";

export interface AttestationContext {
  publicKeyPem: string;
  algorithm: ProofBody["notary"]["algorithm"];
  testTrustAnchor: boolean;
  notaryVersion: string;
  /** The notary is a prover's embedded one: run by the same operator as the prover, which the proof says. */
  embedded: boolean;
}

/** A transcript direction revealing `ranges` of `bytes` (`length` long), ranges merged as the format wants. */
export function transcriptDirection(bytes: Uint8Array, ranges: readonly ByteRange[], length: number): TranscriptDirection {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  const revealed: RevealedRange[] = [];
  for (const range of sorted) {
    const last = revealed.at(-1);
    // Touching ranges are reported separately at times; the format wants them merged.
    if (last && range.start <= last.end) {
      if (range.end > last.end) last.end = range.end;
    } else revealed.push({ start: range.start, end: range.end, data: "" });
  }
  for (const range of revealed) range.data = Buffer.from(bytes.subarray(range.start, range.end)).toString("base64");
  return { length, revealed };
}

const declaredSpans = (declared: AttestationRequest, direction: Direction): ByteRange[] =>
  declared.redactions.flatMap((entry) => entry.spans.filter((span) => span.direction === direction));

/** What the proof shows of a direction: what the notary saw, less what the prover declared hidden when the notary hides it. */
function shownDirection(direction: SeenDirection, hidden: ByteRange[], hiddenBy: VerifiedTranscript["hiddenBy"]): TranscriptDirection {
  if (!direction.bytes) return { length: direction.length, revealed: [] };
  return transcriptDirection(direction.bytes, hiddenBy === "notary" ? subtractRanges(direction.seen, hidden) : direction.seen, direction.length);
}

/**
 * Bytes of the request the notary did not see (hidden epochs: it read their lengths only) that no declared span
 * covers: the proof's redactions must account for every hidden byte, as an MPC proof's do.
 */
function undeclaredUnseen(sent: SeenDirection, declared: AttestationRequest): ByteRange | undefined {
  return subtractRanges(complementRanges(sent.length, sent.seen), declaredSpans(declared, "sent"))[0];
}

/**
 * Why the request breaks the mode's request rule, judged on what the notary itself saw of it: a byte hidden from it
 * (a hidden epoch) is what the rule is about; a byte it saw but leaves out of the proof, it checked itself.
 */
function requestProblem({ serverName, requestRule, sent }: VerifiedTranscript): string | null {
  if (!requestRule || !sent.bytes) return null;
  return revealedRequestProblem(transcriptDirection(sent.bytes, sent.seen, sent.length), serverName, requestRule);
}

/**
 * A request the notary saw whole keeps the Host rule on every byte it saw, not only on what the proof shows: a
 * second Host (or another port) the proof hides is still a Host the server read.
 */
function wholeRequestHostProblem(transcript: VerifiedTranscript): string | null {
  const { sent, serverName } = transcript;
  if (!sent.bytes || complementRanges(sent.length, sent.seen).length > 0) return null;
  return requestHostProblem(transcriptDirection(sent.bytes, [{ start: 0, end: sent.length }], sent.length), serverName, transcript.serverPort);
}

/**
 * The request's method when the notary saw the request: it must show, as the proof reveals it, that it asked the
 * verified server (not hidden, not another host), be one request, and keep the mode's request rule. Undefined when
 * the request is hidden whole, which only a notary whose mode allows it does (proxy mode: it dialled the server).
 */
function requestMethod(transcript: VerifiedTranscript, proven: TranscriptDirection, declared: AttestationRequest): string | undefined {
  const { sent } = transcript;
  if (sent.seen.length > 0) {
    const undeclared = transcript.hiddenBy === "notary" ? undeclaredUnseen(sent, declared) : undefined;
    if (undeclared) {
      throw new AppError("invalid_body", `declared redactions refused: the request's bytes ${undeclared.start}..${undeclared.end} were hidden from the notary, but no declared span hides them`);
    }
    const hostProblem = requestHostProblem(proven, transcript.serverName, transcript.serverPort) ?? wholeRequestHostProblem(transcript);
    if (hostProblem) throw new AppError("invalid_body", `request refused: ${hostProblem}`);
    const method = checkSingleRequest(seenBytes(sent));
    const problem = requestProblem(transcript);
    if (problem) throw new AppError("request_unproven", `request refused: ${problem}`);
    return method;
  }
  if (!modeFacts(transcript.mode)?.mayHideRequest) throw new AppError("invalid_body", "request refused: the prover revealed no byte of its request");
  if (declaredSpans(declared, "sent").length > 0) {
    throw new AppError("invalid_body", "declared redactions refused: the request is hidden whole, so no span may name it");
  }
  return undefined;
}

/**
 * The claims the prover asked for, judged on the answer as the notary saw it (src/claims/): a value only where the
 * proof shows it, a comparison or a commitment wherever the notary saw the value.
 */
function judgedClaims(recv: SeenDirection, shown: TranscriptDirection, declared: AttestationRequest): Claim[] {
  const requests = (declared.claims ?? []).map((entry, index) => parseClaim(entry.trim(), index + 1));
  if (requests.length === 0) return [];
  const bytes = recv.bytes ?? new Uint8Array(recv.length);
  const seen = new Uint8Array(bytes.length);
  for (const range of recv.seen) seen.fill(1, range.start, range.end);
  const revealed = shown.revealed;
  return evaluateClaims(requests, {
    answer: { bytes, seen },
    shown: (range) => range.end <= range.start || revealed.some((r) => r.start <= range.start && range.end <= r.end),
    ...(declared.claimSalt === undefined ? {} : { salt: hexToBytes(declared.claimSalt.slice(2)) }),
  });
}

export function buildProofBody(transcript: VerifiedTranscript, declared: AttestationRequest, context: AttestationContext): ProofBody {
  const { alpn } = transcript;
  if (alpn !== undefined && alpn !== null && alpn !== "http/1.1") {
    throw new AppError("alpn_refused", `the server chose the application protocol ${JSON.stringify(alpn.slice(0, 32))} by ALPN; a notary signs HTTP/1.1 answers only`);
  }
  const proven = {
    sent: shownDirection(transcript.sent, declaredSpans(declared, "sent"), transcript.hiddenBy),
    recv: shownDirection(transcript.recv, declaredSpans(declared, "recv"), transcript.hiddenBy),
  };
  // The rules `cli verify` applies: a body breaking one is never signed.
  const problem = proofBodyProblem({ transcript: proven, redactions: declared.redactions });
  if (problem) throw new AppError("invalid_body", `declared redactions refused: ${problem}`);
  const method = requestMethod(transcript, proven.sent, declared);
  const responseFraming = checkAnswer(seenBytes(transcript.recv), { end: transcript.connectionEnd, requestMethod: method });
  const claims = judgedClaims(transcript.recv, proven.recv, declared);
  return {
    requestId: declared.requestId,
    notary: { publicKey: context.publicKeyPem, algorithm: context.algorithm, embedded: context.embedded },
    mode: transcript.mode,
    serverName: transcript.serverName,
    ...(transcript.serverPort === undefined ? {} : { serverPort: transcript.serverPort }),
    connectionTime: transcript.connectionTime,
    responseTime: transcript.responseTime,
    responseFraming,
    request: method === undefined ? "hidden" : "revealed",
    tlsVersion: transcript.tlsVersion,
    notarizedAt: Date.now(),
    transcript: proven,
    redactions: declared.redactions,
    testTrustAnchor: context.testTrustAnchor,
    notaryVersion: context.notaryVersion,
    claims,
    ...(declared.recipient === undefined ? {} : { recipient: declared.recipient.toLowerCase() }),
  };
}
