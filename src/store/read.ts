/** Turns a parsed query into keyset scans over the store, page by page, so no answer is ever held whole. */
import type { StoreQuery } from "./query.ts";
import type { MessageText } from "./message.ts";
import type { MessageKey, MessageStore, ReadRequest, StoredRow } from "./store.ts";

export type ScanStart = Omit<ReadRequest, "limit">;

export interface ScanPlan {
  start: ScanStart;
  /** How many messages the query asks for at most (Infinity: all that match). */
  total: number;
}

/**
 * Where an answer's scan starts and how many messages it may hold. A `last` of at most `newestFirstUpTo` messages
 * is planned newest first (one index walk, read back to front: see newestRows); a larger one, or any `last` of an
 * answer that streams, finds the key its messages begin at and reads forwards like the others. Answers are always
 * oldest first, and a page cut by its byte budget names the first message it did not return.
 */
export async function planScan(store: MessageStore, streamId: string, partition: number, query: StoreQuery, newestFirstUpTo = 0): Promise<ScanPlan> {
  const base = { streamId, partition, texts: answerTexts(query) };
  switch (query.type) {
    case "last": {
      if (query.count <= 0) return { start: base, total: -query.count };
      if (query.count <= newestFirstUpTo) return { start: { ...base, newestFirst: true }, total: query.count };
      return forwardLast(store, base, query.count);
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

/** The last `count` messages read forwards: from the key of the count-th newest. */
async function forwardLast(store: MessageStore, base: ScanStart, count: number): Promise<ScanPlan> {
  const first = await store.nthNewestKey(base.streamId, base.partition, count);
  return { start: first ? { ...base, after: { key: first, inclusive: true } } : base, total: count };
}

/**
 * The rows of a newest-first plan, oldest first, when they fit `maxBytes`; undefined when they do not (the read
 * stops there): the answer must then begin at the oldest of them, which `forwards` plans.
 */
export async function newestRows(store: MessageStore, plan: ScanPlan, bounds: PageBounds): Promise<StoredRow[] | undefined> {
  const rows: StoredRow[] = [];
  let bytes = 0;
  let limit = bounds.firstRows;
  let before: MessageKey | undefined;
  while (rows.length < plan.total) {
    const asked = Math.min(limit, plan.total - rows.length);
    const page = await store.read({ ...plan.start, before, limit: asked });
    const pageBytes = page.reduce((sum, row) => sum + rowBytes(row), 0);
    bytes += pageBytes;
    if (bytes > bounds.maxAnswerBytes) return undefined;
    rows.push(...page);
    if (page.length < asked) break;
    before = page.at(-1);
    limit = Math.max(1, Math.min(bounds.maxRows, Math.floor(bounds.maxBytes / (pageBytes / page.length))));
  }
  return rows.reverse();
}

/** A newest-first plan read forwards instead. */
export const forwards = (store: MessageStore, plan: ScanPlan): Promise<ScanPlan> => forwardLast(store, { ...plan.start, newestFirst: undefined }, plan.total);

/** The answer's format, and the RawMessage text too when a signed response digest must cover it. */
const answerTexts = (query: StoreQuery): MessageText[] =>
  query.verifyNetworkResponses && query.format !== "raw" ? [query.format, "raw"] : [query.format];

/** How large a row is in memory: its key's texts and the texts it carries (UTF-16 units, near enough to bytes). */
export function rowBytes(row: StoredRow): number {
  let bytes = row.publisherId.length + row.msgChainId.length + 16;
  for (const text of ["object", "raw"] as const) bytes += row[text]?.length ?? 0;
  return bytes;
}

/** How a scan reads: rows per page at most and in the first page, the bytes a page aims at, those an answer may hold. */
export interface PageBounds {
  maxRows: number;
  firstRows: number;
  maxBytes: number;
  maxAnswerBytes: number;
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
