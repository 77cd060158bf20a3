/**
 * On-demand MPC setups, at most `limit` at once, the others waiting in arrival order. A setup is CPU-bound for
 * tens of seconds; several at once on too few cores each take as long as all of them together (measured on 2
 * cores: three or four cold requests that take about 60 s of work alone took about 150 s together, and the engine's
 * threads spinning against each other made a target give up). One after the other, the first is answered
 * after its own setup, and the others no later than before.
 */
export interface SetupGate {
  /**
   * Resolves when this caller may start its setup, with the function to call once it is over. Rejects with the
   * signal's reason when the signal aborts first: the caller left the queue.
   */
  enter(signal?: AbortSignal): Promise<() => void>;
  /** Setups running now. */
  running(): number;
  /** Callers waiting for their turn. */
  waiting(): number;
}

export function createSetupGate(limit: number): SetupGate {
  let running = 0;
  const queue: (() => void)[] = [];

  const leave = () => {
    running -= 1;
    const next = queue.shift();
    if (next) next();
  };
  const admit = (): (() => void) => {
    running += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      leave();
    };
  };

  return {
    enter(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (running < limit && queue.length === 0) return Promise.resolve(admit());
      return new Promise((resolve, reject) => {
        const turn = () => {
          signal?.removeEventListener("abort", quit);
          resolve(admit());
        };
        const quit = () => {
          queue.splice(queue.indexOf(turn), 1);
          reject(signal?.reason);
        };
        queue.push(turn);
        signal?.addEventListener("abort", quit, { once: true });
      });
    },
    running: () => running,
    waiting: () => queue.length,
  };
}
