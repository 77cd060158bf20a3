/**
 * One proof session's life, from taking an MPC session out of the pool to the request id's outcome:
 * slot, id claim, target check, exchange, then either the proof (in the background) or the reason none
 * will come. Every way out ends the session once (`SessionRun.discard`) and settles the id once, through
 * `ProofDelivery`. HTTP is the caller's business (proxy.ts).
 */
import type { LoopbackBridge } from "../../engine/bridge.ts";
import type { AnswerHead, ExchangeRequest } from "../../core/exchange.ts";
import { type EngineExchange, type ProverSession, closeProverSession, revealTranscript } from "../../engine/session.ts";
import { AppError, errorText, toAppError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { ProofOutcome } from "../../proof/outcome.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import type { EndpointSizes } from "../pool/endpoint-sizes.ts";
import type { EngineSuiteCheck } from "./mpc-probe.ts";
import { type RedactionPattern, type RedactionResult, computeRedactions, revealedRanges } from "../../redaction/index.ts";
import type { SessionSlots } from "../exchange/capacity.ts";
import type { NotaryClient } from "../notary/client.ts";
import type { SessionSource } from "../pool/pool.ts";
import { refuseEncodedAnswer } from "../exchange/answer-encoding.ts";
import { type ProofDelivery, failureOutcome } from "../delivery/proof-delivery.ts";
import { type SessionRun, startRun, within } from "./session-run.ts";
import { type Sizing, runSizedExchange } from "./sized-exchange.ts";
import { type TargetPolicy, resolveTarget } from "../../core/target-policy.ts";
import type { Target } from "../../core/target.ts";
import type { TurnGate } from "../pool/turn-gate.ts";

export interface SessionDeps {
  notary: NotaryClient;
  bridge: LoopbackBridge;
  sessions: SessionSource;
  slots: SessionSlots;
  delivery: ProofDelivery;
  policy: TargetPolicy;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  sessionTimeoutMs: number;
  /** Aborted when the prover's shutdown grace runs out (session-run.ts). */
  shutdown: AbortSignal;
  /** Answer sizes learned per endpoint (sessions are sized from them). */
  endpointSizes: EndpointSizes;
  /** Exchanges with targets take turns (sized-exchange.ts). */
  exchanges: Pick<TurnGate, "enter">;
  /** Targets that cannot speak the engine's one suite are refused before any MPC work. */
  engineSuite: EngineSuiteCheck;
  log: Logger;
}

export interface ProofRequest {
  requestId: string;
  target: Target;
  /** The session size the exchange needs, and whether a too-small guess is repeated. */
  sizing: Sizing;
  /** What the engine sends; the caller has chosen the headers. */
  exchange: ExchangeRequest;
  patterns: readonly RedactionPattern[];
  /** A proof may list patterns that matched nothing (`T-REDACTED-UNMATCHED: allow`). */
  allowUnmatched: boolean;
  /** Answers with status ≥ 400 are proven too. */
  proveFailed: boolean;
  /** Called once the MPC part starts: from then on the client's connection is silent for long stretches. */
  onMpcStart(): void;
  /** The digest of the caller's API key (keys on), recorded with the request id. */
  requestedBy?: string;
}

export interface SessionAnswer {
  response: AnswerHead;
  /** The raw response bytes of the exchange. */
  recv: Uint8Array;
  /** A proof is being made for this id. */
  proofFollows: boolean;
  /** The size class of the session that carried the exchange. */
  sessionSizes: SessionSizes;
  /** Set when the exchange was repeated in this class because its answer did not fit the first session. */
  repeatedIn?: SessionSizes;
}

/**
 * Runs the exchange and answers as soon as the target has; the proof, when one is made, is settled later.
 * Throws the AppError of a failure, after settling the id with it.
 */
export async function runProofSession(deps: SessionDeps, request: ProofRequest): Promise<SessionAnswer> {
  const { requestId } = request;
  const run = startRun(deps);
  try {
    await deps.delivery.claim(requestId, request.requestedBy);
  } catch (error) {
    run.end();
    throw error;
  }
  const log = deps.log.child({ requestId });
  let proving = false;
  try {
    const resolved = await resolveTarget(request.target, deps.policy);
    await deps.engineSuite.check(resolved);
    request.onMpcStart();
    const { session, exchange, sizes, repeatedIn } = await runSizedExchange(deps, run, resolved, request.exchange, request.sizing, log);
    const status = exchange.response.status;
    log.info("target answered", { status, sent: exchange.sent.length, recv: exchange.recv.length });
    // First, whatever the status: an encoded answer is never proven, and the client is told so plainly (502).
    refuseEncodedAnswer(exchange.recv);

    const plan = planProof(request, exchange);
    if ("refusal" in plan) {
      run.discard();
      await deps.delivery.settle(requestId, failureOutcome(requestId, plan.refusal));
    } else {
      proving = true;
      void prove(deps, run, session, requestId, exchange, plan.redaction, log);
    }
    return { response: exchange.response, recv: exchange.recv, proofFollows: proving, sessionSizes: sizes, repeatedIn };
  } catch (error) {
    const failure = run.failure ?? toAppError(error, "session_failed");
    run.discard();
    // The engine's own words stay in the log: they explain a failure to an operator, not to the client.
    const cause = failure.cause === undefined ? {} : { cause: errorText(failure.cause).slice(0, 300) };
    log.warn("proxy request failed", { code: failure.code, error: failure.message, ...cause });
    await deps.delivery.settle(requestId, failureOutcome(requestId, failure));
    throw failure;
  } finally {
    if (!proving) run.end();
  }
}

/** What decides whether and how an exchange is proven: the client's redaction and failure choices. */
export type ProofChoices = Pick<ProofRequest, "patterns" | "allowUnmatched" | "proveFailed">;

/** The redaction a proof of this exchange will use, or why no proof is made (MPC and proxy mode alike). */
export function planProof(request: ProofChoices, exchange: Pick<EngineExchange, "sent" | "recv"> & { response: { status: number } }): { redaction: RedactionResult } | { refusal: AppError } {
  const status = exchange.response.status;
  if (status >= 400 && !request.proveFailed) {
    return { refusal: new AppError("target_request_failed", `the target answered ${status}; no proof is made without T-PROVE-FAILED-REQ: true`) };
  }
  const redaction = computeRedactions({ sent: exchange.sent, recv: exchange.recv }, request.patterns);
  const { unmatched } = redaction;
  if (unmatched.length > 0 && !request.allowUnmatched) {
    // Entries are named by position only: a pattern's text may be the secret itself.
    const entries = unmatched.length === 1 ? `T-REDACTED entry ${unmatched[0]}` : `T-REDACTED entries ${unmatched.join(", ")}`;
    return { refusal: new AppError("redaction_unmatched", `${entries} matched nothing; no proof is made (T-REDACTED-UNMATCHED: allow proves anyway)`) };
  }
  return { redaction };
}

/** Reveals what is not hidden, has the notary sign it, and settles the id with the proof or the failure. */
async function prove(
  deps: SessionDeps,
  run: SessionRun,
  session: ProverSession,
  requestId: string,
  exchange: EngineExchange,
  redaction: RedactionResult,
  log: Logger,
): Promise<void> {
  const started = performance.now();
  let outcome: ProofOutcome;
  try {
    await within(
      run,
      revealTranscript(session, {
        sent: revealedRanges(exchange.sent.length, redaction.hidden.sent),
        recv: revealedRanges(exchange.recv.length, redaction.hidden.recv),
      }),
    );
    // The notary answers once it has verified: only then may the prover's side of the session close.
    // Checked against the notary's trusted key before it is stored or delivered (notary-trust.ts).
    const proof = await deps.notary.attest(session.notarySessionId, { requestId, redactions: redaction.declared }, "mpc");
    outcome = { event: "proof", proof };
  } catch (error) {
    outcome = failureOutcome(requestId, run.failure ?? toAppError(error, "session_failed"));
  } finally {
    closeProverSession(session);
  }
  try {
    // The slot is held until the outcome is stored: shutdown waits for it before closing the store.
    const delivered = await deps.delivery.settle(requestId, outcome);
    if (delivered.event === "proof") log.info("proof made", { ms: Math.round(performance.now() - started) });
    else log.warn("proof failed", { code: delivered.code, error: delivered.message });
  } finally {
    run.end();
  }
}
