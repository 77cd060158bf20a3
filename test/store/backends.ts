/**
 * The backends every shared store test runs against. PostgreSQL comes from PROVER_TEST_PG_URL; each test run uses
 * its own table names (pid + random) and drops them afterwards. Without a reachable PostgreSQL its tests are
 * skipped with the reason printed, except in CI (CI=true), where that is a failure.
 */
import { SQL } from "bun";
import { rmSync } from "node:fs";
import { openStore, type MessageStore, type Store } from "../../src/store/index.ts";
import { tempDir as sharedTempDir } from "../../testkit/env.ts";

export const PG_URL = process.env.PROVER_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

async function postgresProblem(): Promise<string | undefined> {
  const sql = new SQL(PG_URL, { connectionTimeout: 3, max: 1 });
  try {
    await sql`SELECT 1`;
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${PG_URL} unreachable: ${(error as Error).message}`;
  } finally {
    await sql.close();
  }
}

export const postgresSkipReason = await postgresProblem();
if (postgresSkipReason) {
  if (process.env.CI === "true") throw new Error(`${postgresSkipReason} (CI=true: PostgreSQL tests must run)`);
  console.warn(`SKIPPING PostgreSQL store tests: ${postgresSkipReason}`);
}

const runId = `t${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
let tables = 0;

export interface OpenedStore {
  /** The opened store; reopening replaces it. */
  handle: Store;
  store: MessageStore;
  dataDir: string;
  /** Passing these to openStore opens the same data again. */
  options: { url?: string; dataDir: string; table: string };
  cleanup(): Promise<void>;
}

export interface Backend {
  name: "sqlite" | "postgres";
  skipReason: string | undefined;
  open(): Promise<OpenedStore>;
}

export const tempDir = (): string => sharedTempDir("store");

async function open(url: string | undefined): Promise<OpenedStore> {
  const dataDir = tempDir();
  const options = { url, dataDir, table: `${runId}_${tables++}` };
  const handle = await openStore(options);
  const opened: OpenedStore = {
    handle,
    store: handle.messages,
    dataDir,
    options,
    async cleanup() {
      await opened.handle.close().catch(() => undefined);
      if (url) await dropTable(options.table);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return opened;
}

/** Closes the store and opens the same data again. */
export async function reopen(opened: OpenedStore): Promise<void> {
  await opened.handle.close();
  opened.handle = await openStore(opened.options);
  opened.store = opened.handle.messages;
}

/** Drops a PostgreSQL messages table made by a test, and the request-id and instance tables beside it. */
export async function dropTable(table: string): Promise<void> {
  const sql = new SQL(PG_URL, { max: 1 });
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}, ${table}_requests, ${table}_requests_keys, ${table}_instances`);
    // The settle notification of a store shared by several provers (src/store/cluster.ts).
    await sql.unsafe(`DROP FUNCTION IF EXISTS ${table}_requests_notify()`);
  } finally {
    await sql.close();
  }
}

export const backends: Backend[] = [
  { name: "sqlite", skipReason: undefined, open: () => open(undefined) },
  { name: "postgres", skipReason: postgresSkipReason, open: () => open(PG_URL) },
];
