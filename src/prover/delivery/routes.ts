import * as v from "valibot";
import { AppError } from "../../core/errors.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../../http/route.ts";
import { requestIdSchema } from "../../core/request-id.ts";
import type { ProofOutcome } from "../../proof/outcome.ts";
import { signedProofsOf } from "../../proof/quorum.ts";
import type { IdleLimit } from "../../http/idle-limit.ts";
import { type ProofDelivery, failureOutcome } from "./proof-delivery.ts";
import type { Subscription } from "./proof-hub.ts";
import type { RecordedOutcome } from "../../store/proof-records.ts";

export interface SseLimits {
  perRequest: number;
  /** Open proof streams per client: its API key when keys are on, else its address. */
  perClient: number;
  total: number;
  heartbeatMs: number;
}

/** The data of a proof stream's `event: error`: no proof will come for the request id. */
export const ProofStreamError = v.object({ requestId: v.string(), code: v.string(), message: v.string() });

export const proofStreamRoute = declareRoute({
  method: "GET",
  path: "/proof/:requestId",
  operationId: "proofStream",
  summary: "the proof of a request id, as one Server-Sent Event",
  description:
    "One event, then the stream ends. A proof: an unnamed event whose data is `<notary public key PEM>|<proof JSON>` " +
    "(the Proof schema). No proof will come: `event: error` whose data is the ProofStreamError schema.",
  access: "key-or-scoped",
  params: { schema: v.object({ requestId: requestIdSchema("the request id must be a UUID") }), code: "invalid_request_id", wording: { where: "path parameter" } },
  headers: {
    schema: v.object({ "last-event-id": v.optional(v.pipe(v.string(), v.description("sent by a reconnecting EventSource: the request id of the event it had"))) }),
    code: "invalid_header",
  },
  responses: {
    200: { description: "the event stream", content: { "text/event-stream": v.string() } },
    204: { description: "a reconnecting EventSource (Last-Event-ID: the request id): nothing more will come" },
  },
  errors: ["over_capacity"],
});

/** What `/proof/{requestId}/outcome` answers. */
export const RequestOutcome = v.object({
  requestId: v.string(),
  state: v.pipe(v.picklist(["unknown", "pending", "proof", "error"]), v.description("unknown: never used here; pending: claimed, no outcome yet")),
  proof: v.optional(v.pipe(v.unknown(), v.description("the proof (the Proof schema), when state is proof"))),
  error: v.optional(v.pipe(v.object({ code: v.string(), message: v.string() }), v.description("why no proof came, when state is error"))),
});

export const requestOutcomeRoute = declareRoute({
  method: "GET",
  path: "/proof/:requestId/outcome",
  operationId: "requestOutcome",
  summary: "a request id's state now, as JSON: unknown, pending, its proof, or why none came (no waiting)",
  access: "key-or-scoped",
  params: { schema: v.object({ requestId: requestIdSchema("the request id must be a UUID") }), code: "invalid_request_id", wording: { where: "path parameter" } },
  responses: { 200: { description: "the id's state", content: { "application/json": RequestOutcome } } },
  errors: ["storage_failed"],
});

const encoder = new TextEncoder();

/** One SSE field per line: a value with line breaks becomes several `data:` lines, joined again by the reader. */
const dataLines = (text: string): string => text.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`).join("");

/**
 * The one event of a proof stream. Both carry `id: <requestId>`, so an EventSource that reconnects sends it
 * back as Last-Event-ID and is told there is nothing more (204).
 * - A proof: an unnamed event (EventSource's `onmessage`) whose data is `<notary public key>|<proof JSON>`;
 *   the key is the SPKI PEM the proof names (`body.notary.publicKey`, the same text as `/notaryinfo`'s
 *   `publicKey`; a quorum proof's first proof's), so its line breaks arrive as several `data:` lines. The first `|`
 *   ends it (PEM has none).
 * - No proof: `event: error` (EventSource's `onerror`) with data `{"requestId","code","message"}`.
 */
export function outcomeEvent(requestId: string, outcome: ProofOutcome): string {
  if (outcome.event === "proof") {
    // JSON.stringify writes no CR or LF (it escapes them): only the key is split into lines, and the proof's text
    // follows the `|` on the key's last line, unscanned (a megabyte's split and join cost milliseconds).
    const keyLines = dataLines(`${signedProofsOf(outcome.proof)[0]!.body.notary.publicKey}|`);
    return `id: ${requestId}\n${keyLines.slice(0, -1)}${JSON.stringify(outcome.proof)}\n\n`;
  }
  const data = JSON.stringify({ requestId: outcome.requestId, code: outcome.code, message: outcome.message } satisfies v.InferOutput<typeof ProofStreamError>);
  return `id: ${requestId}\nevent: error\n${dataLines(data)}\n`;
}

/**
 * Comment lines until the outcome, then its event, then the end of the stream. The connection's idle limit is
 * lifted meanwhile (Bun's limit does not count what the server writes, so heartbeats would not keep the stream
 * open) and put back at the end, for the connection's idle life after it.
 */
function eventStream(request: Request, requestId: string, watch: Subscription, idle: IdleLimit, heartbeatMs: number): ReadableStream<Uint8Array> {
  const signal = request.signal;
  let heartbeat: Timer | undefined;
  let open = true;
  const end = () => {
    open = false;
    clearInterval(heartbeat);
    watch.cancel();
    if (!signal.aborted) idle.restore(request);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      idle.lift(request);
      const close = () => {
        if (!open) return;
        end();
        controller.close();
      };
      controller.enqueue(encoder.encode(": waiting for the proof\n\n"));
      heartbeat = setInterval(() => controller.enqueue(encoder.encode(": heartbeat\n\n")), heartbeatMs);
      // A client that goes away gives its place back at once, not at the next heartbeat's failed write.
      if (signal.aborted) close();
      signal.addEventListener("abort", close, { once: true });
      void watch.outcome.then((outcome) => {
        if (!open) return;
        controller.enqueue(encoder.encode(outcomeEvent(requestId, outcome)));
        close();
      });
    },
    cancel: end,
  });
}

/** Open streams per client, so that one client cannot take every place of PROVER_SSE_TOTAL. */
function clientCounts(perClient: number) {
  const open = new Map<string, number>();
  return {
    /** Takes a place for the client and starts watching, or throws over_capacity; cancelling gives the place back. */
    take(client: string, startWatch: () => Subscription): Subscription {
      const count = open.get(client) ?? 0;
      if (count >= perClient) throw new AppError("over_capacity", "too many proof streams open for this client");
      const watch = startWatch();
      open.set(client, count + 1);
      let held = true;
      return {
        outcome: watch.outcome,
        cancel() {
          watch.cancel();
          if (!held) return;
          held = false;
          const left = (open.get(client) ?? 1) - 1;
          if (left > 0) open.set(client, left);
          else open.delete(client);
        },
      };
    },
  };
}

/** Who reads a proof stream. */
export interface ProofReaders {
  /** Who asks (an API key or an address), for the per-client cap. */
  clientOf(request: Request): string;
  /** The key digest the id's request must have been made with, for a scoped key; undefined: any id. */
  ownProofsOnly(request: Request): string | undefined;
}

const notYours = (requestId: string) =>
  new AppError("forbidden", `this API key may read only the proofs of its own requests; ${requestId} is not one of them`);

/**
 * A scoped key reads only what its own requests made. An id already claimed by another key is refused at once;
 * one not claimed yet (the client subscribes before its /proxy call) is checked again when its outcome comes.
 */
function limitedTo(delivery: ProofDelivery, requestId: string, digest: string, watch: Subscription): Subscription {
  const outcome = watch.outcome.then(async (settled): Promise<ProofOutcome> => {
    // No request made these: they tell nothing of anyone's request.
    if (settled.event === "error" && (settled.code === "unknown_request" || settled.code === "shutting_down")) return settled;
    const requestedBy = await delivery.requestedBy(requestId).catch(() => undefined);
    return requestedBy === digest ? settled : failureOutcome(requestId, notYours(requestId));
  });
  return { outcome, cancel: watch.cancel };
}

/** An id's state as `/proof/{requestId}/outcome` answers it. */
function outcomeJson(requestId: string, recorded: RecordedOutcome): v.InferOutput<typeof RequestOutcome> {
  if (recorded.state !== "settled") return { requestId, state: recorded.state };
  const { outcome } = recorded;
  return outcome.event === "proof" ? { requestId, state: "proof", proof: outcome.proof } : { requestId, state: "error", error: { code: outcome.code, message: outcome.message } };
}

/** `GET /proof/:requestId`: one event, the proof or why none will come, then the stream ends; `…/outcome`: the state now, as JSON. */
export function proofRoutes(delivery: ProofDelivery, limits: SseLimits, idle: IdleLimit, readers: ProofReaders): RouteGroup {
  const clients = clientCounts(limits.perClient);
  const stream = bindRoute(proofStreamRoute, async ({ params: { requestId }, headers, request }) => {
    // An EventSource reconnecting after the stream's one event: nothing more will come.
    if (headers["last-event-id"] === requestId) return new Response(null, { status: 204 });
    if (delivery.subscribers(requestId) >= limits.perRequest || delivery.totalSubscribers() >= limits.total) {
      throw new AppError("over_capacity", "too many proof subscribers");
    }
    const ownOnly = readers.ownProofsOnly(request);
    if (ownOnly !== undefined) {
      const requestedBy = await delivery.requestedBy(requestId);
      if (requestedBy !== undefined && requestedBy !== ownOnly) throw notYours(requestId);
    }
    const taken = clients.take(readers.clientOf(request), () => delivery.watch(requestId));
    const watch = ownOnly === undefined ? taken : limitedTo(delivery, requestId, ownOnly, taken);
    return new Response(eventStream(request, requestId, watch, idle, limits.heartbeatMs), {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    });
  });
  const outcome = bindRoute(requestOutcomeRoute, async ({ params: { requestId }, request }) => {
    const ownOnly = readers.ownProofsOnly(request);
    if (ownOnly !== undefined && (await delivery.requestedBy(requestId)) !== ownOnly) throw notYours(requestId);
    return Response.json(outcomeJson(requestId, await delivery.state(requestId)), { headers: { "cache-control": "no-cache" } });
  });
  return routeGroup("proof-sse", [stream, outcome]);
}
