import type { ProofOutcome } from "../../proof/outcome.ts";
import { signedProofsOf } from "../../proof/quorum.ts";

export type { ProofOutcome };

export interface ProofHubOptions {
  /** How long an outcome stays in memory for late subscribers; afterwards they read it from the store. */
  retentionMs: number;
  /**
   * Most bytes of outcomes kept in memory at once (outcomeBytes); the oldest go first, and an outcome larger than
   * this is not kept at all: they stay in the store, and a late subscriber reads them from there.
   */
  maxRetainedBytes: number;
}

/** Fixed cost of an outcome object in memory, and of each range or span in a proof, beside its strings. */
const OUTCOME_OVERHEAD_BYTES = 1024;
const ENTRY_OVERHEAD_BYTES = 64;

/**
 * What an outcome holds in memory, estimated from its strings (a proof's revealed bytes are base64 text) plus a
 * fixed cost per object. Linear in the proof's entries, which verification bounds (src/proof/check.ts).
 */
export function outcomeBytes(outcome: ProofOutcome): number {
  if (outcome.event === "error") return OUTCOME_OVERHEAD_BYTES + outcome.message.length;
  let bytes = OUTCOME_OVERHEAD_BYTES;
  for (const { body } of signedProofsOf(outcome.proof)) {
    bytes += body.notary.publicKey.length;
    for (const direction of [body.transcript.sent, body.transcript.recv]) {
      for (const range of direction.revealed) bytes += ENTRY_OVERHEAD_BYTES + range.data.length;
    }
    for (const redaction of body.redactions) bytes += ENTRY_OVERHEAD_BYTES * (1 + redaction.spans.length) + redaction.pattern.length;
  }
  return bytes;
}

export interface Subscription {
  outcome: Promise<ProofOutcome>;
  /** Stops waiting and gives the subscriber's place back. */
  cancel(): void;
}

type Waiter = (outcome: ProofOutcome) => void;

/**
 * In-memory delivery of outcomes to the subscribers of this process. The store holds every outcome; this
 * only saves subscribers a database read and wakes them when an id settles here. Memory is bounded: one
 * entry per id with subscribers (at most PROVER_SSE_TOTAL), per id in flight here (at most the live
 * sessions), and retained outcomes of at most `maxRetainedBytes` together.
 */
export class ProofHub {
  private readonly waiting = new Map<string, Set<Waiter>>();
  private readonly inFlight = new Set<string>();
  /** Insertion order is settle order: the oldest come first. */
  private readonly retained = new Map<string, { outcome: ProofOutcome; until: number; bytes: number }>();
  private retainedBytes = 0;
  private subscriberCount = 0;

  constructor(private readonly options: ProofHubOptions) {}

  /** A /proxy call of this process took the id: its outcome will be settled here. */
  start(requestId: string): void {
    this.inFlight.add(requestId);
  }

  isInFlight(requestId: string): boolean {
    return this.inFlight.has(requestId);
  }

  /** Wakes every subscriber of the id and keeps the outcome for the retention time. */
  settle(requestId: string, outcome: ProofOutcome): void {
    this.inFlight.delete(requestId);
    this.wake(requestId, outcome);
    this.prune(Date.now());
    if (this.options.retentionMs <= 0) return;
    this.forget(requestId);
    const bytes = outcomeBytes(outcome);
    this.retained.set(requestId, { outcome, until: Date.now() + this.options.retentionMs, bytes });
    this.retainedBytes += bytes;
    // The oldest go first; an outcome larger than the whole budget goes too (the store has it).
    while (this.retainedBytes > this.options.maxRetainedBytes) this.forget(this.retained.keys().next().value!);
  }

  /** The retained outcome, if the id settled here within the retention time. */
  retainedOutcome(requestId: string): ProofOutcome | undefined {
    const kept = this.retained.get(requestId);
    return kept && kept.until > Date.now() ? kept.outcome : undefined;
  }

  /** Waits for the id's outcome in this process (a retained one at once). */
  subscribe(requestId: string): Subscription {
    const kept = this.retainedOutcome(requestId);
    if (kept) return { outcome: Promise.resolve(kept), cancel: () => {} };
    let waiter!: Waiter;
    const outcome = new Promise<ProofOutcome>((resolve) => (waiter = resolve));
    let waiters = this.waiting.get(requestId);
    if (!waiters) this.waiting.set(requestId, (waiters = new Set()));
    waiters.add(waiter);
    this.subscriberCount += 1;
    return { outcome, cancel: () => this.remove(requestId, waiter) };
  }

  subscribers(requestId: string): number {
    return this.waiting.get(requestId)?.size ?? 0;
  }

  totalSubscribers(): number {
    return this.subscriberCount;
  }

  /** What the hub holds, for the memory bound's tests. */
  size(): { waiting: number; inFlight: number; retained: number; retainedBytes: number } {
    return { waiting: this.waiting.size, inFlight: this.inFlight.size, retained: this.retained.size, retainedBytes: this.retainedBytes };
  }

  /** Ends every open subscription with the outcome `outcomeFor` gives (shutdown); nothing is retained. */
  closeAll(outcomeFor: (requestId: string) => ProofOutcome): void {
    for (const requestId of [...this.waiting.keys()]) this.wake(requestId, outcomeFor(requestId));
  }

  private wake(requestId: string, outcome: ProofOutcome): void {
    const waiters = this.waiting.get(requestId);
    if (!waiters) return;
    this.waiting.delete(requestId);
    this.subscriberCount -= waiters.size;
    for (const waiter of waiters) waiter(outcome);
  }

  private remove(requestId: string, waiter: Waiter): void {
    const waiters = this.waiting.get(requestId);
    if (!waiters?.delete(waiter)) return;
    this.subscriberCount -= 1;
    if (waiters.size === 0) this.waiting.delete(requestId);
  }

  private forget(requestId: string): void {
    const kept = this.retained.get(requestId);
    if (!kept) return;
    this.retained.delete(requestId);
    this.retainedBytes -= kept.bytes;
  }

  /** Drops expired outcomes from the front (the oldest). */
  private prune(now: number): void {
    for (const [requestId, kept] of this.retained) {
      if (kept.until > now) break;
      this.forget(requestId);
    }
  }
}
