import type { ProofOutcome } from "../proof/outcome.ts";

export type { ProofOutcome };

interface Entry {
  outcome?: ProofOutcome;
  waiters: Set<(outcome: ProofOutcome) => void>;
  /** Set once a /proxy call took this id. */
  used: boolean;
  expiresAt: number;
}

export interface ProofHubOptions {
  /** How long an outcome stays available to late subscribers. */
  retentionMs: number;
  /** How long an id waits, with subscribers but no /proxy call, before it is forgotten. */
  pendingMs: number;
  /** Most request ids remembered at once (outcomes and reservations). */
  maxEntries: number;
}

export interface ProofHub {
  /** Claims a request id for a /proxy call; false when it was used before. */
  claim(requestId: string): boolean;
  /** Delivers the outcome to every subscriber, now and for the retention time. */
  settle(requestId: string, outcome: ProofOutcome): void;
  /** Waits for the outcome; `cancel` unsubscribes. */
  subscribe(requestId: string): { outcome: Promise<ProofOutcome>; cancel(): void };
  subscribers(requestId: string): number;
  totalSubscribers(): number;
  /** Ends every open subscription with this outcome builder (shutdown). */
  closeAll(outcomeFor: (requestId: string) => ProofOutcome): void;
}

/**
 * Outcomes of proofs by request id, so that an SSE subscriber gets its proof whether it came before or
 * after the /proxy call. Memory is bounded: entries expire and the oldest are dropped past maxEntries.
 */
export function createProofHub(options: ProofHubOptions): ProofHub {
  const entries = new Map<string, Entry>();

  function sweep(now: number) {
    for (const [id, entry] of entries) {
      if (entry.expiresAt <= now && entry.waiters.size === 0) entries.delete(id);
    }
    // Map iteration is insertion order: the first entries are the oldest.
    for (const [id, entry] of entries) {
      if (entries.size <= options.maxEntries) break;
      if (entry.waiters.size === 0) entries.delete(id);
    }
  }

  function entryFor(requestId: string): Entry {
    let entry = entries.get(requestId);
    if (!entry) {
      const now = Date.now();
      sweep(now);
      entry = { waiters: new Set(), used: false, expiresAt: now + options.pendingMs };
      entries.set(requestId, entry);
    }
    return entry;
  }

  return {
    claim(requestId) {
      const entry = entryFor(requestId);
      if (entry.used) return false;
      entry.used = true;
      entry.expiresAt = Number.POSITIVE_INFINITY; // until settled
      return true;
    },
    settle(requestId, outcome) {
      const entry = entryFor(requestId);
      entry.outcome = outcome;
      entry.expiresAt = Date.now() + options.retentionMs;
      for (const waiter of entry.waiters) waiter(outcome);
      entry.waiters.clear();
    },
    subscribe(requestId) {
      const entry = entryFor(requestId);
      if (entry.outcome) return { outcome: Promise.resolve(entry.outcome), cancel: () => {} };
      let waiter!: (outcome: ProofOutcome) => void;
      const outcome = new Promise<ProofOutcome>((resolve) => (waiter = resolve));
      entry.waiters.add(waiter);
      return {
        outcome,
        cancel() {
          entry.waiters.delete(waiter);
          if (!entry.used && !entry.outcome && entry.waiters.size === 0) entry.expiresAt = Date.now();
        },
      };
    },
    subscribers: (requestId) => entries.get(requestId)?.waiters.size ?? 0,
    totalSubscribers: () => {
      let total = 0;
      for (const entry of entries.values()) total += entry.waiters.size;
      return total;
    },
    closeAll(outcomeFor) {
      for (const [id, entry] of entries) {
        if (entry.outcome || entry.waiters.size === 0) continue;
        const outcome = outcomeFor(id);
        for (const waiter of entry.waiters) waiter(outcome);
        entry.waiters.clear();
      }
    },
  };
}
