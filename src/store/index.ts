/** The message store: storage backends, the node key, publishing, and (in routes.ts) the HTTP routes. */
import { AppError } from "../errors.ts";
import { openPostgresStore } from "./postgres.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { MessageStore } from "./store.ts";

export type { MessageKey, MessageStore, ReadRequest, StoredMessage, StoredRow } from "./store.ts";
export type { MessageId, MessageObject, MessageRef, RawMessage } from "./message.ts";
export { loadNodeKey, type NodeKey } from "./node-key.ts";
export { DEFAULT_PROOF_STREAM, publishContent, publishEntries, type PublishEntry, type PublishResult } from "./publish.ts";
export { verifyStoreResponse, type ResponseMetadata } from "./response-signature.ts";

/** `url` undefined: the SQLite file in `dataDir`; `postgres://…` (or `postgresql://…`): PostgreSQL. */
export async function openStore(opts: { url?: string; dataDir: string; table?: string }): Promise<MessageStore> {
  if (opts.url === undefined || opts.url === "") return openSqliteStore(opts.dataDir, opts.table);
  if (/^postgres(ql)?:\/\//.test(opts.url)) return openPostgresStore(opts.url, opts.table);
  throw new AppError("config_invalid", "PROVER_STORE_URL must be a postgres:// URL");
}
