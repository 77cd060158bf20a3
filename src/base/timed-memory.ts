/**
 * What a prover learned of targets (the TLS versions or suites they speak), each entry for its own time: a target
 * is asked again once its entry has expired. Bounded without bookkeeping: past `limit` entries it starts afresh.
 */
export interface TimedMemory<T> {
  /** The value remembered for `key`, unless it has expired. */
  get(key: string): T | undefined;
  set(key: string, value: T, forMs: number): void;
  delete(key: string): void;
}

export function timedMemory<T>(limit: number): TimedMemory<T> {
  const entries = new Map<string, { value: T; until: number }>();
  return {
    get(key) {
      const entry = entries.get(key);
      return entry && entry.until >= Date.now() ? entry.value : undefined;
    },
    set(key, value, forMs) {
      if (entries.size >= limit) entries.clear();
      entries.set(key, { value, until: Date.now() + forMs });
    },
    delete: (key) => void entries.delete(key),
  };
}
