/**
 * The SQL both backends run, as text with $1… placeholders (SQLite reads `$1` as a parameter named "1" and binds
 * it by position of first use, which every statement here keeps in order). Only SQL that SQLite, PostgreSQL and
 * the PostgreSQL-compatible distributed engines share: row-value comparisons, ON CONFLICT DO NOTHING, RETURNING.
 */
import { AppError } from "../core/errors.ts";
import type { SqlStatement, SqlValue } from "./driver.ts";
import type { MessageText, StoredMessage } from "./message.ts";
import type { MessageKey, ReadRequest, StoredRow } from "./store.ts";

export const DEFAULT_TABLE = "messages";

export function checkTableName(table: string): string {
  if (!/^[a-z_][a-z0-9_]{0,50}$/.test(table)) throw new AppError("config_invalid", `invalid table name: ${table}`);
  return table;
}

const KEY_COLUMNS = "stream_id, partition, ts, sequence_no, publisher_id, msg_chain_id";
const TEXT_COLUMNS: Record<MessageText, string> = { raw: "raw_json", object: "object_json" };
const COLUMN_COUNT = 8;
const ORDER_COLUMNS = ["ts", "sequence_no", "publisher_id", "msg_chain_id"];
const ascending = ORDER_COLUMNS.join(", ");
const descending = ORDER_COLUMNS.map((c) => `${c} DESC`).join(", ");

/**
 * Texts of more bytes than this (both together, UTF-8) are kept out of line, in the texts table. SQLite keeps a
 * `WITHOUT ROWID` row inside its key's b-tree, and a row past about 4 KB (16 KiB pages) overflows: SQLite then
 * reads the whole row, megabytes, for each key compared with it, so every insert next to a large message paid for
 * its size (BENCHMARKS.md, "inserts beside a large message"). Out of line, the keyed row stays small and the texts
 * live in a rowid table, where no key is compared with them. Small messages, most of them, stay in line and are
 * read as before (textColumn).
 */
export const OUT_OF_LINE_BYTES = 3_072;

/** The table that holds the texts of the messages kept out of line (`text_id` points into it). */
export const textsTable = (table: string): string => `${table}_texts`;

/**
 * The primary key serves `last`, `from` and `range` scans in order; the chain index serves publisher-filtered
 * scans and the chain-head lookup of sequence assignment. `tableSuffix` is the driver's `keyedTableSuffix`,
 * `idColumn` its `generatedIdColumn`.
 * Each message keeps both answer texts (see message.ts): object answers then cost no per-message parsing. A message
 * whose texts are large keeps them in the texts table instead, its own two empty (OUT_OF_LINE_BYTES).
 */
export function schemaStatements(table: string, tableSuffix: string, idColumn: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
      stream_id TEXT NOT NULL,
      partition INTEGER NOT NULL,
      ts BIGINT NOT NULL,
      sequence_no BIGINT NOT NULL,
      publisher_id TEXT NOT NULL,
      msg_chain_id TEXT NOT NULL,
      raw_json TEXT NOT NULL,
      object_json TEXT NOT NULL,
      text_id BIGINT,
      PRIMARY KEY (${KEY_COLUMNS})
    ) ${tableSuffix}`,
    `CREATE INDEX IF NOT EXISTS ${table}_chain ON ${table} (stream_id, partition, publisher_id, msg_chain_id, ts, sequence_no)`,
    // Retention deletes the oldest messages of every stream without a scan.
    `CREATE INDEX IF NOT EXISTS ${table}_ts ON ${table} (ts)`,
    `CREATE TABLE IF NOT EXISTS ${textsTable(table)} (${idColumn}, raw_json TEXT NOT NULL, object_json TEXT NOT NULL)`,
  ];
}

/** Whether a table has the `text_id` column (a table made before texts were kept out of line has not). */
export const textIdCheckSql = (table: string): string => `SELECT text_id FROM ${table} WHERE 1 = 0`;

/** Gives a table made before texts were kept out of line its `text_id` column: its messages stay in line, all readable. */
export const addTextIdSql = (table: string): string => `ALTER TABLE ${table} ADD COLUMN text_id BIGINT`;

/**
 * A text column of the messages table `m`, wherever the text is kept. Out of line, a subquery finds it: the CASE
 * runs it for those rows alone, so a page of small messages reads as it did before any was kept out of line (a
 * join cost every row a lookup: `last` of 5000 small messages 9-11 → 14 ms).
 */
export const textColumn = (table: string, text: MessageText): string =>
  `CASE WHEN m.text_id IS NULL THEN m.${TEXT_COLUMNS[text]} ELSE (SELECT t.${TEXT_COLUMNS[text]} FROM ${textsTable(table)} t WHERE t.id = m.text_id) END AS ${TEXT_COLUMNS[text]}`;

/** Whether a message's texts go out of line. */
export const isOutOfLine = ({ raw, object }: StoredMessage): boolean =>
  // A string's length is at most its UTF-8 bytes: the count is needed only when the length alone does not decide.
  raw.length + object.length > OUT_OF_LINE_BYTES || Buffer.byteLength(raw) + Buffer.byteLength(object) > OUT_OF_LINE_BYTES;

/**
 * Rows one prune statement touches: each batch is its own short transaction (a row may hold megabytes), and other
 * work runs between batches, so a first prune of years stalls nobody (SQLite runs on this thread).
 */
export const PRUNE_BATCH = 200;

const KEY_LIST = "stream_id, partition, ts, sequence_no, publisher_id, msg_chain_id";

/** Deletes at most PRUNE_BATCH messages older than `before` of every stream but `kept`; the rows name their out-of-line texts. */
export const pruneMessagesSql = (table: string, before: number, kept: string): SqlStatement => ({
  text: `DELETE FROM ${table} WHERE (${KEY_LIST}) IN (SELECT ${KEY_LIST} FROM ${table} WHERE ts < $1 AND stream_id <> $2 LIMIT ${PRUNE_BATCH}) RETURNING text_id`,
  params: [before, kept],
});

/** Deletes at most PRUNE_BATCH messages of one stream partition older than `before`; the rows name their out-of-line texts. */
export const pruneStreamSql = (table: string, streamId: string, partition: number, before: number): SqlStatement => ({
  text: `DELETE FROM ${table} WHERE (${KEY_LIST}) IN (SELECT ${KEY_LIST} FROM ${table} WHERE stream_id = $1 AND partition = $2 AND ts < $3 LIMIT ${PRUNE_BATCH}) RETURNING text_id`,
  params: [streamId, partition, before],
});

/** Deletes out-of-line texts by id (those of deleted messages, or of a message that was stored already). */
export function deleteTextsSql(table: string, ids: readonly SqlValue[]): SqlStatement {
  return { text: `DELETE FROM ${textsTable(table)} WHERE id IN (${ids.map((_, i) => `$${i + 1}`).join(", ")})`, params: [...ids] };
}

/** The bytes a stream's messages hold (both texts, in line or not), every partition. */
export const streamBytesSql = (table: string, streamId: string): SqlStatement => ({
  text: `SELECT COALESCE(SUM(LENGTH(m.raw_json) + LENGTH(m.object_json) + COALESCE(LENGTH(t.raw_json) + LENGTH(t.object_json), 0)), 0) AS bytes
    FROM ${table} m LEFT JOIN ${textsTable(table)} t ON t.id = m.text_id WHERE m.stream_id = $1`,
  params: [streamId],
});

/**
 * Fails on a table of an earlier layout (a `payload` column instead of the two texts). Such data is not migrated:
 * nothing was released with it.
 */
export const layoutCheckSql = (table: string): string => `SELECT ${KEY_COLUMNS}, raw_json, object_json FROM ${table} WHERE 1 = 0`;

export const layoutError = (table: string): AppError =>
  new AppError("config_invalid", `table ${table} predates the raw_json/object_json layout; drop it (its data is not migrated)`);

/** The parameters `insertSql` expects for one message, in column order. */
const insertParams = ({ id, raw, object }: StoredMessage): SqlValue[] => [id.streamId, id.streamPartition, id.timestamp, id.sequenceNumber, id.publisherId, id.msgChainId, raw, object];

/** Inserts the messages that are new, their texts in line; returns the key columns of the rows written. */
export function insertSql(table: string, messages: readonly StoredMessage[]): SqlStatement {
  const tuples = messages.map((_, r) => `(${Array.from({ length: COLUMN_COUNT }, (_, c) => `$${r * COLUMN_COUNT + c + 1}`).join(", ")})`);
  return {
    text: `INSERT INTO ${table} (${KEY_COLUMNS}, ${TEXT_COLUMNS.raw}, ${TEXT_COLUMNS.object}) VALUES ${tuples.join(", ")} ON CONFLICT DO NOTHING RETURNING ${KEY_COLUMNS}`,
    params: messages.flatMap(insertParams),
  };
}

/** Stores one message's texts out of line; returns the id they were given. */
export const insertTextsSql = (table: string, { raw, object }: StoredMessage): SqlStatement => ({
  text: `INSERT INTO ${textsTable(table)} (raw_json, object_json) VALUES ($1, $2) RETURNING id`,
  params: [raw, object],
});

/** Inserts one message whose texts are out of line under `textId`, when it is new; returns its key columns if written. */
export const insertOutOfLineSql = (table: string, { id }: StoredMessage, textId: SqlValue): SqlStatement => ({
  text: `INSERT INTO ${table} (${KEY_COLUMNS}, ${TEXT_COLUMNS.raw}, ${TEXT_COLUMNS.object}, text_id) VALUES ($1, $2, $3, $4, $5, $6, '', '', $7)
    ON CONFLICT DO NOTHING RETURNING ${KEY_COLUMNS}`,
  params: [id.streamId, id.streamPartition, id.timestamp, id.sequenceNumber, id.publisherId, id.msgChainId, textId],
});

/** One page of a keyset scan. Filters are fixed by the request's shape, so each shape is one prepared text. */
export function readSql(table: string, request: ReadRequest): SqlStatement {
  const params: SqlValue[] = [];
  const p = (value: SqlValue): string => `$${params.push(value)}`;
  let where = `stream_id = ${p(request.streamId)} AND partition = ${p(request.partition)}`;
  if (request.after) {
    const { key, inclusive } = request.after;
    where += ` AND (${ascending}) ${inclusive ? ">=" : ">"} (${p(key.timestamp)}, ${p(key.sequenceNumber)}, ${p(key.publisherId)}, ${p(key.msgChainId)})`;
  }
  if (request.before) {
    const key = request.before;
    where += ` AND (${ascending}) < (${p(key.timestamp)}, ${p(key.sequenceNumber)}, ${p(key.publisherId)}, ${p(key.msgChainId)})`;
  }
  if (request.upTo) where += ` AND (ts, sequence_no) <= (${p(request.upTo.timestamp)}, ${p(request.upTo.sequenceNumber)})`;
  if (request.publisherId !== undefined) where += ` AND publisher_id = ${p(request.publisherId)}`;
  if (request.msgChainId !== undefined) where += ` AND msg_chain_id = ${p(request.msgChainId)}`;
  const order = request.newestFirst ? descending : ascending;
  const columns = [ascending, ...request.texts.map((text) => textColumn(table, text))].join(", ");
  return { text: `SELECT ${columns} FROM ${table} m WHERE ${where} ORDER BY ${order} LIMIT ${p(request.limit)}`, params };
}

export function chainHeadSql(table: string, streamId: string, partition: number, publisherId: string, msgChainId: string): SqlStatement {
  return {
    text: `SELECT ts, sequence_no FROM ${table} WHERE stream_id = $1 AND partition = $2 AND publisher_id = $3 AND msg_chain_id = $4 ORDER BY ts DESC, sequence_no DESC LIMIT 1`,
    params: [streamId, partition, publisherId, msgChainId],
  };
}

/** A row as the drivers return it: PostgreSQL hands BIGINT back as text, hence Number(). */
export interface KeyRow {
  ts: number | string;
  sequence_no: number | string;
  publisher_id: string;
  msg_chain_id: string;
}

export const keyOfRow = (row: KeyRow): MessageKey => ({
  timestamp: Number(row.ts),
  sequenceNumber: Number(row.sequence_no),
  publisherId: row.publisher_id,
  msgChainId: row.msg_chain_id,
});

/** A read row as the drivers return it; text columns only when requested. */
export interface ReadRow extends KeyRow {
  raw_json?: string;
  object_json?: string;
}

export const storedRowOf = (row: ReadRow): StoredRow => ({ ...keyOfRow(row), raw: row.raw_json, object: row.object_json });

export const idKey = (id: { streamId: string; streamPartition: number } & MessageKey): string =>
  JSON.stringify([id.streamId, id.streamPartition, id.timestamp, id.sequenceNumber, id.publisherId, id.msgChainId]);
