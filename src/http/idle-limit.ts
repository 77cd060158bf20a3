/**
 * A connection's idle limit, lifted while a request is silent by design (a proof's MPC exchange, a proof stream
 * waiting for its outcome, an attestation waiting for its verification) and put back once that request is over.
 * Bun keeps a connection's limit as last set: one left lifted would hold a client's idle keep-alive connection
 * open for longer than the server allows, or for ever.
 */
export interface IdleLimit {
  /** Lifts the limit for this request's connection: to `seconds`, or removes it (0, the default). */
  lift(request: Request, seconds?: number): void;
  restore(request: Request): void;
}

/** What of a Bun server sets a connection's idle limit. */
interface ConnectionTimeouts {
  timeout(request: Request, seconds: number): void;
}

export function idleLimit(server: () => ConnectionTimeouts, seconds: number): IdleLimit {
  return {
    lift: (request, lifted = 0) => server().timeout(request, lifted),
    restore: (request) => server().timeout(request, seconds),
  };
}
