/** A session's size limits, shared by the config, the pool, the engine and the notary protocol. */

import * as v from "valibot";

const byteCount = v.pipe(v.number("expected a positive integer"), v.safeInteger("expected a positive integer"), v.minValue(1, "expected a positive integer"));

/** Bytes an MPC session can carry: the request sent and the response received, headers included. */
export const SessionSizes = v.object({ maxSentData: byteCount, maxRecvData: byteCount });
export type SessionSizes = v.InferOutput<typeof SessionSizes>;
