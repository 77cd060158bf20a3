/** One suite, both backends: what the MessageStore interface promises. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { join } from "node:path";
import { openStore } from "../../src/store/index.ts";
import type { MessageId, StoredMessage } from "../../src/store/message.ts";
import type { SqlDriver, SqlStatement } from "../../src/store/driver.ts";
import { openPostgresDriver } from "../../src/store/postgres.ts";
import { openSqliteDriver, SQLITE_FILE } from "../../src/store/sqlite.ts";
import { SqlMessageStore } from "../../src/store/sql-store.ts";
import type { MessageStore, ReadRequest } from "../../src/store/store.ts";
import { OUT_OF_LINE_BYTES, textIdCheckSql, textsTable } from "../../src/store/sql.ts";
import { backends, dropTable, PG_URL, reopen, type OpenedStore } from "./backends.ts";

/** One statement straight on the backend's database, beside the store. */
async function runSql(opened: OpenedStore, text: string): Promise<void> {
  if (opened.options.url) {
    const sql = new SQL(PG_URL, { max: 1 });
    await sql.unsafe(text).finally(() => sql.close());
    return;
  }
  const db = new Database(join(opened.dataDir, SQLITE_FILE));
  db.run(text);
  db.close();
}

/** The rows of a table of the backend's database, counted beside the store. */
async function countRows(opened: OpenedStore, table: string): Promise<number> {
  const text = `SELECT COUNT(*) AS n FROM ${table}`;
  if (opened.options.url) {
    const sql = new SQL(PG_URL, { max: 1 });
    const [row] = (await sql.unsafe(text).finally(() => sql.close())) as { n: number | string }[];
    return Number(row!.n);
  }
  const db = new Database(join(opened.dataDir, SQLITE_FILE));
  const row = db.query<{ n: number }, []>(text).get();
  db.close();
  return row!.n;
}

const message = (timestamp: number, sequenceNumber: number, publisherId = "0xaa", msgChainId = "c", streamId = "s", streamPartition = 0): StoredMessage => {
  const id: MessageId = { streamId, streamPartition, timestamp, sequenceNumber, publisherId, msgChainId };
  const body = `m-${timestamp}-${sequenceNumber}-${publisherId}-${msgChainId}`;
  return { id, raw: JSON.stringify({ ...id, body }), object: JSON.stringify({ body, id }) };
};
const refs = (rows: { timestamp: number; sequenceNumber: number; publisherId: string; msgChainId: string }[]) =>
  rows.map((r) => `${r.timestamp}.${r.sequenceNumber}.${r.publisherId}.${r.msgChainId}`);

for (const backend of backends) {
  describe(`MessageStore on ${backend.name}`, () => {
    let opened: OpenedStore;
    let store: MessageStore;
    beforeEach(async () => {
      opened = await backend.open();
      store = opened.store;
    });
    afterEach(() => opened.cleanup());
    /** Keys only: what ordering and paging tests compare. */
    const keys = (request: Omit<ReadRequest, "texts">) => store.read({ ...request, texts: [] });

    test("reports its backend", () => {
      expect(store.backend).toBe(backend.name);
    });

    test("stores a duplicate id once and says which were new", async () => {
      const first = message(10, 0);
      expect(await store.insert([first, message(10, 1)])).toEqual([true, true]);
      const again = { ...message(10, 0), raw: "different", object: "different" };
      expect(await store.insert([again, message(11, 0), message(11, 0)])).toEqual([false, true, false]);
      const rows = await store.read({ streamId: "s", partition: 0, limit: 10, texts: ["raw", "object"] });
      expect(refs(rows)).toEqual(["10.0.0xaa.c", "10.1.0xaa.c", "11.0.0xaa.c"]);
      expect(rows[0]).toMatchObject({ raw: first.raw, object: first.object });
    });

    test("a message marked as one that must be new, whose id is taken, fails the whole insert: nothing of it is stored", async () => {
      const first = message(30, 0);
      expect(await store.insert([first], [true])).toEqual([true]);
      const taken = { ...message(30, 0), raw: "another process's", object: "another process's" };
      await expect(store.insert([message(31, 0), taken], [false, true])).rejects.toThrow("is already stored");
      const rows = await store.read({ streamId: "s", partition: 0, limit: 10, texts: ["raw"] });
      expect(rows.map((row) => [row.timestamp, row.raw])).toEqual([[30, first.raw]]);
      // Unmarked, an existing id is a duplicate, answered as such.
      expect(await store.insert([taken], [false])).toEqual([false]);
    });

    test("orders by timestamp, sequence number, publisher, chain and keeps streams and partitions apart", async () => {
      await store.insert([message(20, 0, "0xbb"), message(20, 0, "0xaa", "z"), message(20, 0, "0xaa", "a"), message(5, 9), message(20, 1), message(1, 0, "0xaa", "c", "other"), message(1, 0, "0xaa", "c", "s", 1)]);
      const rows = await keys({ streamId: "s", partition: 0, limit: 100 });
      expect(refs(rows)).toEqual(["5.9.0xaa.c", "20.0.0xaa.a", "20.0.0xaa.z", "20.0.0xbb.c", "20.1.0xaa.c"]);
      expect(refs(await keys({ streamId: "s", partition: 1, limit: 100 }))).toEqual(["1.0.0xaa.c"]);
    });

    test("pages by key: inclusive and exclusive starts, inclusive upper bound, filters, limit", async () => {
      await store.insert([message(1, 0), message(2, 0), message(2, 0, "0xbb"), message(2, 1), message(3, 0, "0xbb", "x"), message(3, 0, "0xbb", "y"), message(4, 0)]);
      const at = { timestamp: 2, sequenceNumber: 0, publisherId: "0xbb", msgChainId: "c" };
      expect(refs(await keys({ streamId: "s", partition: 0, after: { key: at, inclusive: true }, limit: 2 }))).toEqual(["2.0.0xbb.c", "2.1.0xaa.c"]);
      expect(refs(await keys({ streamId: "s", partition: 0, after: { key: at, inclusive: false }, limit: 2 }))).toEqual(["2.1.0xaa.c", "3.0.0xbb.x"]);
      const upTo = { timestamp: 3, sequenceNumber: 0 };
      expect(refs(await keys({ streamId: "s", partition: 0, after: { key: at, inclusive: false }, upTo, limit: 100 }))).toEqual(["2.1.0xaa.c", "3.0.0xbb.x", "3.0.0xbb.y"]);
      expect(refs(await keys({ streamId: "s", partition: 0, publisherId: "0xbb", limit: 100 }))).toEqual(["2.0.0xbb.c", "3.0.0xbb.x", "3.0.0xbb.y"]);
      expect(refs(await keys({ streamId: "s", partition: 0, publisherId: "0xbb", msgChainId: "y", limit: 100 }))).toEqual(["3.0.0xbb.y"]);
      expect(await keys({ streamId: "s", partition: 0, upTo: { timestamp: 0, sequenceNumber: 0 }, limit: 100 })).toEqual([]);
    });

    test("returns only the texts asked for", async () => {
      const stored = message(1, 0);
      await store.insert([stored]);
      const read = (texts: ReadRequest["texts"]) => store.read({ streamId: "s", partition: 0, limit: 1, texts });
      expect(await read([])).toEqual([{ timestamp: 1, sequenceNumber: 0, publisherId: "0xaa", msgChainId: "c", raw: undefined, object: undefined }]);
      expect(await read(["object"])).toMatchObject([{ raw: undefined, object: stored.object }]);
      expect(await read(["raw"])).toMatchObject([{ raw: stored.raw, object: undefined }]);
    });

    test("refuses a table of the earlier single-payload layout instead of failing on first use", async () => {
      const table = `${opened.options.table}_old`;
      await runSql(opened, `CREATE TABLE ${table} (stream_id TEXT, partition INTEGER, ts BIGINT, sequence_no BIGINT, publisher_id TEXT, msg_chain_id TEXT, payload TEXT, PRIMARY KEY (stream_id, partition, ts, sequence_no, publisher_id, msg_chain_id))`);
      try {
        await expect(openStore({ ...opened.options, table })).rejects.toThrow(`table ${table} predates the raw_json/object_json layout`);
      } finally {
        if (opened.options.url) await dropTable(table);
      }
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

    test("finds the n-th newest key by a keyset walk across pages, and nothing for a count beyond the partition", async () => {
      // 12 001 messages: the walk (5000 keys a page) crosses two page boundaries.
      await store.insert(Array.from({ length: 12_001 }, (_, i) => message(1000 + i, 0)));
      const nth = async (n: number) => (await store.nthNewestKey("s", 0, n))?.timestamp;
      expect(await nth(1)).toBe(13_000);
      expect(await nth(5000)).toBe(8001);
      expect(await nth(5001)).toBe(8000);
      expect(await nth(10_000)).toBe(3001);
      expect(await nth(12_001)).toBe(1000);
      expect(await nth(12_002)).toBeUndefined();
      expect(await nth(Number.MAX_SAFE_INTEGER)).toBeUndefined();
    });

    test("a huge count costs keyset pages of at most 5000 keys on the database, never an OFFSET", async () => {
      await store.insert(Array.from({ length: 12_001 }, (_, i) => message(1000 + i, 0)));
      // A second driver on the same database that records what the shared store sends it.
      const driver: SqlDriver = opened.options.url ? await openPostgresDriver(opened.options.url) : openSqliteDriver(opened.dataDir);
      const sent: SqlStatement[] = [];
      const recording: SqlDriver = { ...driver, run: (statement) => (sent.push(statement), driver.run(statement)) };
      try {
        const watched = await SqlMessageStore.open(recording, opened.options.table);
        sent.length = 0;
        expect(await watched.nthNewestKey("s", 0, Number.MAX_SAFE_INTEGER)).toBeUndefined();
        expect(sent).toHaveLength(3);
        for (const { text, params } of sent) {
          expect(text).not.toContain("OFFSET");
          expect(params.at(-1)).toBe(5000);
        }
      } finally {
        await driver.close();
      }
    });

    test("keeps 64-bit-range timestamps and large batches exact", async () => {
      const big = Array.from({ length: 2500 }, (_, i) => message(4_000_000_000_000 + i, i));
      expect((await store.insert(big)).every(Boolean)).toBe(true);
      const rows = await store.read({ streamId: "s", partition: 0, limit: 3000, texts: ["raw", "object"] });
      expect(rows.length).toBe(2500);
      expect(rows[2499]).toMatchObject({ timestamp: 4_000_000_002_499, sequenceNumber: 2499, raw: big[2499]?.raw, object: big[2499]?.object });
    });

    test("keeps large texts out of line: read back whole, counted in the stream's bytes, stored once, deleted with their message", async () => {
      const texts = textsTable(opened.options.table);
      const small = message(40, 0);
      // Out of line by its bytes, not its length: 1,100 euro signs are 3,300 bytes of UTF-8.
      const large = { ...message(40, 1), object: JSON.stringify({ pad: "€".repeat(1_100) }) };
      expect(small.raw.length + small.object.length).toBeLessThan(OUT_OF_LINE_BYTES);
      expect(large.raw.length + large.object.length).toBeLessThan(OUT_OF_LINE_BYTES);
      const again = { ...large, raw: "a second copy", object: JSON.stringify({ pad: "y".repeat(20_000) }) };
      expect(await store.insert([small, large, again])).toEqual([true, true, false]);
      expect(await countRows(opened, texts)).toBe(1);
      const read = await store.read({ streamId: "s", partition: 0, limit: 10, texts: ["raw", "object"] });
      expect(read.map((row) => [row.raw, row.object])).toEqual([[small.raw, small.object], [large.raw, large.object]]);
      expect(await store.streamBytes("s")).toBe(small.raw.length + small.object.length + large.raw.length + large.object.length);
      // A taken id fails the insert whole: the texts it stored out of line go with it.
      await expect(store.insert([{ ...message(41, 0), raw: again.object, object: again.object }, again], [false, true])).rejects.toThrow("is already stored");
      expect(await countRows(opened, texts)).toBe(1);
      expect(await store.pruneMessages(41, "another stream")).toBe(2);
      expect(await countRows(opened, texts)).toBe(0);
    });

    test("opens a table made before texts were kept out of line: its messages stay readable, new large ones go out of line", async () => {
      const table = `${opened.options.table}_v2`;
      await runSql(opened, `CREATE TABLE ${table} (stream_id TEXT NOT NULL, partition INTEGER NOT NULL, ts BIGINT NOT NULL, sequence_no BIGINT NOT NULL, publisher_id TEXT NOT NULL, msg_chain_id TEXT NOT NULL, raw_json TEXT NOT NULL, object_json TEXT NOT NULL, PRIMARY KEY (stream_id, partition, ts, sequence_no, publisher_id, msg_chain_id))`);
      const old = { ...message(50, 0), raw: JSON.stringify({ pad: "o".repeat(10_000) }) };
      await runSql(opened, `INSERT INTO ${table} VALUES ('s', 0, 50, 0, '0xaa', 'c', '${old.raw}', '${old.object}')`);
      const reopened = await openStore({ ...opened.options, table });
      try {
        const large = { ...message(51, 0), raw: JSON.stringify({ pad: "n".repeat(10_000) }) };
        expect(await reopened.messages.insert([large])).toEqual([true]);
        const read = await reopened.messages.read({ streamId: "s", partition: 0, limit: 10, texts: ["raw", "object"] });
        expect(read.map((row) => [row.timestamp, row.raw, row.object])).toEqual([[50, old.raw, old.object], [51, large.raw, large.object]]);
        expect(await countRows(opened, textsTable(table))).toBe(1);
      } finally {
        await reopened.close();
        if (opened.options.url) await dropTable(table);
      }
    });

    test("a store that finds the text_id column missing, then added by another before its own ALTER, opens all the same", async () => {
      // Provers starting together on one PostgreSQL database: the column is there by the time this one adds it. A
      // driver that answers the first look for the column as if it were missing stands in for the other prover's timing.
      const driver: SqlDriver = opened.options.url ? await openPostgresDriver(opened.options.url) : openSqliteDriver(opened.dataDir);
      let looked = false;
      const late: SqlDriver = {
        ...driver,
        run: (statement) => {
          if (!looked && statement.text === textIdCheckSql(opened.options.table)) {
            looked = true;
            return Promise.reject(new Error("no such column: text_id"));
          }
          return driver.run(statement);
        },
      };
      try {
        const store = await SqlMessageStore.open(late, opened.options.table);
        expect(looked).toBe(true);
        expect(await store.insert([message(60, 0)])).toEqual([true]);
      } finally {
        await driver.close();
      }
    });

    test("survives close and reopen with the data in place", async () => {
      await store.insert([message(7, 0)]);
      await reopen(opened);
      store = opened.store;
      expect(refs(await keys({ streamId: "s", partition: 0, limit: 10 }))).toEqual(["7.0.0xaa.c"]);
    });
  });
}
