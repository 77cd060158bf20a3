/**
 * The prover's seam for proof modes (docs/design.md, "How to add a mode"). A mode is a backend (ProvingMode) that
 * sets up with its notary, makes the exchange with the target, and reveals to the notary what the proof shows;
 * everything around that is one lifecycle for every mode (lifecycle.ts): the request id's claim, the deadline and
 * the shutdown's grace, the client's answer, the proof's plan, the attestation, delivery and outcome, metrics, logs.
 */
import type * as v from "valibot";
import type { AppError } from "../../core/errors.ts";
import type { AnswerHead, ExchangeRequest, ExchangedBytes, HeaderField } from "../../core/exchange.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import type { Target } from "../../core/target.ts";
import type { Logger } from "../../base/log.ts";
import type { DeclaredRedaction } from "../../proof/format.ts";
import type { ModeFacts } from "../../proof/modes.ts";
import type { RedactionResult } from "../../redaction/index.ts";
import type { ProofChoices } from "./plan.ts";
import type { ClaimRequest } from "../../claims/grammar.ts";
import type { RunControl } from "./run-control.ts";
import type { NotaryClient } from "../notary/client.ts";

/**
 * A mode's own `/proxy` headers, beside the ones every mode reads (src/prover/call/headers.ts): `/proxy`'s declaration
 * composes the offered modes' (read, refused and documented as the others are); a call carrying another mode's
 * header is refused before its mode sees it.
 */
export interface ModeHeaders<Entries extends v.ObjectEntries = v.ObjectEntries> {
  /** Request headers by lower-case name, each optional, its schema refusing with a message that names the header. */
  request: Entries;
  /** Answer headers the mode may set (ModeExchange.answerHeaders), by name, for the document. */
  answer: Readonly<Record<string, v.GenericSchema>>;
}

/**
 * The call's values of its mode's own request headers, typed by the declaration the mode passes (the route parsed
 * them with it; the declaration is read for its type only).
 */
export const ownHeaders = <Entries extends v.ObjectEntries>(call: ProofCall, _declared: ModeHeaders<Entries>): Partial<OwnValues<Entries>> =>
  call.modeHeaders as Partial<OwnValues<Entries>>;
type OwnValues<Entries extends v.ObjectEntries> = v.InferOutput<v.ObjectSchema<Entries, undefined>>;

/** A /proxy call as every mode receives it: its headers read and checked once (src/prover/call/headers.ts). */
export interface ProofCall extends ProofChoices {
  requestId: string;
  target: Target;
  /** What to send, its headers chosen by the prover (forwarded, dropped, its own). */
  exchange: ExchangeRequest;
  /** The values of the mode's own request headers that the call gave (ModeHeaders; read with ownHeaders). */
  modeHeaders: Readonly<Record<string, unknown>>;
  /** T-MAX-SENT-DATA and T-MAX-RECV-DATA as announced: what they bound is the mode's to say. */
  announced: Partial<SessionSizes>;
  /** `T-CLAIM`, `T-CLAIM-SALT` and `T-RECIPIENT`: what the notary is asked to state beside the bytes. */
  claims: ClaimRequest[];
  claimSalt?: string;
  recipient?: string;
  /** How many distinct notaries prove the call, each in its own run (T-QUORUM, else PROVER_NOTARY_QUORUM); 1: one proof. */
  quorum: number;
  /** The digest of the caller's API key (keys on), recorded with the request id. */
  requestedBy?: string;
}

/** One mode's backend. */
export interface ProvingMode {
  /** Its name and what a verifier knows of it (src/proof/modes.ts). */
  facts: ModeFacts;
  /** Its own `/proxy` headers, if it reads or sets any. */
  headers?: ModeHeaders;
  /**
   * Checks what this mode makes of the call, before any work: a refusal thrown here is the client's 4xx and settles
   * its request id. The result starts the call's run.
   */
  prepare(call: ProofCall): PreparedCall;
}

export interface PreparedCall {
  /** How long the call may take, from its start to its outcome; past it the run is abandoned (session_timeout). */
  deadlineMs: number;
  /** The session size class the call's metrics name, for a mode that sizes sessions. */
  sizes?: SessionSizes;
  /**
   * Takes the mode's places for the call (over_capacity, 503 with Retry-After, when none is free: nothing was sent)
   * and starts its run. `control` is abandoned at the deadline, at the shutdown's end, or by the run itself.
   */
  start(control: RunControl): ModeRun;
  /**
   * The same, the run going through this notary only: one member of a quorum (quorum.ts). A mode without it cannot
   * prove a call through several notaries (its sessions are set up in advance, say), and such calls are refused.
   */
  startThrough?(control: RunControl, notary: NotaryClient): ModeRun;
}

/** One call's run in a mode. The lifecycle calls exchange, then reveal when a proof is made, then end once. */
export interface ModeRun {
  /**
   * Sets up with the notary (or takes a session set up in advance) and makes the exchange with the target. Nothing of
   * the request may reach the target before `idClaimed` resolves (the request id's claim is durable; it rejects when
   * the id is taken): the setup runs meanwhile.
   */
  exchange(log: Logger, idClaimed: Promise<void>): Promise<ModeExchange>;
  /** Reveals to the notary what the proof shows (`redaction` says what it hides): the attestation's part that is the mode's. */
  reveal(redaction: RedactionResult): Promise<ModeAttestation>;
  /** Why the run failed in the mode's own words, when it knows better than the error that surfaced (a relay the notary cut). */
  failure?(): AppError | undefined;
  /** Ends a run that makes no proof, or whose proof failed: frees the notary's session now. */
  discard(): void;
  /** Called once, when the run is over (its outcome stored): frees its places and whatever it still holds. */
  end(): void;
}

export interface ModeExchange extends ExchangedBytes {
  answer: AnswerHead;
  /** The notary's session that carried the exchange: the one attested. */
  notarySessionId: string;
  /** Headers of the client's answer that the mode adds (MPC: its session's size class). */
  answerHeaders?: HeaderField[];
}

export interface ModeAttestation {
  /** The redactions the proof declares (a mode that hides the request whole leaves out the spans that named it). */
  redactions: DeclaredRedaction[];
  /** What the mode adds to the attestation request (proxy mode: the revealed keys). */
  fields?: Record<string, unknown>;
}
