/** The message store: a database driver, the shared store over it, request-id records, and (in routes.ts) the HTTP routes. */
import * as v from "valibot";
import { parseOrThrow } from "../core/schema.ts";
import { type ClusterStore, openClusterStore } from "./cluster.ts";
import type { SqlDriver } from "./driver.ts";
import type { NodeKey } from "./node-key.ts";
import { openPostgresDriver } from "./postgres.ts";
import { SqlProofRecords, type ProofRecords } from "./proof-records.ts";
import { DEFAULT_TABLE } from "./sql.ts";
import { openSqliteDriver } from "./sqlite.ts";
import { SqlMessageStore } from "./sql-store.ts";
import { storeUrlSchema } from "./url.ts";
import type { MessageStore } from "./store.ts";

export type { MessageKey, MessageStore, ReadRequest, StoredRow } from "./store.ts";
export type { MessageId, MessageObject, MessageRef, RawMessage, StoredMessage } from "./message.ts";
export type { ProofRecords, RecordedOutcome, SaveResult } from "./proof-records.ts";
export type { ClusterStore } from "./cluster.ts";
export { loadNodeKey, type NodeKey } from "./node-key.ts";
export { DEFAULT_PROOF_STREAM, publishEntries, type PublishEntry, type PublishResult } from "./publish.ts";
export { verifyStoreResponse, type ExpectedStoreRequest, type ResponseMetadata } from "./response-signature.ts";
export { storeUrlSchema } from "./url.ts";


const storeEnv = v.object({ PROVER_STORE_URL: v.optional(storeUrlSchema) });

export interface Store {
  readonly messages: MessageStore;
  /**
   * Request-id records whose proofs are published to `proofStream`, signed by `nodeKey`; claims made by
   * instance `instanceId` (a prover sharing a PostgreSQL store with others) record it.
   */
  proofRecords(nodeKey: NodeKey, proofStream: string, instanceId?: string): Promise<ProofRecords>;
  /**
   * PostgreSQL: instance `instanceId`'s view of the provers sharing this store (open `proofRecords` first:
   * it creates the request-id table); undefined on SQLite (one prover).
   */
  cluster(instanceId: string): Promise<ClusterStore | undefined>;
  close(): Promise<void>;
}

/** `url` undefined or empty: the SQLite file in `dataDir`; `postgres://…` (or `postgresql://…`): PostgreSQL. */
export async function openStore(opts: { url?: string; dataDir: string; table?: string }): Promise<Store> {
  const { PROVER_STORE_URL: url } = parseOrThrow(storeEnv, { PROVER_STORE_URL: opts.url }, "config_invalid");
  const driver: SqlDriver = url ? await openPostgresDriver(url) : openSqliteDriver(opts.dataDir);
  try {
    const messages = await SqlMessageStore.open(driver, opts.table ?? DEFAULT_TABLE);
    return {
      messages,
      proofRecords: (nodeKey, proofStream, instanceId) => SqlProofRecords.open(driver, messages, nodeKey, proofStream, instanceId),
      cluster: async (instanceId) => (driver.backend === "postgres" ? openClusterStore(driver, messages.table, instanceId) : undefined),
      close: () => driver.close(),
    };
  } catch (error) {
    await driver.close();
    throw error;
  }
}
