/**
 * What the shared store needs from a database: run one statement, run several in one transaction, close.
 * Statements are the SQL of `sql.ts` with $1… placeholders; each backend file only adapts its client to this.
 */
export type SqlValue = string | number | null;

export interface SqlStatement {
  text: string;
  params: SqlValue[];
}

/** Runs one statement; rows come back as the client returns them (PostgreSQL BIGINT as text). */
export type SqlRun = <Row>(statement: SqlStatement) => Promise<Row[]>;

export interface SqlDriver {
  readonly backend: "sqlite" | "postgres";
  /** Appended to CREATE TABLE of tables keyed by their primary key ("WITHOUT ROWID" on SQLite). */
  readonly keyedTableSuffix: string;
  /** The column definition of an integer primary key `id` the database assigns on insert. */
  readonly generatedIdColumn: string;
  run: SqlRun;
  /** Runs `work` in one durable transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (run: SqlRun) => Promise<T>): Promise<T>;
  /**
   * Runs schema statements in one transaction, one process at a time: stores opening together on one
   * database (several provers starting at once) would otherwise race on CREATE TABLE IF NOT EXISTS.
   */
  setUp(statements: readonly string[]): Promise<void>;
  /**
   * PostgreSQL only: calls `onNotify` with each payload NOTIFYed on `channel` (one dedicated connection,
   * re-subscribed after a reconnect). Resolves once listening, with the function that stops it.
   */
  listen?(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
