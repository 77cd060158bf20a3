/**
 * A proxy session's idle watch: it ends the session once no byte passed the relay either way for the idle timeout,
 * counted from the last byte, with one timer at a time however many bytes pass.
 */

/** The clock a watch reads and the timer it arms (a test moves its own instead of sleeping). */
export interface WatchClock {
  monotonicMs(): number;
  /** Runs `due` once `ms` have passed; returns what cancels it. */
  after(ms: number, due: () => void): () => void;
}

export const systemWatchClock: WatchClock = {
  monotonicMs: () => performance.now(),
  after(ms, due) {
    const timer = setTimeout(due, ms);
    return () => clearTimeout(timer);
  },
};

export interface IdleWatch {
  /** A byte passed. */
  touch(): void;
  stop(): void;
}

/** Calls `expired` once `touch` was not called for `ms`: one timer, re-armed for the rest when touched meanwhile. */
export function idleWatch(ms: number, expired: () => void, clock: WatchClock = systemWatchClock): IdleWatch {
  let last = clock.monotonicMs();
  const check = () => {
    const quiet = clock.monotonicMs() - last;
    if (quiet >= ms) expired();
    else cancel = clock.after(ms - quiet, check);
  };
  let cancel = clock.after(ms, check);
  return { touch: () => (last = clock.monotonicMs()), stop: () => cancel() };
}
