/** The server backend: PostgreSQL (or a PostgreSQL-compatible engine) through Bun's built-in SQL client. */
import { SQL } from "bun";
import type { SqlDriver, SqlRun } from "./driver.ts";

export async function openPostgresDriver(url: string): Promise<SqlDriver> {
  const sql = new SQL(url);
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
    close: () => sql.close(),
  };
}
