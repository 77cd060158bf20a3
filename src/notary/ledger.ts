/**
 * The notary's ledger of the request ids it signed: it signs one statement per request id, ever, so nobody can make
 * an honest notary equivocate (two different signed statements for one id, which a stake can be slashed for) by
 * replaying an id in a second session. Kept in SQLite beside the notary's key by default, or in PostgreSQL shared
 * by the replicas of one notary (the rows are keyed by the notary's key too, so notaries may share a database).
 * An ephemeral key (no key file) has a ledger in memory: both end with the process.
 */
import { dirname, basename } from "node:path";
import { AppError } from "../core/errors.ts";
import type { SqlDriver } from "../store/driver.ts";
import { openPostgresDriver } from "../store/postgres.ts";
import { openSqliteDriver } from "../store/sqlite.ts";
import type { LedgerPlace } from "./config.ts";

export interface AttestationLedger {
  /**
   * Records that this notary signs for `requestId` now; throws `already_attested` when it did before. Called once
   * every check passed, just before signing: an id is spent only on a statement that is made.
   */
  record(requestId: string): Promise<void>;
  close(): Promise<void>;
}

const SCHEMA = (suffix: string) =>
  `CREATE TABLE IF NOT EXISTS notary_attestations (notary TEXT NOT NULL, request_id TEXT NOT NULL, signed_at BIGINT NOT NULL, PRIMARY KEY (notary, request_id)) ${suffix}`;
const RECORD = "INSERT INTO notary_attestations (notary, request_id, signed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING request_id";

const repeated = (requestId: string) =>
  new AppError("already_attested", `this notary already signed a statement for request id ${requestId}: it signs one per request id, ever`);

function sqlLedger(driver: SqlDriver, notary: string): AttestationLedger {
  return {
    async record(requestId) {
      const rows = await driver.run<{ request_id: string }>({ text: RECORD, params: [notary, requestId, Date.now()] });
      if (rows.length === 0) throw repeated(requestId);
    },
    close: () => driver.close(),
  };
}

/** A ledger in this process's memory: for a key that lives in this process alone. */
export function memoryLedger(): AttestationLedger {
  const signed = new Set<string>();
  return {
    async record(requestId) {
      if (signed.has(requestId)) throw repeated(requestId);
      signed.add(requestId);
    },
    close: async () => {},
  };
}

/** Opens the ledger at `place` for the notary whose key has this fingerprint (`notary`). */
export async function openLedger(place: LedgerPlace, notary: string): Promise<AttestationLedger> {
  if (place.kind === "memory") return memoryLedger();
  let driver: SqlDriver;
  try {
    driver = place.kind === "sqlite" ? openSqliteDriver(dirname(place.path), basename(place.path)) : await openPostgresDriver(place.url);
    await driver.setUp([SCHEMA(driver.keyedTableSuffix)]);
  } catch (error) {
    const where = place.kind === "sqlite" ? place.path : "its PostgreSQL database";
    throw new AppError("storage_failed", `the notary's ledger cannot be opened at ${where}: ${(error as Error).message}`);
  }
  return sqlLedger(driver, notary);
}
