/** The embedded backend: one SQLite file in the data folder, WAL with durable (synchronous=FULL) commits. */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { ensurePrivateFile, makePrivateDir } from "../base/private-files.ts";
import type { SqlDriver, SqlRun, SqlStatement } from "./driver.ts";

export const SQLITE_FILE = "messages.sqlite";

/** A SQLite file (`file`, default messages.sqlite) in `dataDir`, which is made private if missing. */
export function openSqliteDriver(dataDir: string, file = SQLITE_FILE): SqlDriver {
  makePrivateDir(dataDir);
  // Made 0600 before SQLite opens it: its -wal and -shm files take the database file's mode.
  ensurePrivateFile(join(dataDir, file));
  const db = new Database(join(dataDir, file), { create: true, strict: false });
  // Rows hold both texts (~1 KB): with 4 KiB pages WITHOUT ROWID rows that large spill to overflow pages
  // (measured 4.7 KB on disk per message, reads 2.5x slower). Takes effect only when the file is created.
  db.run("PRAGMA page_size = 16384");
  db.run("PRAGMA journal_mode = WAL");
  // FULL: a commit is on disk before it resolves, so an acknowledged publish survives a crash.
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA busy_timeout = 5000");

  const runNow = async <Row>({ text, params }: SqlStatement): Promise<Row[]> => db.query<Row, SqlStatement["params"]>(text).all(...params);
  // One connection: while a transaction awaits between its statements, everything else waits its turn.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const result = turn.then(task, task);
    turn = result.catch(() => undefined);
    return result;
  };
  const run: SqlRun = (statement) => exclusive(() => runNow(statement));
  // BEGIN IMMEDIATE takes the file's write lock at once: other processes wait (busy_timeout), never interleave.
  const transaction = <T>(work: (run: SqlRun) => Promise<T>): Promise<T> =>
    exclusive(async () => {
      db.run("BEGIN IMMEDIATE");
      try {
        const result = await work(runNow);
        db.run("COMMIT");
        return result;
      } catch (error) {
        db.run("ROLLBACK");
        throw error;
      }
    });

  return {
    backend: "sqlite",
    keyedTableSuffix: "WITHOUT ROWID",
    // The rowid itself: rows in a rowid table are never compared by their content.
    generatedIdColumn: "id INTEGER PRIMARY KEY",
    run,
    transaction,
    setUp: (statements) =>
      transaction(async (inTransaction) => {
        for (const text of statements) await inTransaction({ text, params: [] });
      }),
    close: async () => {
      await turn;
      db.close();
    },
  };
}
