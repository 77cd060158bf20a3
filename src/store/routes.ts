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
 * Errors: {"error":"<message>"} (shaped by src/http.ts for every /stores/ path), 400 for bad input, 503 with
 * Retry-After beyond `maxStreams` SSE answers at once, 500 {"error":"Failed to fetch data!"} when storage fails.
 */
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import type { MessageText } from "./message.ts";
import type { NodeKey } from "./node-key.ts";
import { parsePublishBody, publishEntries } from "./publish.ts";
import { parsePartition, parseStoreQuery, type Format } from "./query.ts";
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

export function storeRoutes({ store, nodeKey, proofStream, maxStreams }: Deps) {
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
  return new Elysia({ name: "store" })
    .get("/stores/:id/data/partitions/:partition/:queryType", async ({ params, request }) => {
      const partition = parsePartition(params.partition);
      const query = parseStoreQuery(params.queryType, searchParamsOf(request.url));
      const release = acceptsEventStream(request.headers.get("accept")) ? takeStream() : undefined;
      try {
        const plan = await orFail(planScan(store, params.id, partition, query, MAX_HTTP_MESSAGES), FETCH_FAILED);
        const requestId = query.verifyNetworkResponses ? (query.requestId ?? crypto.randomUUID()) : undefined;
        const signed = requestId === undefined ? undefined : { requestId, query: { streamId: params.id, partition, query } };
        const answer = { store, nodeKey, plan, format: query.format, signed };
        return release ? eventStreamResponse(answer, release) : await pageResponse(answer);
      } catch (error) {
        release?.();
        throw error;
      }
    })
    .post(
      "/stores/:id/data/partitions/:partition",
      async ({ params, request }) => {
        const partition = parsePartition(params.partition);
        if (params.id === proofStream) throw new AppError("forbidden", `Stream ${proofStream} is written only by the prover`);
        const entries = parsePublishBody(parseJson(await request.text()));
        const results = await orFail(publishEntries(store, nodeKey, params.id, partition, entries), STORE_FAILED);
        return Response.json({ messages: results });
      },
      { parse: "none" },
    );
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

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError("invalid_body", "Body is not valid JSON");
  }
}

function searchParamsOf(url: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of new URL(url).searchParams) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return query;
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
