/**
 * The SQLite driver's durability (src/store/sqlite.ts) on a log flush the test holds: no result leaves before the
 * commits made up to it are flushed, whether it wrote (a statement, a transaction) or only reads what was written.
 */
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import type { SqlDriver } from "../../src/store/driver.ts";
import { openSqliteDriver, requireWal } from "../../src/store/sqlite.ts";
import { appErrorOf } from "../../testkit/app-error.ts";
import type { FileFlush } from "../../src/store/wal-flush.ts";
import { tempDir } from "../../testkit/env.ts";
import { hasSettled } from "../../testkit/wait.ts";

/** A driver whose log flushes end when the test says; the flushed paths are recorded. */
function heldDriver(): { driver: SqlDriver; flushes: (() => void)[]; paths: string[]; dir: string } {
  const flushes: (() => void)[] = [];
  const paths: string[] = [];
  const dir = tempDir("sqlite-driver");
  const flushOf = (path: string): FileFlush => {
    paths.push(path);
    return { flush: () => new Promise<void>((resolve) => flushes.push(resolve)), close: async () => {} };
  };
  return { driver: openSqliteDriver(dir, "held.sqlite", flushOf), flushes, paths, dir };
}

/** Ends the one flush under way, and waits for `promise`. */
async function afterFlush<T>(flushes: (() => void)[], promise: Promise<T>): Promise<T> {
  expect(await hasSettled(promise)).toBe(false);
  flushes.shift()!();
  return promise;
}

describe("a SQLite store's results wait for its log to be on disk", () => {
  test("the log flushed is the database's own write-ahead log, and it keeps the data across a reopen", async () => {
    const { driver, flushes, paths, dir } = heldDriver();
    expect(paths).toEqual([join(dir, "held.sqlite-wal")]);
    await afterFlush(flushes, driver.setUp(["CREATE TABLE t (n INTEGER)"]));
    await afterFlush(flushes, driver.run({ text: "INSERT INTO t (n) VALUES ($1)", params: [7] }));
    await driver.close();
    const reopened = new Database(join(dir, "held.sqlite"));
    expect(reopened.query("SELECT n FROM t").all()).toEqual([{ n: 7 }]);
    expect(reopened.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    reopened.close();
  });

  test("a write's result leaves after the flush; a read with nothing unflushed needs none, one after a write waits for it", async () => {
    const { driver, flushes } = heldDriver();
    await afterFlush(flushes, driver.setUp(["CREATE TABLE t (n INTEGER)"]));
    const inserted = await afterFlush(flushes, driver.run<{ n: number }>({ text: "INSERT INTO t (n) VALUES ($1) RETURNING n", params: [1] }));
    expect(inserted).toEqual([{ n: 1 }]);
    expect(await driver.run({ text: "SELECT n FROM t", params: [] })).toEqual([{ n: 1 }]);
    expect(flushes).toHaveLength(0);
    // A read asked for while a write's flush is under way sees that write: it waits for the same flush.
    const write = driver.run({ text: "INSERT INTO t (n) VALUES ($1)", params: [2] });
    const read = driver.run({ text: "  select count(*) AS c FROM t", params: [] });
    expect(await hasSettled(read)).toBe(false);
    flushes.shift()!();
    expect(await read).toEqual([{ c: 2 }]);
    await write;
    expect(flushes).toHaveLength(0);
    await driver.close();
  });

  test("a transaction's result leaves after the flush of its commit; one rolled back flushes nothing", async () => {
    const { driver, flushes } = heldDriver();
    await afterFlush(flushes, driver.setUp(["CREATE TABLE t (n INTEGER)"]));
    const committed = driver.transaction(async (run) => {
      await run({ text: "INSERT INTO t (n) VALUES ($1)", params: [1] });
      return "done";
    });
    expect(await afterFlush(flushes, committed)).toBe("done");
    const failed = driver.transaction(async (run) => {
      await run({ text: "INSERT INTO t (n) VALUES ($1)", params: [2] });
      throw new Error("changed its mind");
    });
    await expect(failed).rejects.toThrow("changed its mind");
    expect(flushes).toHaveLength(0);
    expect(await driver.run({ text: "SELECT n FROM t", params: [] })).toEqual([{ n: 1 }]);
    await driver.close();
  });

  test("with the real fsync: writes, reads and a reopen", async () => {
    const dir = tempDir("sqlite-driver");
    const driver = openSqliteDriver(dir, "real.sqlite");
    await driver.setUp(["CREATE TABLE t (n INTEGER)"]);
    await Promise.all([1, 2, 3].map((n) => driver.run({ text: "INSERT INTO t (n) VALUES ($1)", params: [n] })));
    expect(await driver.run({ text: "SELECT n FROM t ORDER BY n", params: [] })).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    await driver.close();
    const again = openSqliteDriver(dir, "real.sqlite");
    expect(await again.run({ text: "SELECT count(*) AS c FROM t", params: [] })).toEqual([{ c: 3 }]);
    await again.close();
  });

  test("a file whose journal SQLite will not set to WAL is refused when opened: its commits would have no log to flush", () => {
    expect(appErrorOf(() => requireWal("/data/messages.sqlite", "memory"))).toEqual({
      code: "storage_failed",
      message: "SQLite cannot keep a write-ahead log for /data/messages.sqlite (its journal mode stays memory)",
    });
    expect(appErrorOf(() => requireWal("/data/messages.sqlite", "delete"))?.code).toBe("storage_failed");
    expect(() => requireWal("/data/messages.sqlite", "wal")).not.toThrow();
  });
});
