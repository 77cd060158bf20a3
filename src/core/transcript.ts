/**
 * The transcript's coordinates, shared by every role: which direction of the TLS connection, which bytes of it,
 * and a hidden span of one direction. Proofs, redaction, the notary protocol and the verifier all speak in them.
 * Types only, no valibot (their schema is RedactionSpanSchema, core/schema.ts): the client package's declarations
 * name them and must import nothing it does not ship.
 */

/** `sent`: the client's bytes (the HTTP request); `recv`: the server's (the answer). */
export type Direction = "sent" | "recv";

/** Half-open byte range [start, end) in one direction of the transcript. */
export interface ByteRange {
  start: number;
  end: number;
}

/** A hidden byte range of one direction, as redaction finds it and proofs list it. */
export interface RedactionSpan extends ByteRange {
  direction: Direction;
}
