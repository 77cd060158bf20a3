/**
 * HTTP routes of the message store.
 *
 * GET  /stores/:id/data/partitions/:partition/:queryType   (last | from | range)
 *   object format  200 application/json      {"messages":[<object form>…],"metadata":{…}}
 *   raw format     200 application/x-ndjson  one RawMessage JSON array per line, then the metadata object line
 *   Accept: text/event-stream  one `data: <message>` event per message (object JSON or RawMessage array),
 *                  then `event: metadata`; a storage failure mid-stream ends it with `event: error`.
 *   metadata: {hasNext, nextTimestamp?, nextSequenceNumber?, totalMessages} (+ participatingNodesAddress,
 *             requestId, responseDigest, signature with verifyNetworkResponses=true; see response-signature.ts)
 * POST /stores/:id/data/partitions/:partition   body: one entry or an array of at most 100 (see publish.ts);
 *   the proofs stream is refused (403): only the prover writes it.
 *   200 {"messages":[{"id":{streamId,streamPartition,timestamp,sequenceNumber,publisherId,msgChainId},"duplicate":bool}…]}
 * Errors: {"error":"<message>"} (the group's error shape: src/core/http.ts shapes every /stores/ path so), 400 for bad input, 503 with
 * Retry-After beyond `maxStreams` SSE answers at once, 500 {"error":"Failed to fetch data!"} when storage fails.
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import type { MessageText } from "./message.ts";
import type { NodeKey } from "./node-key.ts";
import { publishBodySchema, publishBodyShape, publishEntries } from "./publish.ts";
import { type Format, partitionSchema, querySchema, queryTypeSchema, storeQueryOf } from "./query.ts";
import { planScan, readFirst, scanPages, type ScanPlan } from "./read.ts";
import { createResponseDigest, signResponseDigest, type PageMetadata, type ResponseMetadata, type SignedQuery } from "./response-signature.ts";
import type { MessageStore, StoredRow } from "./store.ts";

/** Plain HTTP answers carry at most this many messages; SSE has no limit. */
export const MAX_HTTP_MESSAGES = 5000;
/** Rows per database page while streaming SSE: memory stays at one page whatever the answer's size. */
const SSE_PAGE_SIZE = 1000;

const FETCH_FAILED = "Failed to fetch data!";
const STORE_FAILED = "Failed to store data!";

interface Deps {
  store: MessageStore;
  nodeKey: NodeKey;
  /** The stream only the prover writes (through ProofRecords). */
  proofStream: string;
  /** SSE answers streaming at once; each holds a database cursor for as long as its reader wants. */
  maxStreams: number;
}

/** Path and query parameters word their refusals in full, with the reference's texts (query.ts). */
const inFull = { code: "invalid_query", wording: { messageOnly: true } } as const;
const streamId = v.pipe(v.string(), v.description("stream id"));

export const storeQueryRoute = declareRoute({
  method: "GET",
  path: "/stores/:id/data/partitions/:partition/:queryType",
  operationId: "storeQuery",
  summary: "messages of a stream partition (Log Store / Streamr semantics); the proofs stream holds every proof",
  description: "With API keys on, reading the proofs stream needs a key (unless PROVER_PUBLIC_PROOFS=1); other streams are open.",
  access: "store",
  params: { schema: v.object({ id: streamId, partition: partitionSchema, queryType: queryTypeSchema }), ...inFull },
  query: { schema: querySchema, ...inFull },
  responses: {
    200: {
      description: "messages with pagination metadata (raw format: one RawMessage per line, then the metadata); with Accept: text/event-stream one data event per message and a final metadata event",
      content: { "application/json": v.looseObject({}), "application/x-ndjson": v.string(), "text/event-stream": v.string() },
    },
  },
  errors: ["over_capacity", "storage_failed"],
});

export const storePublishRoute = declareRoute({
  method: "POST",
  path: "/stores/:id/data/partitions/:partition",
  operationId: "storePublish",
  summary: "publish messages: content entries signed by the node, or signed v32 RawMessages",
  access: "store",
  params: { schema: v.object({ id: streamId, partition: partitionSchema }), ...inFull },
  body: { schema: publishBodySchema, shape: publishBodyShape, code: "invalid_body", wording: { messageOnly: true }, notJson: "Body is not valid JSON" },
  responses: {
    200: {
      description: "one result per entry",
      content: { "application/json": v.object({ messages: v.array(v.object({ id: v.looseObject({}), duplicate: v.boolean() })) }) },
    },
  },
  errors: ["forbidden", "storage_failed"],
});

export function storeRoutes({ store, nodeKey, proofStream, maxStreams }: Deps): RouteGroup {
  let streaming = 0;
  const takeStream = (): (() => void) => {
    if (streaming >= maxStreams) throw new AppError("over_capacity", `the store is streaming its maximum of ${maxStreams} answers`);
    streaming += 1;
    let done = false;
    return () => {
      if (!done) streaming -= 1;
      done = true;
    };
  };
  const query = bindRoute(storeQueryRoute, async ({ params: { id, partition, queryType }, query: parameters, request }) => {
    const query = storeQueryOf(queryType, parameters);
    const release = acceptsEventStream(request.headers.get("accept")) ? takeStream() : undefined;
    try {
      const plan = await orFail(planScan(store, id, partition, query, MAX_HTTP_MESSAGES), FETCH_FAILED);
      const requestId = query.verifyNetworkResponses ? (query.requestId ?? crypto.randomUUID()) : undefined;
      const signed = requestId === undefined ? undefined : { requestId, query: { streamId: id, partition, query } };
      const answer = { store, nodeKey, plan, format: query.format, signed };
      return release ? eventStreamResponse(answer, release) : await pageResponse(answer);
    } catch (error) {
      release?.();
      throw error;
    }
  });
  const publish = bindRoute(storePublishRoute, async ({ params: { id, partition }, body }) => {
    // Refused before the body is read: nobody but the prover writes proofs, whatever they send.
    if (id === proofStream) throw new AppError("forbidden", `Stream ${proofStream} is written only by the prover`);
    const results = await orFail(publishEntries(store, nodeKey, id, partition, await body()), STORE_FAILED);
    return Response.json({ messages: results });
  });
  return routeGroup("store", [query, publish], "log-store");
}

/** Storage failures become one fixed 500 message; input errors (AppError) pass through untouched. */
async function orFail<T>(work: Promise<T>, message: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof AppError) throw error;
    console.error(`store: ${message}`, error);
    throw new AppError("storage_failed", message);
  }
}

/** True when the Accept header lists text/event-stream (any parameters, any case, not refused with q=0). */
export function acceptsEventStream(accept: string | null): boolean {
  if (!accept) return false;
  return accept.split(",").some((range) => {
    const [type = "", ...parameters] = range.split(";").map((part) => part.trim().toLowerCase());
    return type === "text/event-stream" && !parameters.some((p) => /^q=0(\.0*)?$/.test(p));
  });
}

interface Answer {
  store: MessageStore;
  nodeKey: NodeKey;
  plan: ScanPlan;
  format: Format;
  /** With verifyNetworkResponses: the request id and the query the signature covers. */
  signed: { requestId: string; query: SignedQuery } | undefined;
}

/** A text the scan plan asked for (see read.ts); a row without it is a bug, not bad input. */
function textOf(row: StoredRow, text: MessageText): string {
  const value = row[text];
  if (value === undefined) throw new Error(`store row read without its ${text} text`);
  return value;
}

type ResponseDigest = ReturnType<typeof createResponseDigest>;

const digestFor = ({ signed }: Answer): ResponseDigest | undefined => signed && createResponseDigest(signed.requestId, signed.query);

function finishMetadata(answer: Answer, digest: ResponseDigest | undefined, page: PageMetadata): ResponseMetadata {
  if (!digest || !answer.signed) return page;
  return { ...page, ...signResponseDigest(digest.finish(page), answer.signed.requestId, answer.nodeKey) };
}

async function pageResponse(answer: Answer): Promise<Response> {
  // One row past the limit tells whether more exist and where a client continues.
  const limit = Math.min(answer.plan.total, MAX_HTTP_MESSAGES + 1);
  const rows = await orFail(readFirst(answer.store, answer.plan, limit), FETCH_FAILED);
  const next = rows[MAX_HTTP_MESSAGES];
  const returned = next ? rows.slice(0, MAX_HTTP_MESSAGES) : rows;
  const page: PageMetadata = next
    ? { hasNext: true, nextTimestamp: next.timestamp, nextSequenceNumber: next.sequenceNumber, totalMessages: returned.length }
    : { hasNext: false, totalMessages: returned.length };
  const digest = digestFor(answer);
  for (const row of returned) digest?.add(textOf(row, "raw"));
  const metadata = JSON.stringify(finishMetadata(answer, digest, page));
  const messages = returned.map((row) => textOf(row, answer.format));
  if (answer.format === "raw") {
    return new Response([...messages, metadata].join("\n"), { headers: { "content-type": "application/x-ndjson; charset=utf-8" } });
  }
  return new Response(`{"messages":[${messages.join(",")}],"metadata":${metadata}}`, { headers: { "content-type": "application/json; charset=utf-8" } });
}

/** Streams the answer; `release` gives its place back once the stream ends or its reader goes away. */
function eventStreamResponse(answer: Answer, release: () => void): Response {
  const pages = scanPages(answer.store, answer.plan, SSE_PAGE_SIZE);
  const digest = digestFor(answer);
  const encoder = new TextEncoder();
  let totalMessages = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let rows: StoredRow[] | undefined;
        try {
          const next = await pages.next();
          rows = next.done ? undefined : next.value;
        } catch (error) {
          console.error(`store: ${FETCH_FAILED}`, error);
          controller.enqueue(encoder.encode(`event: error\ndata: ${JSON.stringify({ error: FETCH_FAILED })}\n\n`));
          controller.close();
          release();
          return;
        }
        if (rows) {
          let chunk = "";
          for (const row of rows) {
            digest?.add(textOf(row, "raw"));
            chunk += `data: ${textOf(row, answer.format)}\n\n`;
          }
          totalMessages += rows.length;
          controller.enqueue(encoder.encode(chunk));
          return;
        }
        const metadata = finishMetadata(answer, digest, { hasNext: false, totalMessages });
        controller.enqueue(encoder.encode(`event: metadata\ndata: ${JSON.stringify(metadata)}\n\n`));
        controller.close();
        release();
      },
      async cancel() {
        release();
        await pages.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } });
}
