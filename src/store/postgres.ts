/** The server backend: PostgreSQL (or a PostgreSQL-compatible engine) through Bun's built-in SQL client. */
import { SQL } from "bun";
import type { SqlDriver, SqlRun } from "./driver.ts";

/** Advisory lock key taken while a store sets up its tables (any constant shared by every process). */
const SCHEMA_LOCK = 0x746c7370;

/**
 * Seconds a new connection to the database may take. Bun's default (30) left a proof's save waiting about a minute
 * when the database was gone, and its subscribers with it; a reachable server answers in milliseconds.
 */
const CONNECTION_TIMEOUT_S = 10;

export async function openPostgresDriver(url: string): Promise<SqlDriver> {
  const sql = new SQL(url, { connectionTimeout: CONNECTION_TIMEOUT_S });
  const runOn = (client: SQL): SqlRun => ({ text, params }) => client.unsafe(text, params);
  try {
    await sql.unsafe("SELECT 1");
  } catch (error) {
    await sql.close();
    throw error;
  }
  return {
    backend: "postgres",
    keyedTableSuffix: "",
    run: runOn(sql),
    transaction: (work) => sql.begin((tx) => work(runOn(tx))),
    setUp: (statements) =>
      sql.begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`);
        for (const text of statements) await tx.unsafe(text);
      }),
    async listen(channel, onNotify) {
      const subscription = await sql.listen(channel, onNotify);
      return () => subscription.unlisten();
    },
    close: () => sql.close(),
  };
}
