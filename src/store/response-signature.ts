/**
 * Signed answers (`verifyNetworkResponses=true`). The node signs a digest of exactly what it was asked and
 * what it returned:
 *
 *   responseDigest = keccak256(
 *     "tlsproof-store-response:v2\n" + requestId + "\n"
 *     + the query as JSON (see `queryTuple`): [streamId, partition, queryType, …its parameters after defaults] + "\n"
 *     + for each returned message, in order: its RawMessage as JSON.stringify prints it + "\n"
 *     + JSON.stringify([totalMessages, hasNext, nextTimestamp ?? null, nextSequenceNumber ?? null]))
 *   signature = EIP-191 personal-message signature of the 32 digest bytes by the node's key
 *
 * so messages cannot be changed, dropped, added or reordered, the pagination hidden, nor the answer to a
 * narrower or other query passed off as this one, without the check failing.
 */
import { bytesToHex } from "@noble/hashes/utils.js";
import { keccak256Stream } from "../core/keccak/index.ts";
import { recoverPersonalMessageSigner, signPersonalMessage, type Address } from "../core/eth-signature.ts";
import { rawFromObject, type MessageObject, type RawMessage } from "./message.ts";
import type { NodeKey } from "./node-key.ts";
import { parseStoreQuery, type StoreQuery } from "./query.ts";

export const RESPONSE_DIGEST_DOMAIN = "tlsproof-store-response:v2\n";

/** A query as the digest covers it: what selects the messages, not how they are formatted. */
export interface SignedQuery {
  streamId: string;
  partition: number;
  query: StoreQuery;
}

function queryTuple({ streamId, partition, query: q }: SignedQuery): unknown[] {
  const filters = q.type === "last" ? [] : [q.publisherId ?? null, q.msgChainId ?? null];
  switch (q.type) {
    case "last":
      return [streamId, partition, q.type, q.count];
    case "from":
      return [streamId, partition, q.type, q.from.timestamp, q.from.sequenceNumber, ...filters];
    case "range":
      return [streamId, partition, q.type, q.from.timestamp, q.from.sequenceNumber, q.to.timestamp, q.to.sequenceNumber, ...filters];
  }
}

export interface PageMetadata {
  hasNext: boolean;
  nextTimestamp?: number;
  nextSequenceNumber?: number;
  totalMessages: number;
}

export interface NetworkVerificationMetadata {
  participatingNodesAddress: Address[];
  requestId: string;
  responseDigest: string;
  signature: string;
}

export type ResponseMetadata = PageMetadata & Partial<NetworkVerificationMetadata>;

/** Accumulates the digest while messages stream out; `finish` signs it. */
export function createResponseDigest(requestId: string, signed: SignedQuery) {
  const hash = keccak256Stream().update(`${RESPONSE_DIGEST_DOMAIN}${requestId}\n${JSON.stringify(queryTuple(signed))}\n`);
  return {
    add(rawMessageJson: string): void {
      hash.update(`${rawMessageJson}\n`);
    },
    finish(page: PageMetadata): Uint8Array {
      return hash.update(JSON.stringify(paginationTuple(page))).digest();
    },
  };
}

const paginationTuple = (page: PageMetadata) => [page.totalMessages, page.hasNext, page.nextTimestamp ?? null, page.nextSequenceNumber ?? null];

export function signResponseDigest(digest: Uint8Array, requestId: string, nodeKey: NodeKey): NetworkVerificationMetadata {
  return {
    participatingNodesAddress: [nodeKey.address],
    requestId,
    responseDigest: `0x${bytesToHex(digest)}`,
    signature: signPersonalMessage(digest, nodeKey.secretKey),
  };
}

/** The request a client made, to check a signed answer against. */
export interface ExpectedStoreRequest {
  /** The `requestId` the client sent (a fresh UUID per request). */
  requestId: string;
  streamId: string;
  partition: number;
  queryType: string;
  /** The query parameters as sent; they are read with the node's own parser, so defaults match. */
  parameters: Record<string, string>;
}

/**
 * Whether an answer (raw arrays, or object-form messages) is exactly what `nodeAddress` signed for this
 * request. Object-form messages are turned back into RawMessages, which is exact for compact JSON content.
 * Throws AppError `invalid_query` when the expected parameters are themselves malformed.
 */
export function verifyStoreResponse(
  answer: { messages: readonly (RawMessage | MessageObject)[]; metadata: ResponseMetadata },
  nodeAddress: string,
  expected: ExpectedStoreRequest,
): boolean {
  const { metadata } = answer;
  const query = parseStoreQuery(expected.queryType, expected.parameters);
  if (metadata.requestId !== expected.requestId || !metadata.signature) return false;
  if (answer.messages.length !== metadata.totalMessages) return false;
  const digest = createResponseDigest(expected.requestId, { streamId: expected.streamId, partition: expected.partition, query });
  for (const message of answer.messages) digest.add(JSON.stringify(Array.isArray(message) ? message : rawFromObject(message)));
  const signer = recoverPersonalMessageSigner(digest.finish(metadata), metadata.signature);
  const node = nodeAddress.toLowerCase();
  return signer === node && (metadata.participatingNodesAddress ?? []).includes(node as Address);
}
