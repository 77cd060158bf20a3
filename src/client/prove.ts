/**
 * `prove()`: one proven HTTPS exchange through a tlsproof prover. Subscribes to the proof first, then calls
 * `/proxy`, then waits for the proof; a `503` (over capacity, shutting down, no notary in reach) is retried after `Retry-After`
 * with a fresh request id (ids are single use). One deadline (`timeoutMs`) bounds all of it.
 * The proof is verified before it is returned: signed by a pinned notary key, of this call's request id, the URL's
 * host and port and the mode asked for, showing where it reveals bytes the very answer the prover relayed, and, where
 * it reveals the request, the method, target and Host this call sent. A proof whose request is hidden whole is
 * refused unless `allowHiddenRequest` accepts it. The prover and the plain-HTTP link to it are not trusted to hand over the
 * right proof.
 */
import * as v from "valibot";
import { AppError, type ErrorCode, isErrorCode, retryAfterOf } from "../core/errors.ts";
import { ProxyHeaders, proxyHeadersPart } from "../prover/call/headers.ts";
import { PROXY_MODE_HEADERS } from "../prover/proxy-mode/headers.ts";
import { type ClaimRequest, parseClaims } from "../claims/grammar.ts";
import { unansweredClaim } from "../claims/expect.ts";
import type { Claim } from "../claims/claim.ts";
import { isHiddenRequest } from "../proof/check.ts";
import { proofModeOf } from "../proof/older-proofs.ts";
import type { Proof, ProofMode } from "../proof/format.ts";
import { decodePublicKeyPem } from "../proof/keys.ts";
import { HIDDEN_REQUEST_LIMIT } from "../proof/verify.ts";
import { answerMismatch } from "./answer-check.ts";
import { inOptionWords } from "./callers-words.ts";
import { type TargetResponse, TlsproofError } from "./errors.ts";
import { failure, openProofStream } from "./proof-stream.ts";
import { type Redactions, redactionHeader } from "./redact.ts";
import { errorOf, proverError, readResponse, retryAfterS } from "./response.ts";
import { type VerifiedProof, type VerifiedQuorum, verifyProof, verifyQuorum } from "./verify.ts";
import { type DeliveredProof, isQuorumProofText, signedProofsOf } from "../proof/quorum.ts";

export type ProvableMethod = "GET" | "POST" | "PUT" | "DELETE";

export interface ProveOptions {
  /** The prover's base URL, e.g. `http://127.0.0.1:8080`. */
  prover: string;
  /** Sent as `Authorization: Bearer <apiKey>` when the prover has API keys on. */
  apiKey?: string;
  /**
   * The notary public keys (SPKI PEM) you trust; the proof must be signed by one of them. Required, unless
   * `trustProverNotaryKeys` says to take the keys the prover names.
   */
  notaryKeys?: string | readonly string[];
  /**
   * Take the notary keys from the prover's `/info` instead of pinning them: the proof is then only as
   * trustworthy as the prover and the link to it. For trying things out; pin `notaryKeys` for anything real.
   */
  trustProverNotaryKeys?: boolean;
  /** The target: an `https://` URL, with its query. */
  url: string;
  method?: ProvableMethod;
  /** Headers for the target (the prover drops hop-by-hop ones and sets Host itself). */
  headers?: Record<string, string>;
  /** A JSON value: the engine sends JSON bodies only. */
  body?: unknown;
  /**
   * What the proof hides: entries built with `redact` (`redact.responseBody("balance")`), or written as `T-REDACTED`
   * and `cli prove --redact` write them (`"res:body:balance, req:header:x-api-key"`), or a list of either.
   */
  redact?: Redactions;
  /** A redaction that matches nothing is listed as unmatched instead of preventing the proof. */
  allowUnmatchedRedactions?: boolean;
  /** Prove answers with status ≥ 400 too (by default they get no proof: `target_request_failed`). */
  proveFailed?: boolean;
  /**
   * `mpc` (the notary sees nothing in clear) or `proxy` (the notary relays the connection and sees the response;
   * far faster, TLS 1.3 and large answers). Unset: the prover's default (PROVER_PROOF_MODE).
   */
  mode?: ProofMode;
  /**
   * Proxy mode (`T-PROXY-REVEAL`): what the notary sees of the request. Unset: the request is proven with its secrets
   * (default-hidden credentials, `req:` redactions) kept from the notary on a TLS 1.3 target; on a TLS 1.2 target it is
   * hidden whole. `none`: hidden whole from the notary and the proof. `request`: the notary sees all of it, secrets
   * included (TLS 1.2: the only way to prove the request); `req:` redactions still keep values out of the proof.
   */
  reveal?: "none" | "request";
  /**
   * Accept a proof whose request is hidden whole (proxy mode with `reveal: "none"`, or on a TLS 1.2 target without
   * `reveal: "request"`): it proves the server's answer but not which request it answers (method, URL, Host, port).
   * Default false: such a proof is `proof_mismatch`.
   */
  allowHiddenRequest?: boolean;
  /**
   * Accept a proof made under a test trust anchor (a prover and notary started with TLSN_TEST_TRUST_ANCHOR): it proves
   * nothing about the public web. Default false: such a proof is `proof_mismatch`.
   */
  allowTestTrustAnchor?: boolean;
  /**
   * What the notary is to state of the answer beyond its bytes (`T-CLAIM`): entries such as `res:body:balance>1000`,
   * `res:body:name`, `commit:res:body:balance`, in one string (comma-separated) or a list. Proxy mode judges any value,
   * hidden ones too; MPC mode only values the proof reveals. The result's `claims` are what the proof states.
   */
  claims?: string | readonly string[];
  /** The salt of `commit:` claims (`T-CLAIM-SALT`): 0x and 64 hex digits; keep it to open the commitment later. */
  claimSalt?: string;
  /** The Ethereum address the proof is made for (`T-RECIPIENT`), signed into it and its EVM attestation. */
  recipient?: string;
  /**
   * How many distinct notaries must prove the call (`T-QUORUM`), each in its own session that dials the target: the
   * proof is then a quorum proof, accepted only when that many of `notaryKeys` signed the same claims (needs
   * `claims`; GET only; proxy mode). Left out: the prover's default (one, unless it says otherwise).
   */
  quorum?: number;
  /** Deadline for the whole call, proof included (default 300000: a cold MPC session takes tens of seconds). */
  timeoutMs?: number;
  /** How many times a 503 is retried (default 3). */
  retries?: number;
  signal?: AbortSignal;
  /**
   * Hears the target's answer as soon as `/proxy` relays it, before the proof is waited for (awaited): to use the
   * answer, or show progress, while the proof is made. Not called when the prover refused the call.
   */
  onResponse?: (response: TargetResponse, requestId: string) => void | Promise<void>;
}

export interface ProveResult {
  requestId: string;
  /** The target's answer, as the prover relayed it. */
  response: TargetResponse;
  /** The signed proof; of a quorum proof, the first one (of the session whose answer `response` is). */
  proof: Proof;
  /** A quorum proof (`quorum`, or the prover's default above one): the proofs and what they agree on, verified. */
  quorum?: VerifiedQuorum;
  /** How the proof was made, as its signed body says (older proofs say nothing: MPC). */
  mode: ProofMode;
  /** The proof exactly as delivered: save this text, `cli verify` accepts it. */
  proofText: string;
  /** The proof as verified: signed by a trusted key, of this request id and host, showing `response` (a quorum's first). */
  verified: VerifiedProof;
  /** The notary key the proof event named (informative: the proof was verified against the trusted keys). */
  notaryPublicKey: string;
  /** What the proof states of the answer, one per claim asked, in order (src/claims/claim.ts). */
  claims: Claim[];
}

const DEFAULT_TIMEOUT_MS = 300_000;
const DEFAULT_RETRIES = 3;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The `/proxy` headers this client sets: every mode's (src/prover/call/headers.ts), and proxy mode's own. */
const CALL_ENTRIES = { ...ProxyHeaders.entries, ...PROXY_MODE_HEADERS.request };
/** A `/proxy` header, named as the route's declaration names it. */
type CallHeader = keyof typeof CALL_ENTRIES;

/**
 * The call's `/proxy` headers by the declaration's names, each value first read by the prover's own schema entry, so
 * that what the prover would refuse is refused here, before anything is sent, with the code it would answer. The mode
 * is left to the prover: it may offer a mode it registered, which this process does not know.
 */
function callHeaders(options: ProveOptions, requestId: string): [CallHeader, string][] {
  const claims = claimEntries(options);
  const wanted: Record<CallHeader, string | undefined> = {
    "t-proxy-url": options.url,
    "t-request-id": requestId,
    "t-redacted": options.redact !== undefined && options.redact.length > 0 ? redactionHeader(options.redact) : undefined,
    "t-redacted-unmatched": options.allowUnmatchedRedactions ? "allow" : undefined,
    "t-prove-failed-req": options.proveFailed ? "true" : undefined,
    "t-proof-mode": options.mode || undefined,
    "t-proxy-reveal": options.reveal,
    "t-claim": claims === "" ? undefined : claims,
    "t-claim-salt": options.claimSalt,
    "t-recipient": options.recipient,
    "t-quorum": options.quorum === undefined ? undefined : String(options.quorum),
    "t-max-sent-data": undefined,
    "t-max-recv-data": undefined,
  };
  const entries = Object.entries(wanted).filter((entry): entry is [CallHeader, string] => entry[1] !== undefined);
  for (const [name, value] of entries) {
    if (name === "t-proof-mode") continue;
    const codes: Partial<Record<CallHeader, ErrorCode>> = proxyHeadersPart.entryCodes;
    const refused = (message: string) => new TlsproofError(codes[name] ?? "invalid_header", inOptionWords(message));
    try {
      const read = v.safeParse(CALL_ENTRIES[name], value);
      if (!read.success) throw refused(read.issues[0].message);
    } catch (error) {
      if (error instanceof AppError) throw refused(error.message);
      throw error;
    }
  }
  return entries;
}

function proxyHeaders(options: ProveOptions, requestId: string, auth: Headers): Headers {
  const headers = new Headers(options.headers);
  auth.forEach((value, name) => headers.set(name, value));
  for (const [name, value] of callHeaders(options, requestId)) headers.set(name, value);
  if (options.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json");
  return headers;
}

/** The claims asked, as one `T-CLAIM` value. */
const claimEntries = (options: ProveOptions): string => (typeof options.claims === "string" ? options.claims : (options.claims ?? []).join(","));

/** The claims asked, read as the notary will read them; a malformed one is `invalid_claim` before anything is sent. */
function askedClaims(options: ProveOptions): ClaimRequest[] {
  try {
    return parseClaims(claimEntries(options));
  } catch (error) {
    if (error instanceof AppError) throw new TlsproofError(error.code, error.message);
    throw error;
  }
}

/** A 503 the prover says to retry (over capacity, shutting down; not a target's own 503): its delay in seconds, else undefined. */
const retryDelayS = (error: TlsproofError): number | undefined =>
  error.details.status === 503 && isErrorCode(error.code) && retryAfterOf(error.code) !== undefined ? (error.details.retryAfterS ?? 1) : undefined;

/** The keys the proof must be signed with: the pinned ones, or (opted in) those the prover's /info names. */
async function trustedKeys(options: ProveOptions, signal: AbortSignal, auth: Headers): Promise<readonly string[]> {
  const pinned = typeof options.notaryKeys === "string" ? [options.notaryKeys] : (options.notaryKeys ?? []);
  if (pinned.length > 0) {
    // A key that does not decode fails now, not after the MPC session.
    for (const pem of pinned) {
      try {
        decodePublicKeyPem(pem);
      } catch (error) {
        throw new TlsproofError("config_invalid", `notaryKeys: ${(error as Error).message}`);
      }
    }
    return pinned;
  }
  if (!options.trustProverNotaryKeys) {
    throw new TlsproofError("config_invalid", "prove() needs notaryKeys, the notary keys you trust (or trustProverNotaryKeys: true to take the prover's word)");
  }
  const response = await fetch(new URL("/info", options.prover), { headers: auth, signal });
  if (!response.ok) throw await errorOf(response, "prover /info");
  const info = (await response.json().catch(() => null)) as { notaries?: { publicKey?: unknown }[] } | null;
  const keys = (info?.notaries ?? []).map((notary) => notary.publicKey).filter((key): key is string => typeof key === "string");
  if (keys.length === 0) throw new TlsproofError("bad_response", "the prover's /info names no notary key");
  return keys;
}

/** How prove() accepts a proof whose request is hidden, or avoids making one. */
const HIDDEN_REQUEST_CHOICE =
  'pass allowHiddenRequest: true to accept such a proof, or prove the request: leave reveal unset on a TLS 1.3 target (its secrets kept from the notary), or reveal: "request" (the notary sees it all)';

/**
 * The proof, verified against the trusted keys and bound to this call: its request id, host, mode, request and answer.
 * A quorum proof's proofs are each verified so, at least `quorum` (and its own size) of distinct notaries; the first is
 * the one whose answer the client received.
 */
function boundProof(proofText: string, keys: readonly string[], options: ProveOptions, requestId: string, response: TargetResponse): { verified: VerifiedProof; quorum?: VerifiedQuorum } {
  // A hidden request is judged below, with prove()'s own words; the method and URL where the request shows them.
  const expected = {
    requestId,
    mode: options.mode,
    allowHiddenRequest: true,
    allowTestTrustAnchor: options.allowTestTrustAnchor === true,
    method: options.method ?? "GET",
    url: options.url,
  };
  const refuse = (reason: string) => new TlsproofError("proof_mismatch", reason, { requestId, response });
  const quorum = isQuorumProofText(proofText) ? verifyQuorum([proofText], keys, options.quorum, expected) : undefined;
  if (!quorum && options.quorum !== undefined && options.quorum > 1) throw refuse(`a quorum of ${options.quorum} was asked, and the prover delivered one notary's proof`);
  const verified = quorum?.proofs[0] ?? verifyProof(proofText, keys, expected);
  const { body } = verified;
  if (isHiddenRequest(body) && !options.allowHiddenRequest) throw refuse(`the proof's ${HIDDEN_REQUEST_LIMIT}; ${HIDDEN_REQUEST_CHOICE}`);
  const mismatch = answerMismatch(body.transcript.recv, response);
  if (mismatch) throw refuse(`the proof does not show the answer received: ${mismatch}`);
  const unanswered = unansweredClaim(verified.claims, askedClaims(options));
  if (unanswered !== null) throw refuse(`the proof states no claim ${unanswered}, which was asked`);
  if (options.recipient !== undefined && verified.recipient !== options.recipient.toLowerCase()) throw refuse(`the proof is not made for ${options.recipient}`);
  return { verified, ...(quorum && { quorum }) };
}

/** One attempt with a fresh request id: subscribe, call /proxy, wait for the outcome. */
async function attempt(options: ProveOptions, signal: AbortSignal, auth: Headers, keys: readonly string[]): Promise<ProveResult> {
  const requestId = crypto.randomUUID();
  const headers = proxyHeaders(options, requestId, auth);
  const stream = await openProofStream(options.prover, requestId, auth, signal);
  try {
    const reply = await fetch(new URL("/proxy", options.prover), {
      method: options.method ?? "GET",
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal,
    });
    const response = await readResponse(reply);
    // The prover marks every target's answer it relays (T-PROOF-MODE, and T-PROOF-ID when a proof follows); without
    // either, the answer is the prover's own, a refusal. A target's answer shaped like one is still the target's.
    if (!response.headers.has("t-proof-id") && !response.headers.has("t-proof-mode")) {
      const refused = proverError(response);
      if (refused) {
        throw new TlsproofError(refused.code, refused.message, { status: response.status, requestId, retryAfterS: retryAfterS(response.headers) });
      }
    }
    // The target answered; the stream says whether a proof follows (`target_request_failed` when not).
    await options.onResponse?.(response, requestId);
    const outcome = await stream.outcome;
    if (outcome.kind === "error") {
      throw new TlsproofError(outcome.error.code, outcome.error.message, { ...outcome.error.details, status: response.status, response });
    }
    let delivered: DeliveredProof;
    try {
      delivered = JSON.parse(outcome.proofText) as DeliveredProof;
    } catch {
      throw new TlsproofError("bad_response", "the proof event does not hold JSON", { requestId });
    }
    const { verified, quorum } = boundProof(outcome.proofText, keys, options, requestId, response);
    // Verified above: a quorum proof's first proof is the one whose answer the client received.
    const proof = signedProofsOf(delivered)[0]!;
    return {
      requestId,
      response,
      proof,
      ...(quorum && { quorum }),
      mode: proofModeOf(verified.body),
      proofText: outcome.proofText,
      verified,
      notaryPublicKey: outcome.publicKey,
      claims: verified.claims,
    };
  } finally {
    stream.cancel();
  }
}

/**
 * Fetches `url` through the prover and returns the target's answer with its verified proof. Throws
 * TlsproofError: the prover's code (`invalid_redaction`, `target_forbidden`, `target_request_failed` with the
 * target's `response`, …), `config_invalid` without `notaryKeys`, `proof_invalid` (not signed by a trusted
 * key, or altered), `proof_mismatch` (a valid proof of another request, host or mode, one whose request is hidden
 * without `allowHiddenRequest`, or one not showing the request sent or the answer received), or `timeout`,
 * `aborted`, `network_error`, `bad_response`.
 */
export async function prove(options: ProveOptions): Promise<ProveResult> {
  const deadline = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const auth = new Headers(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {});
  // Fails here, before anything is sent, when a redaction cannot be written or the proof asked for could not be accepted.
  callHeaders(options, crypto.randomUUID());
  askedClaims(options);
  if (options.reveal === "none" && !options.allowHiddenRequest) {
    throw new TlsproofError("config_invalid", `reveal "none" makes a proof whose ${HIDDEN_REQUEST_LIMIT}; pass allowHiddenRequest: true to accept such a proof`);
  }
  const keys = await trustedKeys(options, signal, auth).catch((error: unknown) => {
    throw failure(error, signal);
  });
  for (let retriesLeft = options.retries ?? DEFAULT_RETRIES; ; retriesLeft--) {
    try {
      return await attempt(options, signal, auth, keys);
    } catch (error) {
      const failed = failure(error, signal);
      const delayS = retryDelayS(failed);
      if (delayS === undefined || retriesLeft <= 0) throw failed;
      try {
        await sleep(delayS * 1000, signal);
      } catch {
        throw failure(new Error("aborted while waiting to retry"), signal);
      }
    }
  }
}
