import type { Server } from "bun";

/**
 * A connection's idle limit, lifted while a request is silent by design (a proof's MPC exchange, a proof stream
 * waiting for its outcome) and put back once that request is over. Bun keeps a connection's limit as last set:
 * one left lifted would hold a client's idle keep-alive connection open for ever.
 */
export interface IdleLimit {
  lift(request: Request): void;
  restore(request: Request): void;
}

export function idleLimit(server: () => Server<undefined>, seconds: number): IdleLimit {
  return {
    lift: (request) => server().timeout(request, 0),
    restore: (request) => server().timeout(request, seconds),
  };
}
