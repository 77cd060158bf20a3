/**
 * The embedded backend: one SQLite file in the data folder, in WAL mode, durable: a statement's result is handed out
 * only once every commit before it is on disk (wal-flush.ts flushes the log off the thread).
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { ensurePrivateFile, makePrivateDir } from "../base/private-files.ts";
import { AppError } from "../core/errors.ts";
import type { SqlDriver, SqlRun, SqlStatement } from "./driver.ts";
import { type FileFlush, fileFlush, walFlush } from "./wal-flush.ts";

export const SQLITE_FILE = "messages.sqlite";
/** A statement sure to write nothing. Any other one, outside a transaction, counts as a commit. */
const READ_ONLY = /^\s*SELECT\b/i;

/**
 * The journal mode SQLite answered when asked for WAL must be WAL: commits at synchronous=NORMAL are durable only once
 * their log is flushed, and a file without a log would have nothing flushed.
 */
export function requireWal(path: string, journalMode: string): void {
  if (journalMode !== "wal") throw new AppError("storage_failed", `SQLite cannot keep a write-ahead log for ${path} (its journal mode stays ${journalMode})`);
}

/**
 * A SQLite file (`file`, default messages.sqlite) in `dataDir`, which is made private if missing. `flushOf` makes how
 * its log (the path given) is flushed: an fsync unless a test says otherwise.
 */
export function openSqliteDriver(dataDir: string, file = SQLITE_FILE, flushOf: (path: string) => FileFlush = fileFlush): SqlDriver {
  makePrivateDir(dataDir);
  const path = join(dataDir, file);
  // Made 0600 before SQLite opens it: its -wal and -shm files take the database file's mode.
  ensurePrivateFile(path);
  const db = new Database(path, { create: true, strict: false });
  // Rows hold both texts (~1 KB): with 4 KiB pages WITHOUT ROWID rows that large spill to overflow pages
  // (measured 4.7 KB on disk per message, reads 2.5x slower). Takes effect only when the file is created.
  db.run("PRAGMA page_size = 16384");
  try {
    requireWal(path, db.query<{ journal_mode: string }, []>("PRAGMA journal_mode = WAL").get()!.journal_mode);
  } catch (error) {
    db.close();
    throw error;
  }
  // NORMAL: COMMIT writes the log without flushing it. `wal` flushes it before any result is handed out, so an
  // acknowledged publish still survives a power cut.
  db.run("PRAGMA synchronous = NORMAL");
  db.run("PRAGMA busy_timeout = 5000");
  const wal = walFlush(flushOf(`${path}-wal`));

  const runNow = async <Row>({ text, params }: SqlStatement): Promise<Row[]> => db.query<Row, SqlStatement["params"]>(text).all(...params);
  // One connection: while a transaction awaits between its statements, everything else waits its turn.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const result = turn.then(task, task);
    turn = result.catch(() => undefined);
    return result;
  };
  // The flush is awaited outside the turn: the next statements run meanwhile, and their commits share the next flush.
  const run: SqlRun = async <Row>(statement: SqlStatement) => {
    const rows = await exclusive(async () => {
      const result = await runNow<Row>(statement);
      if (!READ_ONLY.test(statement.text)) wal.committed();
      return result;
    });
    await wal.durable();
    return rows;
  };
  // BEGIN IMMEDIATE takes the file's write lock at once: other processes wait (busy_timeout), never interleave.
  const transaction = async <T>(work: (run: SqlRun) => Promise<T>): Promise<T> => {
    const result = await exclusive(async () => {
      db.run("BEGIN IMMEDIATE");
      try {
        const done = await work(runNow);
        db.run("COMMIT");
        wal.committed();
        return done;
      } catch (error) {
        db.run("ROLLBACK");
        throw error;
      }
    });
    await wal.durable();
    return result;
  };

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
      await wal.close();
      db.close();
    },
  };
}
