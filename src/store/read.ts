/** Turns a parsed query into keyset scans over the store, page by page, so no answer is ever held whole. */
import type { StoreQuery } from "./query.ts";
import type { MessageText } from "./message.ts";
import type { MessageStore, ReadRequest, StoredRow } from "./store.ts";

export type ScanStart = Omit<ReadRequest, "limit">;

export interface ScanPlan {
  start: ScanStart;
  /** How many messages the query asks for at most (Infinity: all that match). */
  total: number;
}

/**
 * `oneReadUpTo`: a `last` of at most this many is read newest-first in one query and reversed, which spares the
 * walk to its first key; larger ones find that key first and then read forwards page by page.
 */
export async function planScan(store: MessageStore, streamId: string, partition: number, query: StoreQuery, oneReadUpTo: number): Promise<ScanPlan> {
  const base = { streamId, partition, texts: answerTexts(query) };
  switch (query.type) {
    case "last": {
      if (query.count <= 0) return { start: base, total: -query.count };
      if (query.count <= oneReadUpTo) return { start: { ...base, newestFirst: true }, total: query.count };
      // Find where the last `count` begin, then read forwards: answers are always oldest first.
      const first = await store.nthNewestKey(streamId, partition, query.count);
      return { start: first ? { ...base, after: { key: first, inclusive: true } } : base, total: query.count };
    }
    case "from":
    case "range": {
      // "" sorts before every publisher and chain id, so this starts at the first message of (timestamp, seq).
      const after = { key: { ...query.from, publisherId: "", msgChainId: "" }, inclusive: true };
      const upTo = query.type === "range" ? query.to : undefined;
      return { start: { ...base, after, upTo, publisherId: query.publisherId, msgChainId: query.msgChainId }, total: Infinity };
    }
  }
}

/** The answer's format, and the RawMessage text too when a signed response digest must cover it. */
const answerTexts = (query: StoreQuery): MessageText[] =>
  query.verifyNetworkResponses && query.format !== "raw" ? [query.format, "raw"] : [query.format];

/** The first `limit` rows of the answer, oldest first. */
export async function readFirst(store: MessageStore, plan: ScanPlan, limit: number): Promise<StoredRow[]> {
  if (limit <= 0) return [];
  const rows = await store.read({ ...plan.start, limit });
  return plan.start.newestFirst ? rows.reverse() : rows;
}

/** Pages of at most `pageSize` rows, oldest first, until `total` rows or the end of the matching messages. */
export async function* scanPages(store: MessageStore, plan: ScanPlan, pageSize: number): AsyncGenerator<StoredRow[]> {
  if (plan.start.newestFirst) {
    // Bounded by the planner's `oneReadUpTo`: one read.
    const rows = await readFirst(store, plan, plan.total);
    if (rows.length > 0) yield rows;
    return;
  }
  let remaining = plan.total;
  let request: ReadRequest = { ...plan.start, limit: 0 };
  while (remaining > 0) {
    const limit = Math.min(pageSize, remaining);
    const rows = await store.read({ ...request, limit });
    if (rows.length > 0) yield rows;
    const last = rows.at(-1);
    if (!last || rows.length < limit) return;
    remaining -= rows.length;
    request = { ...request, after: { key: last, inclusive: false } };
  }
}
