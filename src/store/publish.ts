/**
 * Putting messages in: content the node signs itself, or complete RawMessages signed by anyone.
 * Node-signed messages extend the node's chain per (stream, partition, msgChainId): (timestamp, sequenceNumber)
 * only ever grows, and prevMsgRef names the chain's previous message. Within a process, publishes to one store
 * run one at a time; processes sharing a node key (one data folder) must write different chains: the prover's
 * proofs go into a chain of each process's own (proof-records.ts).
 * Caller-given timestamps must lie within MAX_CLOCK_SKEW_MS of now, so nobody can push a chain into the
 * future, and sequence numbers stay at most MAX_SEQUENCE_NUMBER.
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { describeIssue } from "../core/schema.ts";
import {
  createSignedMessage,
  isContentReadable,
  isSignatureValid,
  messageIdOf,
  nonNegativeInt,
  rawMessageSchema,
  sequenceNumberSchema,
  storedMessageOf,
  type MessageId,
  type MessageRef,
  type RawMessage,
  type StoredMessage,
} from "./message.ts";
import type { NodeKey } from "./node-key.ts";
import type { MessageStore } from "./store.ts";

export const DEFAULT_PROOF_STREAM = "proofs";
/** The node's chain when an entry names none; fixed, so the chain continues across restarts. */
export const NODE_MSG_CHAIN_ID = "main";
/** Each entry costs one signature or one signature check (about a millisecond of CPU): bounded per request. */
export const MAX_ENTRIES_PER_PUBLISH = 100;
/** How far a caller-given timestamp may lie from the node's clock, either way. */
export const MAX_CLOCK_SKEW_MS = 10 * 60 * 1000;

export const contentEntrySchema = v.strictObject({
  content: v.unknown(),
  timestamp: v.optional(nonNegativeInt),
  sequenceNumber: v.optional(sequenceNumberSchema),
  msgChainId: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(255))),
});

export type ContentEntry = v.InferOutput<typeof contentEntrySchema>;
export type PublishEntry = ContentEntry | RawMessage;

/** One entry of a publish: a content entry the node signs, or a signed v32 RawMessage. */
export const publishEntrySchema = v.pipe(v.union([contentEntrySchema, rawMessageSchema]), v.description("a content entry, or a v32 RawMessage"));

/** A body is one entry or an array of entries; a RawMessage is itself an array that starts with 32. */
const isSingleRawMessage = (body: unknown): boolean => Array.isArray(body) && body[0] === 32;

/** The entries of a publish body, or why it is refused (a whole message, as the store words its errors). */
function readEntries(body: unknown): PublishEntry[] | string {
  const items = Array.isArray(body) && !isSingleRawMessage(body) ? body : [body];
  if (items.length === 0) return "no entries to publish";
  if (items.length > MAX_ENTRIES_PER_PUBLISH) return `at most ${MAX_ENTRIES_PER_PUBLISH} entries per request`;
  const entries: PublishEntry[] = [];
  for (const [index, item] of items.entries()) {
    const read = v.safeParse(Array.isArray(item) ? rawMessageSchema : contentEntrySchema, item);
    if (!read.success) return describeIssue(read.issues[0], { where: `entry ${index}` });
    const entry = read.output;
    const timestamp = Array.isArray(entry) ? entry[1][2] : entry.timestamp;
    if (timestamp !== undefined && Math.abs(timestamp - Date.now()) > MAX_CLOCK_SKEW_MS) {
      return `entry ${index}: timestamp ${timestamp} is more than ${MAX_CLOCK_SKEW_MS / 60_000} minutes from the node's clock`;
    }
    entries.push(entry);
  }
  return entries;
}

/**
 * The body of a publish: one entry or an array of at most MAX_ENTRIES_PER_PUBLISH, each within the node's clock
 * skew. Which schema an entry is read with depends on its form, which JSON Schema cannot follow:
 * `publishBodyShape` is what the document shows.
 */
export const publishBodySchema = v.pipe(
  v.unknown(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const read = readEntries(dataset.value);
    if (typeof read !== "string") return read;
    addIssue({ message: read });
    return NEVER;
  }),
);
export const publishBodyShape = v.union([publishEntrySchema, v.pipe(v.array(publishEntrySchema), v.minLength(1), v.maxLength(MAX_ENTRIES_PER_PUBLISH))]);

export interface PublishResult {
  id: MessageId;
  /** True when a message with this id was already stored; it is kept as it was. */
  duplicate: boolean;
}

const locks = new WeakMap<MessageStore, Promise<unknown>>();

function serialized<T>(store: MessageStore, task: () => Promise<T>): Promise<T> {
  const run = (locks.get(store) ?? Promise.resolve()).then(task, task);
  locks.set(store, run.catch(() => undefined));
  return run;
}

/** Stores messages in one transaction; per message, true when new (see MessageStore.insert for `mustBeNew`). */
export type WriteMessages = (messages: readonly StoredMessage[], mustBeNew: readonly boolean[]) => Promise<boolean[]>;

/**
 * Signs, checks and stores the entries in one transaction; answers one result per entry, in order.
 * `write` replaces `store.insert` when more must commit with the messages (a proof's request record).
 */
export function publishEntries(
  store: MessageStore,
  key: NodeKey,
  streamId: string,
  partition: number,
  entries: readonly PublishEntry[],
  write: WriteMessages = (messages, mustBeNew) => store.insert(messages, mustBeNew),
): Promise<PublishResult[]> {
  return serialized(store, async () => {
    const heads = new Map<string, MessageRef | undefined>();
    const results: (PublishResult | StoredMessage)[] = [];
    for (const [index, entry] of entries.entries()) {
      results.push(Array.isArray(entry) ? checkRawMessage(entry, streamId, partition, index) : await signEntry(store, key, streamId, partition, entry, heads, index));
    }
    const toStore = results.filter((r): r is StoredMessage => "raw" in r);
    // What this node signed just now must be new: an existing id would be another process's message.
    const signedHere = entries.filter((_, i) => "raw" in results[i]!).map((entry) => !Array.isArray(entry));
    const written = toStore.length > 0 ? await write(toStore, signedHere) : [];
    let next = 0;
    return results.map((r) => ("raw" in r ? { id: r.id, duplicate: !written[next++] } : r));
  });
}

function checkRawMessage(raw: RawMessage, streamId: string, partition: number, index: number): StoredMessage {
  const id = messageIdOf(raw);
  if (id.streamId !== streamId || id.streamPartition !== partition) {
    throw new AppError("invalid_body", `entry ${index}: message is for ${id.streamId}/${id.streamPartition}, not ${streamId}/${partition}`);
  }
  if (!isContentReadable(raw)) throw new AppError("invalid_body", `entry ${index}: content is not valid JSON`);
  if (!isSignatureValid(raw)) throw new AppError("invalid_body", `entry ${index}: signature does not verify for publisher ${id.publisherId}`);
  return storedMessageOf(raw);
}

const after = (a: MessageRef, b: MessageRef): boolean => a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.sequenceNumber > b.sequenceNumber);

async function signEntry(
  store: MessageStore,
  key: NodeKey,
  streamId: string,
  partition: number,
  entry: ContentEntry,
  heads: Map<string, MessageRef | undefined>,
  index: number,
): Promise<StoredMessage | PublishResult> {
  const msgChainId = entry.msgChainId ?? NODE_MSG_CHAIN_ID;
  const head = heads.has(msgChainId) ? heads.get(msgChainId) : await store.chainHead(streamId, partition, key.address, msgChainId);
  const timestamp = entry.timestamp ?? Math.max(Date.now(), head?.timestamp ?? 0);
  const sequenceNumber = entry.sequenceNumber ?? (head?.timestamp === timestamp ? head.sequenceNumber + 1 : 0);
  const id: MessageId = { streamId, streamPartition: partition, timestamp, sequenceNumber, publisherId: key.address, msgChainId };
  if (head && !after(id, head)) {
    // Not after the chain head: only a replay of a stored message (same id) is accepted, and answered as duplicate.
    if (entry.sequenceNumber !== undefined && (await exists(store, id))) return { id, duplicate: true };
    throw new AppError("invalid_body", `entry ${index}: (${timestamp}, ${sequenceNumber}) is not after the last message (${head.timestamp}, ${head.sequenceNumber}) of chain ${msgChainId}`);
  }
  const serializedContent = serializeContent(entry.content, index);
  heads.set(msgChainId, id);
  return storedMessageOf(createSignedMessage(id, head ?? null, serializedContent, key.secretKey));
}

function serializeContent(content: unknown, index: number): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(content);
  } catch {
    // Cycles and BigInts land here; they can only come from in-process callers.
  }
  if (typeof text !== "string") throw new AppError("invalid_body", `entry ${index}: content is not JSON`);
  return text;
}

async function exists(store: MessageStore, id: MessageId): Promise<boolean> {
  const [row] = await store.read({
    streamId: id.streamId,
    partition: id.streamPartition,
    after: { key: id, inclusive: true },
    publisherId: id.publisherId,
    msgChainId: id.msgChainId,
    limit: 1,
    texts: [],
  });
  return row !== undefined && row.timestamp === id.timestamp && row.sequenceNumber === id.sequenceNumber;
}
