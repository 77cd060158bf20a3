/**
 * One HTTP/1.1 exchange with a target, as every mode and role speaks of it: the request a proof is made of, and
 * the head of the answer. Headers are text here; an engine that wants other shapes converts at its own edge
 * (src/engine/prover.ts).
 */

/** The methods a proof can carry: those the MPC engine sends. */
export const EXCHANGE_METHODS = ["GET", "POST", "PUT", "DELETE"] as const;
export type ExchangeMethod = (typeof EXCHANGE_METHODS)[number];

export const isExchangeMethod = (method: string): method is ExchangeMethod => (EXCHANGE_METHODS as readonly string[]).includes(method);

/** A header field: its name and value, in the order sent. */
export type HeaderField = [name: string, value: string];

/** The request to send: its headers chosen by the prover, its body parsed JSON (sent as JSON). */
export interface ExchangeRequest {
  method: ExchangeMethod;
  /** Origin-form request target: path and query. */
  pathAndQuery: string;
  headers: HeaderField[];
  /** Parsed JSON body, or undefined for none. */
  body: unknown;
}

/**
 * The target's answer as far as a client needs it beside its bytes: status and header fields, each name and value one
 * char per byte as the target sent them (latin1), so that the client is handed the same bytes.
 */
export interface AnswerHead {
  status: number;
  headers: HeaderField[];
}

/** Both directions of an exchange as they went over the TLS connection, in clear. */
export interface ExchangedBytes {
  sent: Uint8Array;
  recv: Uint8Array;
}
