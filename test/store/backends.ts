/**
 * The backends every shared store test runs against. PostgreSQL is the run's (testkit/postgres.ts: the server
 * PROVER_TEST_PG_URL names, or a cluster the tests start themselves); each test run uses its own table names
 * (pid + random) and drops them afterwards.
 */
import { SQL } from "bun";
import { rmSync } from "node:fs";
import { openStore, type MessageStore, type Store } from "../../src/store/index.ts";
import { tempDir as sharedTempDir } from "../../testkit/env.ts";
import { testPostgresUrl } from "../../testkit/postgres.ts";

/** Connections in a store's pool here (`max`, a parameter of its URL, as PROVER_STORE_URL may carry it). */
const TEST_POOL = "2";

/**
 * The run's server, each store's pool made small: Bun opens every connection of a pool at its first query, and the
 * default pool of 10 cost each store a test opens about 100 ms and ten server processes (test/store: 12.5 → 8.5 s).
 */
export const PG_URL = withPool(await testPostgresUrl());

function withPool(serverUrl: string): string {
  const url = new URL(serverUrl);
  if (!url.searchParams.has("max")) url.searchParams.set("max", TEST_POOL);
  return url.href;
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

/** Drops a PostgreSQL messages table made by a test, and the texts, request-id and instance tables beside it. */
export async function dropTable(table: string): Promise<void> {
  const sql = new SQL(PG_URL, { max: 1 });
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}, ${table}_texts, ${table}_requests, ${table}_requests_keys, ${table}_instances`);
    // The settle notification of a store shared by several provers (src/store/cluster.ts).
    await sql.unsafe(`DROP FUNCTION IF EXISTS ${table}_requests_notify()`);
  } finally {
    await sql.close();
  }
}

export const backends: Backend[] = [
  { name: "sqlite", open: () => open(undefined) },
  { name: "postgres", open: () => open(PG_URL) },
];
