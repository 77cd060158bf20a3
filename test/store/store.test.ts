/** One suite, both backends: what the MessageStore interface promises. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { MessageId } from "../../src/store/message.ts";
import type { MessageStore, StoredMessage } from "../../src/store/store.ts";
import { backends, type OpenedStore } from "./backends.ts";

const message = (timestamp: number, sequenceNumber: number, publisherId = "0xaa", msgChainId = "c", streamId = "s", streamPartition = 0): StoredMessage => {
  const id: MessageId = { streamId, streamPartition, timestamp, sequenceNumber, publisherId, msgChainId };
  return { id, payload: JSON.stringify({ ...id, body: `m-${timestamp}-${sequenceNumber}-${publisherId}-${msgChainId}` }) };
};
const refs = (rows: { timestamp: number; sequenceNumber: number; publisherId: string; msgChainId: string }[]) =>
  rows.map((r) => `${r.timestamp}.${r.sequenceNumber}.${r.publisherId}.${r.msgChainId}`);

for (const backend of backends) {
  describe.skipIf(backend.skipReason !== undefined)(`MessageStore on ${backend.name}`, () => {
    let opened: OpenedStore;
    let store: MessageStore;
    beforeEach(async () => {
      opened = await backend.open();
      store = opened.store;
    });
    afterEach(() => opened.cleanup());

    test("reports its backend", () => {
      expect(store.backend).toBe(backend.name);
    });

    test("stores a duplicate id once and says which were new", async () => {
      const first = message(10, 0);
      expect(await store.insert([first, message(10, 1)])).toEqual([true, true]);
      const again = { ...message(10, 0), payload: "different" };
      expect(await store.insert([again, message(11, 0), message(11, 0)])).toEqual([false, true, false]);
      const rows = await store.read({ streamId: "s", partition: 0, limit: 10 });
      expect(refs(rows)).toEqual(["10.0.0xaa.c", "10.1.0xaa.c", "11.0.0xaa.c"]);
      expect(rows[0]?.payload).toBe(first.payload);
    });

    test("orders by timestamp, sequence number, publisher, chain and keeps streams and partitions apart", async () => {
      await store.insert([message(20, 0, "0xbb"), message(20, 0, "0xaa", "z"), message(20, 0, "0xaa", "a"), message(5, 9), message(20, 1), message(1, 0, "0xaa", "c", "other"), message(1, 0, "0xaa", "c", "s", 1)]);
      const rows = await store.read({ streamId: "s", partition: 0, limit: 100 });
      expect(refs(rows)).toEqual(["5.9.0xaa.c", "20.0.0xaa.a", "20.0.0xaa.z", "20.0.0xbb.c", "20.1.0xaa.c"]);
      expect(refs(await store.read({ streamId: "s", partition: 1, limit: 100 }))).toEqual(["1.0.0xaa.c"]);
    });

    test("pages by key: inclusive and exclusive starts, inclusive upper bound, filters, limit", async () => {
      await store.insert([message(1, 0), message(2, 0), message(2, 0, "0xbb"), message(2, 1), message(3, 0, "0xbb", "x"), message(3, 0, "0xbb", "y"), message(4, 0)]);
      const at = { timestamp: 2, sequenceNumber: 0, publisherId: "0xbb", msgChainId: "c" };
      expect(refs(await store.read({ streamId: "s", partition: 0, after: { key: at, inclusive: true }, limit: 2 }))).toEqual(["2.0.0xbb.c", "2.1.0xaa.c"]);
      expect(refs(await store.read({ streamId: "s", partition: 0, after: { key: at, inclusive: false }, limit: 2 }))).toEqual(["2.1.0xaa.c", "3.0.0xbb.x"]);
      const upTo = { timestamp: 3, sequenceNumber: 0 };
      expect(refs(await store.read({ streamId: "s", partition: 0, after: { key: at, inclusive: false }, upTo, limit: 100 }))).toEqual(["2.1.0xaa.c", "3.0.0xbb.x", "3.0.0xbb.y"]);
      expect(refs(await store.read({ streamId: "s", partition: 0, publisherId: "0xbb", limit: 100 }))).toEqual(["2.0.0xbb.c", "3.0.0xbb.x", "3.0.0xbb.y"]);
      expect(refs(await store.read({ streamId: "s", partition: 0, publisherId: "0xbb", msgChainId: "y", limit: 100 }))).toEqual(["3.0.0xbb.y"]);
      expect(await store.read({ streamId: "s", partition: 0, upTo: { timestamp: 0, sequenceNumber: 0 }, limit: 100 })).toEqual([]);
    });

    test("finds the n-th newest key and chain heads", async () => {
      await store.insert([message(1, 0), message(2, 0), message(2, 5, "0xaa", "d"), message(3, 0, "0xbb")]);
      expect(await store.nthNewestKey("s", 0, 1)).toEqual({ timestamp: 3, sequenceNumber: 0, publisherId: "0xbb", msgChainId: "c" });
      expect(await store.nthNewestKey("s", 0, 3)).toEqual({ timestamp: 2, sequenceNumber: 0, publisherId: "0xaa", msgChainId: "c" });
      expect(await store.nthNewestKey("s", 0, 5)).toBeUndefined();
      expect(await store.chainHead("s", 0, "0xaa", "c")).toEqual({ timestamp: 2, sequenceNumber: 0 });
      expect(await store.chainHead("s", 0, "0xaa", "d")).toEqual({ timestamp: 2, sequenceNumber: 5 });
      expect(await store.chainHead("s", 0, "0xcc", "c")).toBeUndefined();
    });

    test("keeps 64-bit-range timestamps and large batches exact", async () => {
      const big = Array.from({ length: 2500 }, (_, i) => message(4_000_000_000_000 + i, i));
      expect((await store.insert(big)).every(Boolean)).toBe(true);
      const rows = await store.read({ streamId: "s", partition: 0, limit: 3000 });
      expect(rows.length).toBe(2500);
      expect(rows[2499]).toMatchObject({ timestamp: 4_000_000_002_499, sequenceNumber: 2499 });
      expect(rows[2499]?.payload).toBe(big[2499]?.payload ?? "");
    });

    test("survives close and reopen with the data in place", async () => {
      await store.insert([message(7, 0)]);
      await store.close();
      const { openStore } = await import("../../src/store/index.ts");
      store = await openStore(opened.options);
      opened.store = store;
      expect(refs(await store.read({ streamId: "s", partition: 0, limit: 10 }))).toEqual(["7.0.0xaa.c"]);
    });
  });
}
