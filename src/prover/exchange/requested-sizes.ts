import * as v from "valibot";
import { AppError } from "../../core/errors.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";

const byteCount = (description: string) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.regex(/^\d{1,9}$/, "must be a whole number of bytes"),
      v.description(description),
      v.metadata({ pattern: "^[0-9]+$" }),
      v.transform(Number),
      v.minValue(1),
    ),
  );
/** `T-MAX-SENT-DATA` / `T-MAX-RECV-DATA`: the bytes a client announces its exchange needs (/proxy, /prepare). */
export const SizeHeaders = v.object({
  "t-max-sent-data": byteCount("bytes the request needs, headers included"),
  "t-max-recv-data": byteCount("bytes the response needs, headers included"),
});

/**
 * The sizes a client announced (T-MAX-SENT-DATA, T-MAX-RECV-DATA; either may be missing), refused
 * (session_too_large, before any work) when above the prover's limits.
 */
export function withinLimits(announced: Partial<SessionSizes>, limits: SessionSizes): Partial<SessionSizes> {
  const sent = announced.maxSentData;
  const recv = announced.maxRecvData;
  const exceeded = [
    ...((sent ?? 0) > limits.maxSentData ? [`T-MAX-SENT-DATA ≤ ${limits.maxSentData}`] : []),
    ...((recv ?? 0) > limits.maxRecvData ? [`T-MAX-RECV-DATA ≤ ${limits.maxRecvData}`] : []),
  ];
  if (exceeded.length > 0) throw new AppError("session_too_large", `announced sizes exceed this prover's limits (${exceeded.join(", ")})`);
  return { ...(sent !== undefined && { maxSentData: sent }), ...(recv !== undefined && { maxRecvData: recv }) };
}
