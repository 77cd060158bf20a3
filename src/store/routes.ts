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
 * Errors: {"error":"<message>"} (the group's error shape: src/http/error-handling.ts shapes every /stores/ path so), 400 for bad input, 503 with
 * Retry-After beyond the answers allowed at once (plain, SSE, per client: query-places.ts), 500 {"error":"Failed to fetch data!"}
 * when storage fails. A plain answer holds at most MAX_HTTP_MESSAGES messages and MAX_HTTP_BYTES of them.
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import type { MessageText } from "./message.ts";
import type { NodeKey } from "./node-key.ts";
import { type WriteMessages, publishBodySchema, publishBodyShape, publishEntries } from "./publish.ts";
import { PublishQuota, type PublishQuotaLimits } from "./publish-quota.ts";
import { type Format, partitionSchema, querySchema, queryTypeSchema, storeQueryOf } from "./query.ts";
import { type QueryPlaceLimits, queryPlaces } from "./query-places.ts";
import { forwards, newestRows, planScan, rowBytes, scanPages, type ScanPlan } from "./read.ts";
import { createResponseDigest, signResponseDigest, type PageMetadata, type ResponseMetadata, type SignedQuery } from "./response-signature.ts";
import type { MessageStore, StoredRow } from "./store.ts";

/** Plain HTTP answers carry at most this many messages; SSE has no limit. */
export const MAX_HTTP_MESSAGES = 5000;
/**
 * And at most this many bytes of messages (at least one message): a plain answer is built whole, so its size is
 * what a query costs in memory. Beyond it the answer says hasNext and where to continue, as beyond the count.
 */
export const MAX_HTTP_BYTES = 4 * 1024 * 1024;
/** Database pages: about a megabyte each (read.ts sizes them by the rows just read), the first one row, 5,000 rows at most. */
const PAGES = { maxRows: 5000, firstRows: 1, maxBytes: 1024 * 1024, maxAnswerBytes: MAX_HTTP_BYTES };

const FETCH_FAILED = "Failed to fetch data!";
const STORE_FAILED = "Failed to store data!";

interface Deps {
  store: MessageStore;
  nodeKey: NodeKey;
  /** The stream only the prover writes (through ProofRecords). */
  proofStream: string;
  /** Answers at once, plain and SSE, and per client (an SSE answer holds its place as long as its reader wants). */
  places: QueryPlaceLimits;
  /** What a caller may publish in a minute and a stream may hold. */
  publishQuota: PublishQuotaLimits;
  /** Who is asking, for the per-client limits: the API key, or the address without keys. */
  clientOf(request: Request): string;
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
  errors: ["forbidden", "quota_exceeded", "storage_failed"],
});

export function storeRoutes({ store, nodeKey, proofStream, places, publishQuota, clientOf }: Deps): RouteGroup {
  const takePlace = queryPlaces(places);
  const quota = new PublishQuota(publishQuota, (streamId) => store.streamBytes(streamId));
  const query = bindRoute(storeQueryRoute, async ({ params: { id, partition, queryType }, query: parameters, request }) => {
    const query = storeQueryOf(queryType, parameters);
    const streamed = acceptsEventStream(request.headers.get("accept"));
    const release = takePlace(streamed ? "stream" : "page", clientOf(request));
    try {
      // A plain `last` is read newest first (one index walk); a streamed answer reads forwards as it goes.
      const plan = await orFail(planScan(store, id, partition, query, streamed ? 0 : MAX_HTTP_MESSAGES), FETCH_FAILED);
      const requestId = query.verifyNetworkResponses ? (query.requestId ?? crypto.randomUUID()) : undefined;
      const signed = requestId === undefined ? undefined : { requestId, query: { streamId: id, partition, query } };
      const answer = { store, nodeKey, plan, format: query.format, signed };
      if (streamed) return eventStreamResponse(answer, release);
      const response = await pageResponse(answer);
      release();
      return response;
    } catch (error) {
      release();
      throw error;
    }
  });
  const publish = bindRoute(storePublishRoute, async ({ params: { id, partition }, body, request }) => {
    // Refused before the body is read: nobody but the prover writes proofs, whatever they send.
    if (id === proofStream) throw new AppError("forbidden", `Stream ${proofStream} is written only by the prover`);
    // Counted as stored (both texts of each message), once the entries are checked and signed.
    const write: WriteMessages = async (messages, mustBeNew) => {
      await quota.admit(clientOf(request), id, messages.reduce((sum, message) => sum + message.raw.length + message.object.length, 0));
      return store.insert(messages, mustBeNew);
    };
    const results = await orFail(publishEntries(store, nodeKey, id, partition, await body(), write), STORE_FAILED);
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

/** The rows of a plain answer: up to MAX_HTTP_MESSAGES and MAX_HTTP_BYTES, and the first row past them, if any. */
async function pageRows(answer: Answer): Promise<{ returned: StoredRow[]; next: StoredRow | undefined }> {
  if (answer.plan.start.newestFirst) {
    // At most MAX_HTTP_MESSAGES: all of them, when they fit the budget; else read forwards from the first of them.
    const newest = await newestRows(answer.store, answer.plan, PAGES);
    if (newest) return { returned: newest, next: undefined };
    return pageRows({ ...answer, plan: await forwards(answer.store, answer.plan) });
  }
  // One row past the limit tells whether more exist and where a client continues.
  const plan = { ...answer.plan, total: Math.min(answer.plan.total, MAX_HTTP_MESSAGES + 1) };
  const returned: StoredRow[] = [];
  let bytes = 0;
  for await (const page of scanPages(answer.store, plan, PAGES)) {
    for (const row of page) {
      const size = rowBytes(row);
      if (returned.length === MAX_HTTP_MESSAGES || (returned.length > 0 && bytes + size > MAX_HTTP_BYTES)) return { returned, next: row };
      returned.push(row);
      bytes += size;
    }
  }
  return { returned, next: undefined };
}

async function pageResponse(answer: Answer): Promise<Response> {
  const { returned, next } = await orFail(pageRows(answer), FETCH_FAILED);
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
  // Each pull reads one page of about a megabyte, and Bun pulls again only once the socket took the last.
  const pages = scanPages(answer.store, answer.plan, PAGES);
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
