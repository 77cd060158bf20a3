import type { PausedTime } from "./paused-time.ts";

/**
 * Engine work no request waits for: a warm pool's refill. The engine host running it may pause it while live
 * work runs in another host, so that live work has the cores; its deadline then counts only the time it ran
 * (`pausedMs`). Once a request waits for it (`goLive`), it is live work like any other and runs on.
 */
export class BackgroundWork {
  /**
   * @param apartFrom Provers (EngineProver) of sessions requests hold now: their exchanges are about to run, and a
   *   host running one is never paused, so the work is placed in another host when one has room. Typed as objects
   *   so that this module needs nothing of the engine's: the engine's prover module imports it.
   */
  constructor(readonly apartFrom: readonly object[] = []) {}

  private pausedTime: PausedTime | undefined;
  private pausedBefore = 0;
  private changed = () => {};
  private isLive = false;

  get live(): boolean {
    return this.isLive;
  }

  /** Called by the engine that runs the work: the clock of its pauses from now on, and whom to tell when it goes live. */
  runsOn(pausedTime: PausedTime, changed: () => void): void {
    this.pausedTime = pausedTime;
    this.pausedBefore = pausedTime.ms();
    this.changed = changed;
  }

  /** Time the work has spent paused. */
  pausedMs(): number {
    return this.pausedTime ? this.pausedTime.ms() - this.pausedBefore : 0;
  }

  /** A request now waits for this work: it may no longer be paused. */
  goLive(): void {
    if (this.isLive) return;
    this.isLive = true;
    this.changed();
  }
}
