/** The message store, written once over any SqlDriver (SQLite, PostgreSQL), running the SQL of `sql.ts`. */
import type { SqlDriver, SqlRun, SqlStatement } from "./driver.ts";
import type { MessageRef, StoredMessage } from "./message.ts";
import {
  chainHeadSql,
  checkTableName,
  PRUNE_BATCH,
  pruneMessagesSql,
  streamBytesSql,
  idKey,
  insertSql,
  keyOfRow,
  layoutCheckSql,
  layoutError,
  readSql,
  schemaStatements,
  storedRowOf,
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

/** Runs a statement touching at most PRUNE_BATCH rows until it touches fewer, other work between; returns the rows touched. */
export async function inBatches(driver: SqlDriver, statement: SqlStatement): Promise<number> {
  let total = 0;
  for (;;) {
    const touched = (await driver.run(statement)).length;
    total += touched;
    if (touched < PRUNE_BATCH) return total;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export class SqlMessageStore implements MessageStore {
  private constructor(
    private readonly driver: SqlDriver,
    readonly table: string,
  ) {}

  get backend(): SqlDriver["backend"] {
    return this.driver.backend;
  }

  /** Creates the table and its index when missing; refuses a table of an earlier layout. */
  static async open(driver: SqlDriver, table: string): Promise<SqlMessageStore> {
    checkTableName(table);
    await driver.setUp(schemaStatements(table, driver.keyedTableSuffix));
    try {
      await driver.run({ text: layoutCheckSql(table), params: [] });
    } catch {
      throw layoutError(table);
    }
    return new SqlMessageStore(driver, table);
  }

  insert(messages: readonly StoredMessage[], mustBeNew?: readonly boolean[]): Promise<boolean[]> {
    return this.driver.transaction((run) => this.insertWith(run, messages, mustBeNew));
  }

  /** `insert` inside a transaction the caller holds (so other rows can commit with the messages). */
  async insertWith(run: SqlRun, messages: readonly StoredMessage[], mustBeNew: readonly boolean[] = []): Promise<boolean[]> {
    const written = new Set<string>();
    for (let start = 0; start < messages.length; start += INSERT_CHUNK) {
      const rows = await run<KeyRow & { stream_id: string; partition: number }>(insertSql(this.table, messages.slice(start, start + INSERT_CHUNK)));
      for (const row of rows) written.add(idKey({ streamId: row.stream_id, streamPartition: Number(row.partition), ...keyOfRow(row) }));
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
    return inBatches(this.driver, pruneMessagesSql(this.table, before, kept));
  }

  async chainHead(streamId: string, partition: number, publisherId: string, msgChainId: string): Promise<MessageRef | undefined> {
    const [row] = await this.driver.run<KeyRow>(chainHeadSql(this.table, streamId, partition, publisherId, msgChainId));
    return row && { timestamp: Number(row.ts), sequenceNumber: Number(row.sequence_no) };
  }
}
