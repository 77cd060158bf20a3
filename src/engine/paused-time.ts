/**
 * Time during which something was paused (an engine host stopped so that live work in another host gets the
 * cores), and timers that count only the time it ran: a paused call cannot end, so its deadlines wait too.
 */
export class PausedTime {
  private totalMs = 0;
  private since: number | undefined;

  get paused(): boolean {
    return this.since !== undefined;
  }

  pause(): void {
    this.since ??= performance.now();
  }

  resume(): void {
    if (this.since === undefined) return;
    this.totalMs += performance.now() - this.since;
    this.since = undefined;
  }

  /** Paused time so far, the current pause included. */
  ms(): number {
    return this.totalMs + (this.since === undefined ? 0 : performance.now() - this.since);
  }
}

/**
 * Calls `fire` once `ms` of time not paused have passed, by `pausedMs` (a running total that only grows).
 * Returns the function that cancels it.
 */
export function runningTimeout(pausedMs: () => number, ms: number, fire: () => void): () => void {
  const started = performance.now();
  const pausedAtStart = pausedMs();
  let timer: Timer;
  const check = () => {
    const ran = performance.now() - started - (pausedMs() - pausedAtStart);
    if (ran >= ms) fire();
    else timer = setTimeout(check, ms - ran);
  };
  timer = setTimeout(check, ms);
  return () => clearTimeout(timer);
}
