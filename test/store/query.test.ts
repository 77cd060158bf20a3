import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { validateRequest } from "../../src/http/route.ts";
import { parseStoreQuery } from "../../src/store/query.ts";
import { acceptsEventStream, storeQueryRoute } from "../../src/store/routes.ts";

/** A `last` query as the store's route reads it from a request, by its declaration. */
const routeInput = (partition: string, search = "") =>
  validateRequest(storeQueryRoute, new Request(`http://localhost/stores/s/data/partitions/${partition}/last${search}`), { id: "s", partition, queryType: "last" });

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
    // Folded to lower case, as every request id is (src/core/schema.ts).
    expect(parseStoreQuery("last", { requestId: "3F1C9A52-8D4E-4B7A-9C1E-2A6B5D8E7F01" })).toMatchObject({ requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01" });
    rejects(() => parseStoreQuery("first", {}), "Unknown query type: first (expected one of last, from, range)");
    rejects(() => routeInput("0", "?count=1&count=2"), 'Query parameter "count" given more than once');
  });

  test("partition is a non-negative integer", () => {
    expect(routeInput("0").params.partition).toBe(0);
    expect(routeInput("42").params.partition).toBe(42);
    rejects(() => routeInput("x"), 'Path parameter "partition" not a number: x');
    rejects(() => routeInput("1.5"), 'Path parameter "partition" not a number: 1.5');
    rejects(() => routeInput("-1"), 'Path parameter "partition" must not be negative: -1');
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
