/** The message store, written once over any SqlDriver (SQLite, PostgreSQL), running the SQL of `sql.ts`. */
import type { SqlDriver, SqlRun, SqlStatement } from "./driver.ts";
import type { MessageRef, StoredMessage } from "./message.ts";
import {
  addTextIdSql,
  chainHeadSql,
  checkTableName,
  deleteTextsSql,
  PRUNE_BATCH,
  pruneMessagesSql,
  streamBytesSql,
  idKey,
  insertOutOfLineSql,
  insertSql,
  insertTextsSql,
  isOutOfLine,
  keyOfRow,
  layoutCheckSql,
  layoutError,
  readSql,
  schemaStatements,
  storedRowOf,
  textIdCheckSql,
  type KeyRow,
  type ReadRow,
} from "./sql.ts";
import type { MessageKey, MessageStore, ReadRequest, StoredRow } from "./store.ts";

/** A message this node signed has the id of one already stored: two processes sharing the key wrote one chain. */
export class MessageIdTaken extends Error {
  constructor(id: string) {
    super(`message ${id} is already stored`);
  }
}

/** 1000 rows × 8 parameters stays below both PostgreSQL's (65535) and SQLite's (32766) parameter limits. */
const INSERT_CHUNK = 1000;
/** Keys per page while walking back from the newest message: an index-only keyset walk, never an OFFSET. */
const KEY_WALK_PAGE = 5000;

/**
 * Runs `batch` (touching at most PRUNE_BATCH rows, returning how many) until it touches fewer, other work between;
 * returns the rows touched.
 */
async function untilFewer(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const touched = await batch();
    total += touched;
    if (touched < PRUNE_BATCH) return total;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Runs a statement touching at most PRUNE_BATCH rows until it touches fewer, other work between; returns the rows touched. */
export const inBatches = (driver: SqlDriver, statement: SqlStatement): Promise<number> => untilFewer(async () => (await driver.run(statement)).length);

/**
 * Deletes messages in batches with `statement` (pruneMessagesSql, pruneStreamSql), each batch with the out-of-line
 * texts of its messages in one transaction; returns the messages deleted.
 */
export const pruneInBatches = (driver: SqlDriver, table: string, statement: SqlStatement): Promise<number> =>
  untilFewer(() =>
    driver.transaction(async (run) => {
      const rows = await run<{ text_id: number | string | null }>(statement);
      const textIds = rows.flatMap((row) => (row.text_id === null ? [] : [row.text_id]));
      if (textIds.length > 0) await run(deleteTextsSql(table, textIds));
      return rows.length;
    }),
  );

/** Whether a statement runs (a column it reads exists). */
async function succeeds(driver: SqlDriver, text: string): Promise<boolean> {
  try {
    await driver.run({ text, params: [] });
    return true;
  } catch {
    return false;
  }
}

/** The key columns an insert returns for each row it wrote. */
type WrittenRow = KeyRow & { stream_id: string; partition: number | string };

export class SqlMessageStore implements MessageStore {
  private constructor(
    private readonly driver: SqlDriver,
    readonly table: string,
  ) {}

  get backend(): SqlDriver["backend"] {
    return this.driver.backend;
  }

  /**
   * Creates the tables and indexes when missing; gives a table made before texts were kept out of line its
   * `text_id` column; refuses a table of an earlier layout.
   */
  static async open(driver: SqlDriver, table: string): Promise<SqlMessageStore> {
    checkTableName(table);
    await driver.setUp(schemaStatements(table, driver.keyedTableSuffix, driver.generatedIdColumn));
    try {
      await driver.run({ text: layoutCheckSql(table), params: [] });
    } catch {
      throw layoutError(table);
    }
    if (!(await succeeds(driver, textIdCheckSql(table)))) {
      // Several provers opening one database at once: another may have added it first.
      await driver.setUp([addTextIdSql(table)]).catch(async (error) => {
        if (!(await succeeds(driver, textIdCheckSql(table)))) throw error;
      });
    }
    return new SqlMessageStore(driver, table);
  }

  insert(messages: readonly StoredMessage[], mustBeNew?: readonly boolean[]): Promise<boolean[]> {
    return this.driver.transaction((run) => this.insertWith(run, messages, mustBeNew));
  }

  /** `insert` inside a transaction the caller holds (so other rows can commit with the messages). */
  async insertWith(run: SqlRun, messages: readonly StoredMessage[], mustBeNew: readonly boolean[] = []): Promise<boolean[]> {
    const written = new Set<string>();
    const noteWritten = (rows: WrittenRow[]) => {
      for (const row of rows) written.add(idKey({ streamId: row.stream_id, streamPartition: Number(row.partition), ...keyOfRow(row) }));
    };
    const inLine: StoredMessage[] = [];
    const outOfLine: StoredMessage[] = [];
    for (const message of messages) (isOutOfLine(message) ? outOfLine : inLine).push(message);
    for (let start = 0; start < inLine.length; start += INSERT_CHUNK) {
      noteWritten(await run<WrittenRow>(insertSql(this.table, inLine.slice(start, start + INSERT_CHUNK))));
    }
    for (const message of outOfLine) {
      const [texts] = await run<{ id: number | string }>(insertTextsSql(this.table, message));
      const rows = await run<WrittenRow>(insertOutOfLineSql(this.table, message, texts!.id));
      // Stored already: its texts are the first copy's.
      if (rows.length === 0) await run(deleteTextsSql(this.table, [texts!.id]));
      noteWritten(rows);
    }
    // A message repeated within one call is written once: only its first occurrence counts as new.
    const isNew = messages.map(({ id }) => written.delete(idKey(id)));
    const taken = isNew.findIndex((wrote, i) => mustBeNew[i] === true && !wrote);
    // Thrown inside the transaction, so that nothing of it is stored.
    if (taken >= 0) throw new MessageIdTaken(idKey(messages[taken]!.id));
    return isNew;
  }

  async read(request: ReadRequest): Promise<StoredRow[]> {
    return (await this.driver.run<ReadRow>(readSql(this.table, request))).map(storedRowOf);
  }

  async nthNewestKey(streamId: string, partition: number, n: number): Promise<MessageKey | undefined> {
    let remaining = n;
    let before: MessageKey | undefined;
    for (;;) {
      const limit = Math.min(KEY_WALK_PAGE, remaining);
      const keys = await this.read({ streamId, partition, before, newestFirst: true, limit, texts: [] });
      if (keys.length < limit) return undefined;
      remaining -= keys.length;
      before = keys.at(-1);
      if (remaining === 0) return before;
    }
  }

  async streamBytes(streamId: string): Promise<number> {
    const [row] = await this.driver.run<{ bytes: number | string }>(streamBytesSql(this.table, streamId));
    return Number(row?.bytes ?? 0);
  }

  pruneMessages(before: number, kept: string): Promise<number> {
    return pruneInBatches(this.driver, this.table, pruneMessagesSql(this.table, before, kept));
  }

  async chainHead(streamId: string, partition: number, publisherId: string, msgChainId: string): Promise<MessageRef | undefined> {
    const [row] = await this.driver.run<KeyRow>(chainHeadSql(this.table, streamId, partition, publisherId, msgChainId));
    return row && { timestamp: Number(row.ts), sequenceNumber: Number(row.sequence_no) };
  }
}
