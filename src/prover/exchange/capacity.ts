import { AppError } from "../../core/errors.ts";

export interface SessionSlots {
  /**
   * Takes `units` (one session, or the bytes an exchange may hold) or throws over_capacity (503 with
   * Retry-After); call the returned function once when done.
   */
  take(units?: number): () => void;
  /** Units taken now. */
  active(): number;
  /** Resolves when no slot is taken, or after `ms`; true when all were released. */
  drained(ms: number): Promise<boolean>;
}

const sessionsRefusal = (max: number) => `the prover is running its maximum of ${max} sessions`;

/**
 * At most `max` units at once: MPC sessions (each costs seconds of CPU and about a gigabyte of memory), proxy
 * proofs, or the answer bytes proxy proofs may hold. `refusal` words the over_capacity message.
 */
export function createSessionSlots(max: number, refusal: (max: number) => string = sessionsRefusal): SessionSlots {
  let active = 0;
  const onIdle: (() => void)[] = [];
  return {
    take(units = 1) {
      if (active + units > max) throw new AppError("over_capacity", refusal(max));
      active += units;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        active -= units;
        if (active === 0) for (const wake of onIdle.splice(0)) wake();
      };
    },
    active: () => active,
    async drained(ms) {
      if (active === 0) return true;
      let timer: Timer | undefined;
      const idle = new Promise<boolean>((resolve) => onIdle.push(() => resolve(true)));
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
      const result = await Promise.race([idle, late]);
      clearTimeout(timer);
      return result;
    },
  };
}
