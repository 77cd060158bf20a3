/**
 * One proof's life, in every mode, from the call's places to the request id's outcome: the mode's places, the id's
 * claim, the deadline and the shutdown's grace, the exchange, then either the proof (in the background: the mode
 * reveals, the notary attests) or the reason none will come. Every way out ends the run once and settles the id
 * once, through ProofDelivery. HTTP is the caller's business (src/prover/proxy/routes.ts).
 */
import { errorText, toAppError } from "../../core/errors.ts";
import type { AnswerHead, HeaderField } from "../../core/exchange.ts";
import type { Logger } from "../../core/log.ts";
import type { ProxyCallKind } from "../../metrics/prover.ts";
import type { ProofOutcome } from "../../proof/outcome.ts";
import type { RedactionResult } from "../../redaction/index.ts";
import { refuseEncodedAnswer } from "../exchange/answer-encoding.ts";
import { createSessionSlots } from "../exchange/capacity.ts";
import { type ProofDelivery, failureOutcome } from "../delivery/proof-delivery.ts";
import type { NotaryClient } from "../notary/client.ts";
import type { ModeRun, PreparedCall, ProofCall, ProvingMode } from "./mode.ts";
import { planProof } from "./plan.ts";
import { claimText } from "../../claims/grammar.ts";
import type { AttestationRequest } from "../../protocol/notary.ts";
import { type RunControl, startControl, within } from "./run-control.ts";

export interface LifecycleDeps {
  notary: NotaryClient;
  delivery: ProofDelivery;
  /** Aborted when the prover's shutdown grace runs out: runs still going end as `shutting_down`. */
  shutdown: AbortSignal;
  /** Starts timing a call; the result ends it. */
  timeProxy(call: ProxyCallKind): (result: "answered" | "failed") => void;
  log: Logger;
}

/** What the client is answered: the target's answer, and whether a proof follows. */
export interface ProofAnswer {
  answer: AnswerHead;
  /** The raw answer bytes. */
  recv: Uint8Array;
  /** A proof is being made for this id. */
  proofFollows: boolean;
  /** Headers of the client's answer that the mode adds. */
  answerHeaders: HeaderField[];
}

/** One call on its way: its mode's run, its control, and what the log says of it. */
interface Running {
  mode: ProvingMode;
  call: ProofCall;
  run: ModeRun;
  control: RunControl;
  log: Logger;
}

export interface ProofLifecycle {
  /** Runs a prepared call; answers as soon as the target has, the proof following in the background. */
  run(mode: ProvingMode, prepared: PreparedCall, call: ProofCall): Promise<ProofAnswer>;
  /** Resolves when no run is left, or after `ms`; true when all ended. */
  drained(ms: number): Promise<boolean>;
}

export function proofLifecycle(deps: LifecycleDeps): ProofLifecycle {
  // Runs in flight, every mode's: a shutdown waits for them (each mode bounds its own with its places).
  const runs = createSessionSlots(Number.POSITIVE_INFINITY);
  return {
    async run(mode, prepared, call) {
      const done = deps.timeProxy({ mode: mode.facts.name, sizes: prepared.sizes });
      try {
        const answer = await runProof(deps, runs.take(), mode, prepared, call);
        done("answered");
        return answer;
      } catch (error) {
        done("failed");
        throw error;
      }
    },
    drained: (ms) => runs.drained(ms),
  };
}

/** Takes the mode's places and the id, then runs the exchange; `leave` is called once the run is over. */
async function runProof(deps: LifecycleDeps, leave: () => void, mode: ProvingMode, prepared: PreparedCall, call: ProofCall): Promise<ProofAnswer> {
  const control = startControl(prepared.deadlineMs, deps.shutdown);
  let run: ModeRun;
  try {
    run = prepared.start(control);
  } catch (error) {
    control.stop();
    leave();
    throw error;
  }
  const end = () => {
    run.end();
    control.stop();
    leave();
  };
  try {
    await deps.delivery.claim(call.requestId, call.requestedBy);
  } catch (error) {
    end();
    throw error;
  }
  const running: Running = { mode, call, run, control, log: deps.log.child({ requestId: call.requestId, mode: mode.facts.name }) };
  let proving = false;
  try {
    return await exchange(deps, running, () => (proving = true), end);
  } catch (error) {
    const failure = control.failure ?? run.failure?.() ?? toAppError(error, "session_failed");
    run.discard();
    // The engine's own words stay in the log: they explain a failure to an operator, not to the client.
    const cause = failure.cause === undefined ? {} : { cause: errorText(failure.cause).slice(0, 300) };
    running.log.warn("proxy request failed", { code: failure.code, error: failure.message, ...cause });
    await deps.delivery.settle(call.requestId, failureOutcome(call.requestId, failure));
    throw failure;
  } finally {
    if (!proving) end();
  }
}

/** The exchange and the client's answer; the proof, when one is made, goes on in the background and then calls `end`. */
async function exchange(deps: LifecycleDeps, running: Running, proofStarts: () => void, end: () => void): Promise<ProofAnswer> {
  const { call, run, control, log } = running;
  const exchanged = await within(control, run.exchange(log));
  log.info("target answered", { status: exchanged.answer.status, sent: exchanged.sent.length, recv: exchanged.recv.length });
  // First, whatever the status: an encoded answer is never proven, and the client is told so plainly (502).
  refuseEncodedAnswer(exchanged.recv);
  const plan = planProof(call, exchanged);
  let proofFollows = false;
  if ("refusal" in plan) {
    run.discard();
    await deps.delivery.settle(call.requestId, failureOutcome(call.requestId, plan.refusal));
  } else {
    proofStarts();
    proofFollows = true;
    // The proof keeps the session id and the redaction, not the exchange: the answer is freed once the client has it.
    void prove(deps, running, exchanged.notarySessionId, plan.redaction).finally(end);
  }
  return { answer: exchanged.answer, recv: exchanged.recv, proofFollows, answerHeaders: exchanged.answerHeaders ?? [] };
}

/** What the attestation request asks the notary to state beside the bytes; nothing when the client asked nothing. */
function claimsAsked(call: ProofCall): Pick<AttestationRequest, "claims" | "claimSalt" | "recipient"> {
  return {
    ...(call.claims.length > 0 && { claims: call.claims.map(claimText) }),
    ...(call.claimSalt !== undefined && call.claims.some((claim) => claim.kind === "commitment") && { claimSalt: call.claimSalt }),
    ...(call.recipient !== undefined && { recipient: call.recipient }),
  };
}

/** The mode reveals what is not hidden, the notary signs, and the id is settled with the proof or the failure. */
async function prove(deps: LifecycleDeps, running: Running, notarySessionId: string, redaction: RedactionResult): Promise<void> {
  const { mode, call, run, control, log } = running;
  const started = performance.now();
  let outcome: ProofOutcome;
  try {
    const { redactions, fields } = await within(control, run.reveal(redaction));
    // The notary answers once it has verified: only then may the prover's side of the session close. The proof is
    // checked against the notary's trusted key, and to be of this request and mode, before it is stored or delivered.
    const proof = await within(control, deps.notary.attest(mode.facts.name, notarySessionId, { requestId: call.requestId, redactions, ...claimsAsked(call), ...fields }));
    outcome = { event: "proof", proof };
  } catch (error) {
    outcome = failureOutcome(call.requestId, control.failure ?? toAppError(error, "session_failed"));
    run.discard();
  }
  // The run's places are held until the outcome is stored: shutdown waits for it before closing the store.
  const delivered = await deps.delivery.settle(call.requestId, outcome);
  if (delivered.event === "proof") log.info("proof made", { ms: Math.round(performance.now() - started) });
  else log.warn("proof failed", { code: delivered.code, error: delivered.message });
}
