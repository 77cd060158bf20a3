/**
 * A quorum of proofs: M or more proofs of one request, each from its own session, signed by distinct pinned notaries,
 * that state the same claims. The transcripts of independent sessions differ (a Date header, a request id), so what
 * a quorum agrees on is its request line, server and claims (src/claims/), which it must have. A prover asked for a
 * quorum (`T-QUORUM`) delivers one quorum proof (QuorumProof): the M signed proofs with what they share written
 * beside them, which a verifier checks against the signed proofs, never takes on trust. Each proof is verified on
 * its own first, with the caller's expectations; then the quorum's rules. A fake then needs every one of those
 * notaries (docs/notary.md, "Trust").
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { describeIssue } from "../core/schema.ts";
import { sameServerName } from "../core/server-name.ts";
import { claimLine } from "../claims/claim.ts";
import { isHiddenRequest } from "./check.ts";
import type { Claim, Proof, ProofBody } from "./format.ts";
import { jsonTextProblem } from "./json-text.ts";
import type { PublicKey } from "./keys.ts";
import { type ProofExpectations, type VerifiedProof, transcriptView, verifyProof } from "./verify.ts";

export const QUORUM_VERSION = "tlsproof-quorum/1";
/** The most notaries one proof may ask for (T-QUORUM, PROVER_NOTARY_QUORUM): each is a session and a dial of the target. */
export const MAX_QUORUM = 16;

/** What a prover delivers for a call with `T-QUORUM: M` (M > 1): docs/proof-format.md, "Quorum proofs". */
export interface QuorumProof {
  version: typeof QUORUM_VERSION;
  /** How many distinct notaries the prover was asked for: the least number this quorum proof stands for. */
  quorum: number;
  /** What every proof shares, written out for readers; a verifier checks each against the signed proofs. */
  requestId: string;
  serverName: string;
  /** The request line as the proofs show it, each hidden byte one "█". */
  requestLine: string;
  claims: Claim[];
  proofs: Proof[];
}

/** A proof as a prover delivers it: one notary's, or a quorum's. */
export type DeliveredProof = Proof | QuorumProof;

/** Whether a JSON value is a quorum proof, by its version (any value: null, a string, an array). */
const isQuorumValue = (value: unknown): boolean => (value as { version?: unknown } | null | undefined)?.version === QUORUM_VERSION;

export const isQuorumProof = (proof: DeliveredProof): proof is QuorumProof => isQuorumValue(proof);

/** The proofs a delivered proof holds, one or the quorum's. */
export const signedProofsOf = (proof: DeliveredProof): Proof[] => (isQuorumProof(proof) ? proof.proofs : [proof]);

export interface VerifiedQuorum {
  /** The least number of distinct notaries asked for: the caller's, or a quorum proof's own when higher. */
  required: number;
  requestLine: string;
  /** The claims every proof states, as they state them. */
  claims: Claim[];
  serverName: string;
  /** The fingerprints of the notaries that signed, one per proof, in the proofs' order. */
  notaries: string[];
  proofs: VerifiedProof[];
}

/** What the proofs of one quorum must share, read from one signed body. */
interface Statement {
  serverName: string;
  /** Null when the request is hidden: nothing then shows that the proofs are of one request. */
  requestLine: string | null;
  recipient: string | null;
  claims: Claim[];
}

function statementOf(body: ProofBody): Statement {
  const requestLine = isHiddenRequest(body) ? null : transcriptView(body.transcript.sent).text.split("\r\n", 1)[0]!;
  return { serverName: body.serverName, requestLine, recipient: body.recipient ?? null, claims: body.claims ?? [] };
}

/** Why proofs do not make one quorum: `claims` when only what they state differs (a value changed between sessions). */
export interface Disagreement {
  claims: boolean;
  reason: string;
}

/**
 * Why these bodies, in order, are no quorum: no claims, another server, a request line hidden or not the same,
 * another recipient, or other claims (each claim that differs named); null when they agree.
 */
export function disagreement(bodies: readonly ProofBody[]): Disagreement | null {
  const [first, ...others] = bodies.map(statementOf);
  if (!first) return { claims: false, reason: "no proof" };
  const other = (reason: string): Disagreement => ({ claims: false, reason });
  if (first.claims.length === 0) return other("the proofs state no claim, and independent sessions agree on their claims only (T-CLAIM)");
  for (const [at, statement] of [first, ...others].entries()) {
    if (statement.requestLine === null) return other(`proof ${at + 1} hides its request: nothing shows the proofs are of one request`);
  }
  for (const [index, statement] of others.entries()) {
    const at = index + 2;
    if (!sameServerName(statement.serverName, first.serverName)) return other(`proof ${at} is of ${statement.serverName}, proof 1 of ${first.serverName}`);
    if (statement.requestLine !== first.requestLine) return other(`proof ${at} shows the request ${JSON.stringify(statement.requestLine)}, proof 1 ${JSON.stringify(first.requestLine)}`);
    if (statement.recipient !== first.recipient) return other(`proof ${at} is made for ${statement.recipient ?? "no recipient"}, proof 1 for ${first.recipient ?? "no recipient"}`);
    const own = statement.claims.map(claimLine);
    const lines = first.claims.map(claimLine);
    if (own.length !== lines.length) return other(`proof ${at} states ${own.length} claims, proof 1 ${lines.length}`);
    const differing = lines.flatMap((line, i) => (own[i] === line ? [] : [`proof ${at} states ${own[i]} where proof 1 states ${line}`]));
    if (differing.length > 0) return { claims: true, reason: differing.join("; ") };
  }
  return null;
}

/** The quorum proof of `proofs` (each already checked by the prover), or why they are none. */
export function quorumProofOf(proofs: readonly Proof[], quorum: number): QuorumProof | Disagreement {
  const problem = disagreement(proofs.map((proof) => proof.body));
  if (problem) return problem;
  const { body } = proofs[0]!;
  const { requestLine, claims } = statementOf(body);
  return { version: QUORUM_VERSION, quorum, requestId: body.requestId, serverName: body.serverName, requestLine: requestLine!, claims, proofs: [...proofs] };
}

/** A quorum proof's own fields; its proofs are checked one by one by verifyProof. */
const QuorumProofSchema = v.strictObject({
  version: v.literal(QUORUM_VERSION),
  quorum: v.pipe(v.number(), v.safeInteger(), v.minValue(2), v.maxValue(MAX_QUORUM)),
  requestId: v.string(),
  serverName: v.string(),
  requestLine: v.string(),
  claims: v.array(v.unknown()),
  proofs: v.pipe(v.array(v.unknown()), v.minLength(2)),
});

const mismatch = (required: number, reason: string) => new AppError("proof_mismatch", `not a quorum of ${required}: ${reason}`);
const invalidQuorumProof = (reason: string) => new AppError("proof_invalid", `invalid quorum proof: ${reason}`);

/** A proof file's JSON value; undefined when the text is not JSON (verifyProof then says so in its own words). */
function jsonValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether a proof file's text is a quorum proof's (its version), however well formed: verifyQuorum says more. */
export const isQuorumProofText = (text: string): boolean => isQuorumValue(jsonValue(text));

/** A quorum proof read from `input` (parsed JSON or its JSON text); undefined for anything else (a proof, or not JSON). */
function readQuorumProof(input: unknown): v.InferOutput<typeof QuorumProofSchema> | undefined {
  const value = typeof input === "string" ? jsonValue(input) : input;
  if (!isQuorumValue(value)) return undefined;
  // As for a proof: JSON.parse keeps the last of duplicate keys and rounds numbers; another reader could differ.
  const problem = typeof input === "string" ? jsonTextProblem(input) : null;
  if (problem) throw invalidQuorumProof(problem);
  const read = v.safeParse(QuorumProofSchema, value);
  if (!read.success) throw invalidQuorumProof(describeIssue(read.issues[0], { showInput: false }));
  return read.output;
}

/**
 * Verifies `inputs` (proofs or quorum proofs, parsed JSON or JSON texts) as a quorum against the pinned keys: each
 * proof valid and as `expected`, at least `quorum` of them (and as many as a quorum proof among them states) by
 * distinct pinned notaries, all showing one request line of one server and stating the same, non-empty claims; a
 * quorum proof's written-out fields must be its proofs'. `quorum` may be left out only for a quorum proof: its own
 * then applies. Throws proof_invalid for a proof that is not valid, proof_mismatch for valid proofs that are no such
 * quorum, config_invalid for a quorum that is not a whole number from 1.
 */
export function verifyQuorum(inputs: readonly unknown[], pinned: readonly PublicKey[], quorum?: number, expected: ProofExpectations = {}): VerifiedQuorum {
  if (quorum !== undefined && (!Number.isSafeInteger(quorum) || quorum < 1)) throw new AppError("config_invalid", "a quorum is a whole number from 1");
  const stated: v.InferOutput<typeof QuorumProofSchema>[] = [];
  const items = inputs.flatMap((input) => {
    const own = readQuorumProof(input);
    if (!own) return [input];
    stated.push(own);
    return own.proofs;
  });
  const required = Math.max(quorum ?? 0, ...stated.map((s) => s.quorum));
  if (required < 1) throw new AppError("config_invalid", "a quorum needs --quorum, or a quorum proof that states its own");
  const verified = items.map((proof, index) => {
    try {
      return verifyProof(proof, pinned, expected);
    } catch (error) {
      if (error instanceof AppError) throw new AppError(error.code, `proof ${index + 1}: ${error.message}`, error.details);
      throw error;
    }
  });
  const notaries = verified.map((proof) => proof.notaryFingerprint);
  const distinct = new Set(notaries).size;
  if (distinct < required) throw mismatch(required, `${distinct === verified.length ? "" : `${verified.length} proofs but `}${distinct} distinct notar${distinct === 1 ? "y" : "ies"} signed them`);
  const problem = disagreement(verified.map((proof) => proof.body));
  if (problem) throw mismatch(required, problem.reason);
  const first = verified[0]!;
  const { requestLine, claims } = statementOf(first.body);
  for (const own of stated) {
    const differs = (field: string) => mismatch(required, `the quorum proof's ${field} is not its proofs'`);
    // Its proofs verified above, so each has a body.
    if (own.proofs.some((proof) => (proof as Proof).body.requestId !== own.requestId)) throw differs("requestId");
    if (!sameServerName(own.serverName, first.body.serverName)) throw differs("serverName");
    if (own.requestLine !== requestLine) throw differs("requestLine");
    if (JSON.stringify(own.claims) !== JSON.stringify(claims)) throw differs("claims");
  }
  return { required, requestLine: requestLine!, claims, serverName: first.body.serverName, notaries, proofs: verified };
}
