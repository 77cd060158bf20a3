/**
 * The transcript's coordinates, shared by every role: which direction of the TLS connection, which bytes of it,
 * and a hidden span of one direction. Proofs, redaction, the notary protocol and the verifier all speak in them.
 */
import * as v from "valibot";
import { nonNegativeInteger, strictMapping } from "./schema.ts";

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

/** A hidden byte range [start, end) of one transcript direction; proofs list the same spans. */
export const RedactionSpanSchema = strictMapping(
  {
    direction: v.picklist(["sent", "recv"], 'expected one of "sent", "recv"'),
    start: nonNegativeInteger(),
    end: nonNegativeInteger(),
  },
  "expected an object",
) satisfies v.GenericSchema<unknown, RedactionSpan>;
