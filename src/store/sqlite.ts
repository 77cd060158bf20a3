/** The embedded backend: one SQLite file in the data folder, WAL with durable (synchronous=FULL) commits. */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { MessageStore, StoredMessage } from "./store.ts";
import {
  chainHeadSql,
  checkTableName,
  DEFAULT_TABLE,
  insertParams,
  insertSql,
  keyOfRow,
  layoutCheckSql,
  layoutError,
  nthNewestKeySql,
  readSql,
  schemaStatements,
  storedRowOf,
  type KeyRow,
  type ReadRow,
  type SqlStatement,
} from "./sql.ts";

export const SQLITE_FILE = "messages.sqlite";

export function openSqliteStore(dataDir: string, table = DEFAULT_TABLE): MessageStore {
  checkTableName(table);
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, SQLITE_FILE), { create: true, strict: false });
  // Rows hold both texts (~1 KB): with 4 KiB pages WITHOUT ROWID rows that large spill to overflow pages
  // (measured 4.7 KB on disk per message, reads 2.5x slower). Takes effect only when the file is created.
  db.run("PRAGMA page_size = 16384");
  db.run("PRAGMA journal_mode = WAL");
  // FULL: a commit is on disk before insert() resolves, so an acknowledged publish survives a crash.
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA busy_timeout = 5000");
  for (const statement of schemaStatements(table, "WITHOUT ROWID")) db.run(statement);
  try {
    db.run(layoutCheckSql(table));
  } catch {
    db.close();
    throw layoutError(table);
  }

  const insertOne = db.query(insertSql(table, 1, false));
  const insertAll = db.transaction((messages: readonly StoredMessage[]) =>
    messages.map((message) => insertOne.run(...insertParams(message)).changes === 1),
  );
  const all = <Row>({ text, params }: SqlStatement): Row[] => db.query<Row, SqlValueList>(text).all(...params);

  return {
    backend: "sqlite",
    insert: async (messages) => insertAll(messages),
    read: async (request) => all<ReadRow>(readSql(table, request)).map(storedRowOf),
    nthNewestKey: async (streamId, partition, n) => {
      const row = all<KeyRow>(nthNewestKeySql(table, streamId, partition, n))[0];
      return row && keyOfRow(row);
    },
    chainHead: async (streamId, partition, publisherId, msgChainId) => {
      const row = all<KeyRow>(chainHeadSql(table, streamId, partition, publisherId, msgChainId))[0];
      return row && { timestamp: Number(row.ts), sequenceNumber: Number(row.sequence_no) };
    },
    close: async () => db.close(),
  };
}

type SqlValueList = SqlStatement["params"];
