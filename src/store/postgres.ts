/** The server backend: PostgreSQL (or a PostgreSQL-compatible engine) through Bun's built-in SQL client. */
import { SQL } from "bun";
import type { MessageStore, StoredMessage } from "./store.ts";
import {
  chainHeadSql,
  checkTableName,
  DEFAULT_TABLE,
  idKey,
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

/** 1000 rows × 8 parameters stays far below PostgreSQL's 65535-parameter limit. */
const INSERT_CHUNK = 1000;

export async function openPostgresStore(url: string, table = DEFAULT_TABLE): Promise<MessageStore> {
  checkTableName(table);
  const sql = new SQL(url);
  const run = <Row>(client: SQL, { text, params }: SqlStatement): Promise<Row[]> => client.unsafe<Row[]>(text, params);
  try {
    for (const text of schemaStatements(table)) await sql.unsafe(text);
  } catch (error) {
    await sql.close();
    throw error;
  }
  try {
    await sql.unsafe(layoutCheckSql(table));
  } catch {
    await sql.close();
    throw layoutError(table);
  }

  async function insert(messages: readonly StoredMessage[]): Promise<boolean[]> {
    const written = new Set<string>();
    await sql.begin(async (tx) => {
      for (let start = 0; start < messages.length; start += INSERT_CHUNK) {
        const chunk = messages.slice(start, start + INSERT_CHUNK);
        const params = chunk.flatMap(insertParams);
        const rows = await run<KeyRow & { stream_id: string; partition: number }>(tx, { text: insertSql(table, chunk.length, true), params });
        for (const row of rows) written.add(idKey({ streamId: row.stream_id, streamPartition: Number(row.partition), ...keyOfRow(row) }));
      }
    });
    // A message repeated within one call is written once: only its first occurrence counts as new.
    return messages.map(({ id }) => written.delete(idKey(id)));
  }

  return {
    backend: "postgres",
    insert,
    read: async (request) => (await run<ReadRow>(sql, readSql(table, request))).map(storedRowOf),
    nthNewestKey: async (streamId, partition, n) => {
      const [row] = await run<KeyRow>(sql, nthNewestKeySql(table, streamId, partition, n));
      return row && keyOfRow(row);
    },
    chainHead: async (streamId, partition, publisherId, msgChainId) => {
      const [row] = await run<KeyRow>(sql, chainHeadSql(table, streamId, partition, publisherId, msgChainId));
      return row && { timestamp: Number(row.ts), sequenceNumber: Number(row.sequence_no) };
    },
    close: () => sql.close(),
  };
}
