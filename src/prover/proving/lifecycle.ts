/**
 * One proof's life, in every mode, from the call's places to the request id's outcome: the mode's places, the id's
 * claim, the deadline and the shutdown's grace, the exchange, then either the proof (in the background: the mode
 * reveals, the notary attests) or the reason none will come. Every way out ends the run once and settles the id
 * once, through ProofDelivery. HTTP is the caller's business (src/prover/call/routes.ts).
 */
import { AppError, errorText, toAppError } from "../../core/errors.ts";
import type { AnswerHead, HeaderField } from "../../core/exchange.ts";
import type { Logger } from "../../base/log.ts";
import type { ProxyCallKind } from "../../metrics/prover.ts";
import type { ProofOutcome } from "../../proof/outcome.ts";
import type { RedactionResult } from "../../redaction/index.ts";
import { refuseEncodedAnswer } from "../exchange/answer-encoding.ts";
import { refuseUnanswerableHead } from "../exchange/answer-head.ts";
import { createSessionSlots } from "../exchange/capacity.ts";
import { type ProofDelivery, failureOutcome } from "../delivery/proof-delivery.ts";
import type { NotaryClient } from "../notary/client.ts";
import type { ModeRun, PreparedCall, ProofCall, ProvingMode } from "./mode.ts";
import { planProof } from "./plan.ts";
import { claimText } from "../../claims/grammar.ts";
import type { AttestationRequest } from "../../protocol/notary.ts";
import { type RunControl, startControl, within } from "./run-control.ts";
import { provenBy } from "./quorum.ts";

export interface LifecycleDeps {
  /** The prover's notaries: one for a call, or `distinct` ones for a quorum's members. */
  notary: NotaryClient & { distinct(count: number): NotaryClient[] };
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

/** One run of a call's mode and the notary it goes through: a call has one, a quorum's call one per member. */
interface MemberRun {
  run: ModeRun;
  notary: NotaryClient;
}

/** One call on its way: its mode's runs, its control, and what the log says of it. */
interface Running {
  mode: ProvingMode;
  call: ProofCall;
  runs: MemberRun[];
  control: RunControl;
  log: Logger;
}

/** The call's runs: one through the prover's notaries, or one per quorum member, each through its own notary. */
function startRuns(deps: LifecycleDeps, prepared: PreparedCall, call: ProofCall, control: RunControl): MemberRun[] {
  if (call.quorum === 1) return [{ run: prepared.start(control), notary: deps.notary }];
  const startThrough = prepared.startThrough;
  if (!startThrough) throw new AppError("internal", "a quorum call in a mode that cannot choose its notary");
  const runs: MemberRun[] = [];
  try {
    for (const notary of deps.notary.distinct(call.quorum)) runs.push({ run: startThrough(control, notary), notary });
  } catch (error) {
    for (const { run } of runs) run.end();
    throw error;
  }
  return runs;
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
  let runs: MemberRun[];
  try {
    runs = startRuns(deps, prepared, call, control);
  } catch (error) {
    control.stop();
    leave();
    throw error;
  }
  const end = () => {
    for (const { run } of runs) run.end();
    control.stop();
    leave();
  };
  // The claim's durable write runs beside the runs' setup (a notary session, its relay, a TLS handshake): the modes hold the request
  // back until it is done.
  const idClaimed = deps.delivery.claim(call.requestId, call.requestedBy);
  const claimRefusal = idClaimed.then(
    () => undefined,
    (error: unknown) => error,
  );
  const running: Running = { mode, call, runs, control, log: deps.log.child({ requestId: call.requestId, mode: mode.facts.name }) };
  let proving = false;
  try {
    return await exchange(deps, running, idClaimed, () => (proving = true), end);
  } catch (error) {
    // An id that could not be claimed is not this call's to settle: its refusal is the answer, and no request was sent.
    const refused = await claimRefusal;
    if (refused !== undefined) {
      discardAll(runs);
      throw refused;
    }
    const failure = control.failure ?? modeFailure(runs) ?? toAppError(error, "session_failed");
    discardAll(runs);
    // The engine's own words stay in the log: they explain a failure to an operator, not to the client.
    const cause = failure.cause === undefined ? {} : { cause: errorText(failure.cause).slice(0, 300) };
    running.log.warn("proxy request failed", { code: failure.code, error: failure.message, ...cause });
    await deps.delivery.settle(call.requestId, failureOutcome(call.requestId, failure));
    throw failure;
  } finally {
    if (!proving) end();
  }
}

/** Why the mode says a run failed, in its own words, when one of the runs knows better. */
const modeFailure = (runs: readonly MemberRun[]): AppError | undefined => runs.map(({ run }) => run.failure?.()).find((failure) => failure !== undefined);

const discardAll = (runs: readonly MemberRun[]) => {
  for (const { run } of runs) run.discard();
};

/**
 * The exchanges (a quorum's at once) and the client's answer, the first run's; the proof, when one is made, goes on in
 * the background and then calls `end`.
 */
async function exchange(deps: LifecycleDeps, running: Running, idClaimed: Promise<void>, proofStarts: () => void, end: () => void): Promise<ProofAnswer> {
  const { call, runs, control, log } = running;
  // The claim too: no answer is given for an id this call does not hold, whatever a mode does.
  const [, ...exchanges] = await within(control, Promise.all([idClaimed, ...runs.map(({ run }) => run.exchange(log, idClaimed))]));
  const [first] = exchanges;
  log.info("target answered", { status: first!.answer.status, sent: first!.sent.length, recv: first!.recv.length, ...(runs.length > 1 && { sessions: runs.length }) });
  // First, whatever the status: an encoded answer is never proven, and the client is told so plainly (502).
  for (const exchanged of exchanges) refuseEncodedAnswer(exchanged.recv);
  refuseUnanswerableHead(first!.answer);
  // Each exchange's plan, its own bytes' redaction: one refusal makes no proof.
  const attesting: Attesting[] = [];
  let refusal: AppError | undefined;
  for (const exchanged of exchanges) {
    const plan = planProof(call, exchanged);
    if ("refusal" in plan) {
      refusal ??= plan.refusal;
      continue;
    }
    attesting.push({ sessionId: exchanged.notarySessionId, redaction: plan.redaction });
  }
  let proofFollows = false;
  if (refusal) {
    discardAll(runs);
    await deps.delivery.settle(call.requestId, failureOutcome(call.requestId, refusal));
  } else {
    proofStarts();
    proofFollows = true;
    // The proof keeps the session ids and the redactions, not the exchanges: the answers are freed once the client has one.
    // It starts once the client's answer is on its way: its first steps (the reveal, the attestation request) would
    // otherwise run before the answer is written.
    setImmediate(() => void prove(deps, running, attesting).finally(end));
  }
  return { answer: first!.answer, recv: first!.recv, proofFollows, answerHeaders: first!.answerHeaders ?? [] };
}

/** What the attestation request asks the notary to state beside the bytes; nothing when the client asked nothing. */
function claimsAsked(call: ProofCall): Pick<AttestationRequest, "claims" | "claimSalt" | "recipient"> {
  return {
    ...(call.claims.length > 0 && { claims: call.claims.map(claimText) }),
    ...(call.claimSalt !== undefined && call.claims.some((claim) => claim.kind === "commitment") && { claimSalt: call.claimSalt }),
    ...(call.recipient !== undefined && { recipient: call.recipient }),
  };
}

/** What a run's attestation needs: the notary's session that carried its exchange, and what its proof hides. */
interface Attesting {
  sessionId: string;
  redaction: RedactionResult;
}

/** Each run's mode reveals what is not hidden, its notary signs, and the id is settled with the proof or the failure. */
async function prove(deps: LifecycleDeps, running: Running, attesting: Attesting[]): Promise<void> {
  const { mode, call, runs, control, log } = running;
  const started = performance.now();
  let outcome: ProofOutcome;
  try {
    const proofs = await within(
      control,
      Promise.all(
        runs.map(async ({ run, notary }, i) => {
          const { sessionId, redaction } = attesting[i]!;
          const { redactions, fields } = await run.reveal(redaction);
          // The notary answers once it has verified: only then may the prover's side of the session close. The proof is
          // checked against the notary's trusted key, and to be of this request and mode, before it is stored or delivered.
          return notary.attest(mode.facts.name, sessionId, { requestId: call.requestId, redactions, ...claimsAsked(call), ...fields });
        }),
      ),
    );
    outcome = { event: "proof", proof: provenBy(proofs, call.quorum) };
  } catch (error) {
    outcome = failureOutcome(call.requestId, control.failure ?? toAppError(error, "session_failed"));
    discardAll(runs);
  }
  // The run's places are held until the outcome is stored: shutdown waits for it before closing the store.
  const delivered = await deps.delivery.settle(call.requestId, outcome);
  if (delivered.event === "proof") log.info("proof made", { ms: Math.round(performance.now() - started) });
  else log.warn("proof failed", { code: delivered.code, error: delivered.message });
}
