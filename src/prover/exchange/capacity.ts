import { AppError } from "../../errors.ts";

export interface SessionSlots {
  /** Takes a slot or throws over_capacity (503 with Retry-After); call the returned function once when done. */
  take(): () => void;
  active(): number;
  /** Resolves when no slot is taken, or after `ms`; true when all were released. */
  drained(ms: number): Promise<boolean>;
}

/** At most `max` MPC sessions at once: each costs seconds of CPU and about a gigabyte of memory. */
export function createSessionSlots(max: number): SessionSlots {
  let active = 0;
  const onIdle: (() => void)[] = [];
  return {
    take() {
      if (active >= max) throw new AppError("over_capacity", `the prover is running its maximum of ${max} sessions`);
      active += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        active -= 1;
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
