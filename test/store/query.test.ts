import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/errors.ts";
import { parsePartition, parseStoreQuery } from "../../src/store/query.ts";
import { acceptsEventStream } from "../../src/store/routes.ts";

const rejects = (fn: () => unknown, message: string) => {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect((caught as AppError).code).toBe("invalid_query");
  expect((caught as AppError).message).toBe(message);
};

describe("query parameters", () => {
  test("last: count defaults to 1, negative allowed, non-integers refused with the reference text", () => {
    expect(parseStoreQuery("last", {})).toEqual({ type: "last", count: 1, format: "object", verifyNetworkResponses: false, requestId: undefined });
    expect(parseStoreQuery("last", { count: "-3" })).toMatchObject({ count: -3 });
    for (const bad of ["abc", "1.5", "1e3", "", " 2", "99999999999999999999"]) rejects(() => parseStoreQuery("last", { count: bad }), `Query parameter "count" not a number: ${bad}`);
  });

  test("from: fromTimestamp required, fromSequenceNumber defaults to 0 but is never silently replaced", () => {
    rejects(() => parseStoreQuery("from", {}), 'Query parameter "fromTimestamp" required.');
    rejects(() => parseStoreQuery("from", { fromTimestamp: "x" }), 'Query parameter "fromTimestamp" not a number: x');
    rejects(() => parseStoreQuery("from", { fromTimestamp: "1", fromSequenceNumber: "nope" }), 'Query parameter "fromSequenceNumber" not a number: nope');
    expect(parseStoreQuery("from", { fromTimestamp: "5" })).toMatchObject({ type: "from", from: { timestamp: 5, sequenceNumber: 0 } });
    expect(parseStoreQuery("from", { fromTimestamp: "5", publisherId: "0xab" })).toMatchObject({ publisherId: "0xab", msgChainId: undefined });
    rejects(() => parseStoreQuery("from", { fromTimestamp: "5", msgChainId: "c" }), 'Invalid combination of "publisherId" and "msgChainId"');
  });

  test("range: both ends required, toSequenceNumber=0 means 0, publisher and chain together or not at all", () => {
    rejects(
      () => parseStoreQuery("range", { fromTimestamp: "1" }),
      'Query parameter "toTimestamp" required as well. To request all messages since a timestamp, use the endpoint /stores/:id/data/partitions/:partition/from',
    );
    rejects(() => parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2.0" }), 'Query parameter "toTimestamp" not a number: 2.0');
    rejects(() => parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2", toSequenceNumber: "x" }), 'Query parameter "toSequenceNumber" not a number: x');
    expect(parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2", toSequenceNumber: "0" })).toMatchObject({ to: { timestamp: 2, sequenceNumber: 0 } });
    expect(parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2" })).toMatchObject({ to: { timestamp: 2, sequenceNumber: Number.MAX_SAFE_INTEGER } });
    rejects(() => parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2", publisherId: "0xab" }), 'Invalid combination of "publisherId" and "msgChainId"');
    rejects(() => parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2", msgChainId: "c" }), 'Invalid combination of "publisherId" and "msgChainId"');
    expect(parseStoreQuery("range", { fromTimestamp: "1", toTimestamp: "2", publisherId: "0xab", msgChainId: "c" })).toMatchObject({ publisherId: "0xab", msgChainId: "c" });
  });

  test("format, version, verifyNetworkResponses, requestId, query type and repeated parameters", () => {
    expect(parseStoreQuery("last", { format: "raw", version: "32", verifyNetworkResponses: "true" })).toMatchObject({ format: "raw", verifyNetworkResponses: true });
    rejects(() => parseStoreQuery("last", { format: "protobuf" }), 'Query parameter "format" is invalid: protobuf');
    rejects(() => parseStoreQuery("last", { version: "31" }), 'Query parameter "version" is not supported: 31');
    rejects(() => parseStoreQuery("last", { verifyNetworkResponses: "yes" }), 'Query parameter "verifyNetworkResponses" is invalid: yes');
    rejects(() => parseStoreQuery("last", { requestId: "r1" }), 'Query parameter "requestId" is not a UUID: r1');
    // Folded to lower case, as every request id is (src/schema.ts).
    expect(parseStoreQuery("last", { requestId: "3F1C9A52-8D4E-4B7A-9C1E-2A6B5D8E7F01" })).toMatchObject({ requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01" });
    rejects(() => parseStoreQuery("first", {}), "Unknown query type: first (expected one of last, from, range)");
    rejects(() => parseStoreQuery("last", { count: ["1", "2"] }), 'Query parameter "count" given more than once');
  });

  test("partition is a non-negative integer", () => {
    expect(parsePartition("0")).toBe(0);
    expect(parsePartition("42")).toBe(42);
    rejects(() => parsePartition("x"), 'Path parameter "partition" not a number: x');
    rejects(() => parsePartition("1.5"), 'Path parameter "partition" not a number: 1.5');
    rejects(() => parsePartition("-1"), 'Path parameter "partition" must not be negative: -1');
  });
});

describe("Accept header", () => {
  test("is parsed as a list of media ranges, not matched as one string", () => {
    expect(acceptsEventStream("text/event-stream")).toBe(true);
    expect(acceptsEventStream("application/json, Text/Event-Stream; charset=utf-8")).toBe(true);
    expect(acceptsEventStream("text/html,text/event-stream;q=0.5")).toBe(true);
    expect(acceptsEventStream("text/event-stream;q=0")).toBe(false);
    expect(acceptsEventStream("application/json")).toBe(false);
    expect(acceptsEventStream("text/event-streams")).toBe(false);
    expect(acceptsEventStream(null)).toBe(false);
  });
});
