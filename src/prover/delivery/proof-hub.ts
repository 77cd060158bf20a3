import type { ProofOutcome } from "../../proof/outcome.ts";

export type { ProofOutcome };

export interface ProofHubOptions {
  /** How long an outcome stays in memory for late subscribers; afterwards they read it from the store. */
  retentionMs: number;
  /** Most outcomes kept in memory at once; the oldest go first (they stay in the store). */
  maxRetained: number;
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
 * sessions), and per retained outcome (at most `maxRetained`).
 */
export class ProofHub {
  private readonly waiting = new Map<string, Set<Waiter>>();
  private readonly inFlight = new Set<string>();
  /** Insertion order is settle order: the oldest come first. */
  private readonly retained = new Map<string, { outcome: ProofOutcome; until: number }>();
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
    if (this.options.retentionMs > 0 && this.options.maxRetained > 0) {
      this.retained.delete(requestId);
      this.retained.set(requestId, { outcome, until: Date.now() + this.options.retentionMs });
      if (this.retained.size > this.options.maxRetained) this.retained.delete(this.retained.keys().next().value!);
    }
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
  size(): { waiting: number; inFlight: number; retained: number } {
    return { waiting: this.waiting.size, inFlight: this.inFlight.size, retained: this.retained.size };
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

  /** Drops expired outcomes from the front (the oldest). */
  private prune(now: number): void {
    for (const [requestId, kept] of this.retained) {
      if (kept.until > now) break;
      this.retained.delete(requestId);
    }
  }
}
