import * as v from "valibot";
import { AppError } from "../errors.ts";
import { parseInput } from "../http.ts";
import type { SessionSizes } from "../protocol/notary.ts";

const byteCount = v.optional(v.pipe(v.string(), v.trim(), v.regex(/^\d{1,9}$/, "must be a whole number of bytes"), v.transform(Number), v.minValue(1)));
const SizeHeaders = v.object({ "t-max-sent-data": byteCount, "t-max-recv-data": byteCount });

/**
 * Session sizes a client announces with `T-MAX-SENT-DATA` / `T-MAX-RECV-DATA`; undefined when it announces
 * neither. A missing one takes the pool's value. Above the prover's limits is refused before any MPC.
 */
export function requestedSizes(headers: Headers, poolSizes: SessionSizes, limits: SessionSizes): SessionSizes | undefined {
  const announced = parseInput(
    SizeHeaders,
    { "t-max-sent-data": headers.get("t-max-sent-data") ?? undefined, "t-max-recv-data": headers.get("t-max-recv-data") ?? undefined },
    "invalid_header",
    "header",
  );
  if (announced["t-max-sent-data"] === undefined && announced["t-max-recv-data"] === undefined) return undefined;
  const sizes = {
    maxSentData: announced["t-max-sent-data"] ?? poolSizes.maxSentData,
    maxRecvData: announced["t-max-recv-data"] ?? poolSizes.maxRecvData,
  };
  if (sizes.maxSentData > limits.maxSentData || sizes.maxRecvData > limits.maxRecvData) {
    throw new AppError(
      "session_too_large",
      `announced sizes exceed this prover's limits (T-MAX-SENT-DATA ≤ ${limits.maxSentData}, T-MAX-RECV-DATA ≤ ${limits.maxRecvData})`,
    );
  }
  return sizes;
}
