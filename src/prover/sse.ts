import { Elysia, sse } from "elysia";
import * as v from "valibot";
import { AppError } from "../errors.ts";
import { parseInput } from "../http.ts";
import type { ProofHub, ProofOutcome } from "./proof-hub.ts";

export interface SseLimits {
  perRequest: number;
  total: number;
  heartbeatMs: number;
}

const RequestIdParam = v.object({ requestId: v.pipe(v.string(), v.uuid("the request id must be a UUID")) });
const encoder = new TextEncoder();

/**
 * `GET /proof/:requestId`: one SSE event, `proof` or `error`, then the stream ends. Comment lines keep
 * the connection alive while the proof is being made.
 */
export function proofRoutes(hub: ProofHub, limits: SseLimits) {
  return new Elysia({ name: "proof-sse" }).get("/proof/:requestId", async function* ({ params, set, request }) {
    const { requestId } = parseInput(RequestIdParam, params, "invalid_request_id", "path parameter");
    if (hub.subscribers(requestId) >= limits.perRequest || hub.totalSubscribers() >= limits.total) {
      throw new AppError("over_capacity", "too many proof subscribers");
    }
    const subscription = hub.subscribe(requestId);
    // A client that goes away gives its place back at once, not at the next heartbeat's failed write.
    const gone = new Promise<"gone">((resolve) => {
      if (request.signal.aborted) resolve("gone");
      request.signal.addEventListener("abort", () => resolve("gone"), { once: true });
    });
    set.headers["content-type"] = "text/event-stream";
    set.headers["cache-control"] = "no-cache";
    try {
      yield encoder.encode(": waiting for the proof\n\n");
      let outcome: ProofOutcome | undefined;
      while (!outcome) {
        let timer: Timer | undefined;
        const tick = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, limits.heartbeatMs)));
        const next = await Promise.race([subscription.outcome, tick, gone]);
        clearTimeout(timer);
        if (next === "gone") return;
        outcome = next;
        if (!outcome) yield encoder.encode(": heartbeat\n\n");
      }
      yield outcome.event === "proof"
        ? sse({ event: "proof", data: JSON.stringify(outcome.proof) })
        : sse({ event: "error", data: JSON.stringify({ requestId: outcome.requestId, code: outcome.code, message: outcome.message }) });
    } finally {
      subscription.cancel();
    }
  });
}
