/** The embedded backend: one SQLite file in the data folder, WAL with durable (synchronous=FULL) commits. */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { MessageStore, StoredMessage } from "./store.ts";
import { chainHeadSql, checkTableName, DEFAULT_TABLE, insertSql, keyOfRow, nthNewestKeySql, readSql, schemaStatements, type KeyRow, type SqlStatement } from "./sql.ts";

export const SQLITE_FILE = "messages.sqlite";

export function openSqliteStore(dataDir: string, table = DEFAULT_TABLE): MessageStore {
  checkTableName(table);
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, SQLITE_FILE), { create: true, strict: false });
  db.run("PRAGMA journal_mode = WAL");
  // FULL: a commit is on disk before insert() resolves, so an acknowledged publish survives a crash.
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA busy_timeout = 5000");
  for (const statement of schemaStatements(table, "WITHOUT ROWID")) db.run(statement);

  const insertOne = db.query(insertSql(table, 1, false));
  const insertAll = db.transaction((messages: readonly StoredMessage[]) =>
    messages.map(({ id, payload }) =>
      insertOne.run(id.streamId, id.streamPartition, id.timestamp, id.sequenceNumber, id.publisherId, id.msgChainId, payload).changes === 1,
    ),
  );
  const all = <Row>({ text, params }: SqlStatement): Row[] => db.query<Row, SqlValueList>(text).all(...params);

  return {
    backend: "sqlite",
    insert: async (messages) => insertAll(messages),
    read: async (request) => all<KeyRow & { payload: string }>(readSql(table, request)).map((row) => ({ ...keyOfRow(row), payload: row.payload })),
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
