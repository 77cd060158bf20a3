/** What every storage backend provides. Both backends run the SQL of `sql.ts`; only the drivers differ. */
import type { MessageId, MessageRef } from "./message.ts";

/** Sort key of a message within one stream partition: messages are ordered by these four, ascending. */
export interface MessageKey extends MessageRef {
  publisherId: string;
  msgChainId: string;
}

/** The stored texts of a message: `raw` is its RawMessage as JSON.stringify prints it, `object` its object form JSON. */
export type MessageText = "raw" | "object";

export interface StoredMessage extends Record<MessageText, string> {
  id: MessageId;
}

/** A read row carries the texts its request asked for. */
export interface StoredRow extends MessageKey, Partial<Record<MessageText, string>> {}

/** One page of a keyset scan, ascending. */
export interface ReadRequest {
  streamId: string;
  partition: number;
  /** Start after (or at, when inclusive) this key. */
  after?: { key: MessageKey; inclusive: boolean };
  /** Stop after this (timestamp, sequenceNumber), inclusive. */
  upTo?: MessageRef;
  publisherId?: string;
  msgChainId?: string;
  /** Newest first (only without `after`): the newest `limit` rows in one index walk. */
  newestFirst?: boolean;
  limit: number;
  /** Which stored texts to return; none: keys only. */
  texts: readonly MessageText[];
}

export interface MessageStore {
  readonly backend: "sqlite" | "postgres";
  /** Stores all messages in one durable transaction; per message, true when new, false for an existing id. */
  insert(messages: readonly StoredMessage[]): Promise<boolean[]>;
  read(request: ReadRequest): Promise<StoredRow[]>;
  /** Key of the n-th newest message (n ≥ 1) of the partition, undefined when it holds fewer. */
  nthNewestKey(streamId: string, partition: number, n: number): Promise<MessageKey | undefined>;
  /** Newest (timestamp, sequenceNumber) of one publisher's message chain. */
  chainHead(streamId: string, partition: number, publisherId: string, msgChainId: string): Promise<MessageRef | undefined>;
  close(): Promise<void>;
}
