/**
 * CPU-bound MPC work of one kind (on-demand setups, exchanges with targets), at most `limit` at once, the others
 * waiting in arrival order. Past what the cores serve, each piece of work at once takes as long as all of them
 * together (measured on 2 cores: three or four cold requests that take about 60 s of work alone took about 150 s
 * together), and the engine's threads spinning against each other made targets give up. In turns, the first is
 * done after its own work alone; the others wait for it.
 */
export interface TurnGate {
  /**
   * Resolves when this caller may start its work, with the function to call once it is over. Rejects with the
   * signal's reason when the signal aborts first: the caller left the queue.
   */
  enter(signal?: AbortSignal): Promise<() => void>;
  /**
   * Work of this kind that started outside the gate (a refill a request now waits for) counts as at work from now,
   * over the limit if need be: callers after it wait for it. Returns the function to call once it is over.
   */
  hold(): () => void;
  /** Callers at work now, and callers waiting for their turn. */
  status(): { running: number; waiting: number };
}

export function createTurnGate(limit: number): TurnGate {
  let running = 0;
  const queue: (() => void)[] = [];

  const leave = () => {
    running -= 1;
    // Work held over the limit leaves a place only once running is under it again.
    if (running < limit) queue.shift()?.();
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
    hold: admit,
    status: () => ({ running, waiting: queue.length }),
  };
}
