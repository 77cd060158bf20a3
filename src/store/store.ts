/** What the message store offers; `sql-store.ts` implements it once over any SqlDriver. */
import type { SqlDriver } from "./driver.ts";
import type { MessageRef, MessageText, StoredMessage } from "./message.ts";

/** Sort key of a message within one stream partition: messages are ordered by these four, ascending. */
export interface MessageKey extends MessageRef {
  publisherId: string;
  msgChainId: string;
}

/** A read row carries the texts its request asked for. */
export interface StoredRow extends MessageKey, Partial<Record<MessageText, string>> {}

/** One page of a keyset scan, ascending (or newest first). */
export interface ReadRequest {
  streamId: string;
  partition: number;
  /** Start after (or at, when inclusive) this key. */
  after?: { key: MessageKey; inclusive: boolean };
  /** Only keys before this one (exclusive): the next page of a newest-first walk. */
  before?: MessageKey;
  /** Stop after this (timestamp, sequenceNumber), inclusive. */
  upTo?: MessageRef;
  publisherId?: string;
  msgChainId?: string;
  /** Newest first: the newest `limit` rows in one index walk. */
  newestFirst?: boolean;
  limit: number;
  /** Which stored texts to return; none: keys only. */
  texts: readonly MessageText[];
}

export interface MessageStore {
  readonly backend: SqlDriver["backend"];
  /**
   * Stores all messages in one durable transaction; per message, true when new, false for an existing id. A
   * message marked in `mustBeNew` (one this node signed) whose id exists already is another's: then nothing is
   * stored and it throws.
   */
  insert(messages: readonly StoredMessage[], mustBeNew?: readonly boolean[]): Promise<boolean[]>;
  read(request: ReadRequest): Promise<StoredRow[]>;
  /** Key of the n-th newest message (n ≥ 1) of the partition, undefined when it holds fewer. */
  nthNewestKey(streamId: string, partition: number, n: number): Promise<MessageKey | undefined>;
  /** Newest (timestamp, sequenceNumber) of one publisher's message chain. */
  chainHead(streamId: string, partition: number, publisherId: string, msgChainId: string): Promise<MessageRef | undefined>;
  /** The bytes a stream's messages hold, every partition (what a publish quota counts). */
  streamBytes(streamId: string): Promise<number>;
  /** Deletes the messages older than `before` (ms) of every stream but `kept`; returns how many. */
  pruneMessages(before: number, kept: string): Promise<number>;
}
