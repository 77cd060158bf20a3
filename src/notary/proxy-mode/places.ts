/**
 * How many places proxy mode holds on a notary: a new session takes its place before anything is awaited (so a
 * burst of requests cannot all pass the check before any of them counts), and the connections to targets still
 * in progress are bounded apart, so targets that never accept cannot hold every place.
 */
import { AppError } from "../../core/errors.ts";

/** Why the notary refused a proxy session or ended its relay early: the label of its refusal count. */
export type ProxyRefusal = "over_capacity" | "connects_pending" | "first_flight" | "idle" | "lifetime";

export interface ProxyPlaces {
  /** Takes a place now or throws over_capacity; call the result once to give it back. */
  reserve(): () => void;
  /** Runs `dial` as one of the connections in progress, or throws over_capacity when there are enough of them. */
  connecting<T>(dial: () => Promise<T>): Promise<T>;
  /** Places taken by sessions not yet registered (resolving or connecting). */
  reserved(): number;
}

export interface PlaceLimits {
  concurrency: number;
  maxPendingConnects: number;
}

/**
 * `registered` counts the sessions that hold a place already; `refuse` logs and counts a refusal and returns the
 * error to throw.
 */
export function proxyPlaces(limits: PlaceLimits, registered: () => number, refuse: (reason: ProxyRefusal, error: AppError) => AppError): ProxyPlaces {
  let reserved = 0;
  let connecting = 0;
  return {
    reserve() {
      if (registered() + reserved >= limits.concurrency) {
        throw refuse("over_capacity", new AppError("over_capacity", `the notary is running its maximum of ${limits.concurrency} proxy sessions`));
      }
      reserved += 1;
      let released = false;
      return () => {
        if (!released) reserved -= 1;
        released = true;
      };
    },
    async connecting(dial) {
      if (connecting >= limits.maxPendingConnects) {
        const message = `the notary is already connecting to ${limits.maxPendingConnects} targets; try again shortly`;
        throw refuse("connects_pending", new AppError("over_capacity", message));
      }
      connecting += 1;
      try {
        return await dial();
      } finally {
        connecting -= 1;
      }
    },
    reserved: () => reserved,
  };
}
