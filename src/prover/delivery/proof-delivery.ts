import type { RecordedOutcome } from "../../store/proof-records.ts";
import { AppError, toAppError } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import type { ProofOutcome } from "../../proof/outcome.ts";
import type { ProofRecords } from "../../store/index.ts";
import type { ProofHub, Subscription } from "./proof-hub.ts";

export interface DeliveryOptions {
  /** A subscriber to an id that no /proxy call has used gets `unknown_request` after this long. */
  unknownRequestMs: number;
  /**
   * How often a subscriber to an id not in flight here asks the store (another prover may settle it). With
   * PostgreSQL a NOTIFY wakes it at once (`settledElsewhere`); this is then only the safety re-check.
   */
  storePollMs: number;
}

/** The outcome of an id whose session ended without a proof. */
export function failureOutcome(requestId: string, failure: AppError): ProofOutcome {
  return { event: "error", requestId, code: failure.code, message: failure.message };
}

/** What an id's recorded outcome was, for a log line. */
const recordedCode = (outcome: ProofOutcome): { recorded: string } => ({ recorded: outcome.event === "proof" ? "proof" : outcome.code });

/**
 * Request ids and their outcomes, durable and delivered: the store's records decide whether an id is new
 * (single use for ever, failed attempts included) and keep every outcome; the hub wakes this process's
 * subscribers. An outcome is recorded before anyone is told, so whatever a subscriber got, a later one
 * gets too.
 */
export class ProofDelivery {
  constructor(
    private readonly hub: ProofHub,
    private readonly records: ProofRecords,
    private readonly options: DeliveryOptions,
    private readonly log: Logger,
    /** With a store shared by several provers: confirms this one's presence before each claim (instance-presence.ts). */
    private readonly confirmPresence: () => Promise<void> = async () => {},
  ) {}

  /**
   * Takes the id for a /proxy call, or throws `duplicate_request_id` when it was ever used before.
   * `requestedBy`: the digest of the caller's API key, recorded with the id.
   */
  async claim(requestId: string, requestedBy?: string): Promise<void> {
    let claimed: boolean;
    try {
      await this.confirmPresence();
      claimed = await this.records.claim(requestId, requestedBy);
    } catch (error) {
      this.log.error("recording a request id failed", { requestId, error: toAppError(error).message });
      throw new AppError("storage_failed", "the request id could not be recorded");
    }
    if (!claimed) throw new AppError("duplicate_request_id", "T-REQUEST-ID was used before");
    this.hub.start(requestId);
  }

  /**
   * A /proxy call refused before any work: its id is taken and settled with the refusal, so that a subscriber
   * hears it at once. An id used before keeps its outcome; a store that fails leaves the id as it was (logged).
   */
  async refuse(requestId: string, refusal: AppError, requestedBy?: string): Promise<void> {
    try {
      await this.claim(requestId, requestedBy);
    } catch {
      return;
    }
    await this.settle(requestId, failureOutcome(requestId, refusal));
  }

  /**
   * Records the outcome, then delivers what the store holds for the id: the outcome, or the one recorded
   * first (another prover settled the id while this one was silent, say). A proof that cannot be stored is
   * not delivered: its id settles with `storage_failed`, so that every proof a client ever received can be
   * fetched again. Returns what subscribers got.
   */
  async settle(requestId: string, outcome: ProofOutcome): Promise<ProofOutcome> {
    const delivered = await this.record(requestId, outcome);
    this.hub.settle(requestId, delivered);
    return delivered;
  }

  /** Stores the outcome; answers the one to deliver. */
  private async record(requestId: string, outcome: ProofOutcome): Promise<ProofOutcome> {
    let failure = outcome;
    if (outcome.event === "proof") {
      try {
        const result = await this.records.saveProof(requestId, outcome.proof);
        if (result.saved) return outcome;
        this.log.error("a proof was made for an id already settled; the recorded outcome is delivered instead", { requestId, ...recordedCode(result.outcome) });
        return result.outcome;
      } catch (error) {
        const cause = toAppError(error, "storage_failed");
        this.log.error("storing the proof failed; the id settles without a proof", { requestId, error: cause.message });
        failure = failureOutcome(requestId, new AppError("storage_failed", "the proof was made but could not be stored"));
      }
    }
    if (failure.event !== "error") return failure;
    try {
      const result = await this.records.saveFailure(requestId, { code: failure.code, message: failure.message });
      if (result.saved) return failure;
      this.log.error("a failure was recorded for an id already settled; the recorded outcome is delivered instead", { requestId, failed: failure.code, ...recordedCode(result.outcome) });
      return result.outcome;
    } catch (error) {
      // The store is out of reach: what it holds cannot be read either, and an error delivers no proof.
      this.log.error("recording a failed request failed", { requestId, error: toAppError(error).message });
      return failure;
    }
  }

  /**
   * Waits for the id's outcome: from memory when it settled here recently or settles here later, else from
   * the store (made before a restart, after the retention time, or by another prover sharing the store).
   */
  watch(requestId: string): Subscription {
    const kept = this.hub.retainedOutcome(requestId);
    if (kept) return { outcome: Promise.resolve(kept), cancel: () => {} };
    const local = this.hub.subscribe(requestId);
    let resolveOwn!: (outcome: ProofOutcome) => void;
    const own = new Promise<ProofOutcome>((resolve) => (resolveOwn = resolve));
    const giveUpAt = Date.now() + this.options.unknownRequestMs;
    let timer: Timer | undefined;
    let done = false;
    const finish = (outcome: ProofOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      local.cancel();
      resolveOwn(outcome);
    };
    const check = async () => {
      if (done) return;
      if (!this.hub.isInFlight(requestId)) {
        const recorded = await this.records.lookup(requestId).catch((error: unknown) => {
          this.log.warn("reading a request id's record failed", { requestId, error: toAppError(error).message });
          return undefined;
        });
        if (done) return;
        if (recorded?.state === "settled") return finish(recorded.outcome);
        if (recorded?.state === "unknown" && Date.now() >= giveUpAt) {
          return finish(failureOutcome(requestId, new AppError("unknown_request", "no /proxy call used this request id in time")));
        }
      }
      const untilGiveUp = Math.max(0, giveUpAt - Date.now());
      timer = setTimeout(check, untilGiveUp > 0 ? Math.min(this.options.storePollMs, untilGiveUp) : this.options.storePollMs);
    };
    void local.outcome.then(finish);
    void check();
    return {
      outcome: Promise.race([local.outcome, own]),
      cancel: () => {
        done = true;
        clearTimeout(timer);
        local.cancel();
      },
    };
  }

  /**
   * Another prover sharing the store settled this id (its NOTIFY arrived): wakes this process's
   * subscribers with the recorded outcome, read once however many wait.
   */
  async settledElsewhere(requestId: string): Promise<void> {
    if (this.hub.subscribers(requestId) === 0 || this.hub.isInFlight(requestId)) return;
    const recorded = await this.records.lookup(requestId).catch((error: unknown) => {
      this.log.warn("reading a request id's record failed", { requestId, error: toAppError(error).message });
      return undefined;
    });
    if (recorded?.state === "settled") this.hub.settle(requestId, recorded.outcome);
  }

  /** The digest of the API key that made the request (undefined: not claimed, or without a key). */
  /** The id's state now: unknown, pending (claimed, no outcome yet) or settled with its outcome; from memory first, then the store. */
  async state(requestId: string): Promise<RecordedOutcome> {
    const kept = this.hub.retainedOutcome(requestId);
    if (kept) return { state: "settled", outcome: kept };
    return this.records.lookup(requestId);
  }

  requestedBy(requestId: string): Promise<string | undefined> {
    return this.records.requestedBy(requestId);
  }

  subscribers(requestId: string): number {
    return this.hub.subscribers(requestId);
  }

  totalSubscribers(): number {
    return this.hub.totalSubscribers();
  }

  /** Ends every open subscription with `shutting_down` (the prover stops). */
  closeAll(): void {
    this.hub.closeAll((requestId) => failureOutcome(requestId, new AppError("shutting_down", "the prover is shutting down")));
  }
}
