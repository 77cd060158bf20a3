/**
 * Signed answers (`verifyNetworkResponses=true`). The node signs a digest of exactly what it returned:
 *
 *   responseDigest = keccak256(
 *     "tlsproof-store-response:v1\n" + requestId + "\n"
 *     + for each returned message, in order: its RawMessage as JSON.stringify prints it + "\n"
 *     + JSON.stringify([totalMessages, hasNext, nextTimestamp ?? null, nextSequenceNumber ?? null]))
 *   signature = EIP-191 personal-message signature of the 32 digest bytes by the node's key
 *
 * so messages cannot be changed, dropped, added or reordered, nor the pagination hidden, without the check failing.
 */
import { keccak_256 } from "@noble/hashes/sha3.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { recoverPersonalMessageSigner, signPersonalMessage, type Address } from "./eth-signature.ts";
import { rawFromObject, type MessageObject, type RawMessage } from "./message.ts";
import type { NodeKey } from "./node-key.ts";

export const RESPONSE_DIGEST_DOMAIN = "tlsproof-store-response:v1\n";

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
export function createResponseDigest(requestId: string) {
  const hash = keccak_256.create().update(utf8ToBytes(`${RESPONSE_DIGEST_DOMAIN}${requestId}\n`));
  return {
    add(rawMessageJson: string): void {
      hash.update(utf8ToBytes(`${rawMessageJson}\n`));
    },
    finish(page: PageMetadata): Uint8Array {
      return hash.update(utf8ToBytes(JSON.stringify(paginationTuple(page)))).digest();
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

/**
 * Whether an answer (raw arrays, or object-form messages) is exactly what `nodeAddress` signed.
 * Object-form messages are turned back into RawMessages, which is exact for compact JSON content.
 */
export function verifyStoreResponse(
  answer: { messages: readonly (RawMessage | MessageObject)[]; metadata: ResponseMetadata },
  nodeAddress: string,
): boolean {
  const { metadata } = answer;
  if (!metadata.requestId || !metadata.signature) return false;
  if (answer.messages.length !== metadata.totalMessages) return false;
  const digest = createResponseDigest(metadata.requestId);
  for (const message of answer.messages) digest.add(JSON.stringify(Array.isArray(message) ? message : rawFromObject(message)));
  const signer = recoverPersonalMessageSigner(digest.finish(metadata), metadata.signature);
  const expected = nodeAddress.toLowerCase();
  return signer === expected && (metadata.participatingNodesAddress ?? []).includes(expected as Address);
}
