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
 * Where an answer's scan starts and how many messages it may hold. A `last` finds the key its messages begin at,
 * then reads forwards like the others: answers are always oldest first, and a page cut by its byte budget then
 * names the first message it did not return, where a client continues with `from`.
 */
export async function planScan(store: MessageStore, streamId: string, partition: number, query: StoreQuery): Promise<ScanPlan> {
  const base = { streamId, partition, texts: answerTexts(query) };
  switch (query.type) {
    case "last": {
      if (query.count <= 0) return { start: base, total: -query.count };
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

/** How large a row is in memory: its key's texts and the texts it carries (UTF-16 units, near enough to bytes). */
export function rowBytes(row: StoredRow): number {
  let bytes = row.publisherId.length + row.msgChainId.length + 16;
  for (const text of ["object", "raw"] as const) bytes += row[text]?.length ?? 0;
  return bytes;
}

/** How a scan reads: rows per page at most and in the first page, and the bytes a page aims at. */
export interface PageBounds {
  maxRows: number;
  firstRows: number;
  maxBytes: number;
}

/**
 * Pages of rows, oldest first, until `total` rows or the end of the matching messages. Each page after the first
 * holds as many rows of the size just read as fit `maxBytes`: small messages come a thousand at a time, messages
 * of a megabyte one by one, so no page holds much more than the budget and one row.
 */
export async function* scanPages(store: MessageStore, plan: ScanPlan, bounds: PageBounds): AsyncGenerator<StoredRow[]> {
  let remaining = plan.total;
  let limit = bounds.firstRows;
  let request: ReadRequest = { ...plan.start, limit: 0 };
  while (remaining > 0) {
    const asked = Math.min(limit, remaining);
    const rows = await store.read({ ...request, limit: asked });
    if (rows.length > 0) yield rows;
    const last = rows.at(-1);
    if (!last || rows.length < asked) return;
    remaining -= rows.length;
    request = { ...request, after: { key: last, inclusive: false } };
    const perRow = rows.reduce((sum, row) => sum + rowBytes(row), 0) / rows.length;
    limit = Math.max(1, Math.min(bounds.maxRows, Math.floor(bounds.maxBytes / perRow)));
  }
}
