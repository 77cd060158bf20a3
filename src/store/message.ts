/**
 * Streamr messages, protocol version 32: the RawMessage array, its signing payload, and the object form.
 * A message is stored as two texts: its RawMessage serialized with JSON.stringify (what raw answers return
 * verbatim and what response digests cover) and its object form, so reads never re-parse either.
 */
import * as v from "valibot";
import { recoverPersonalMessageSigner, signPersonalMessage, type Address } from "../core/eth-signature.ts";

export const PROTOCOL_VERSION = 32;
export const MESSAGE_TYPE_MESSAGE = 27;
export const CONTENT_TYPE_JSON = 0;
export const ENCRYPTION_NONE = 0;
export const SIGNATURE_TYPE_ETH = 2;

export interface MessageRef {
  timestamp: number;
  sequenceNumber: number;
}

export interface MessageId extends MessageRef {
  streamId: string;
  streamPartition: number;
  publisherId: string;
  msgChainId: string;
}

export type RawMessage = [
  version: 32,
  id: [streamId: string, streamPartition: number, timestamp: number, sequenceNumber: number, publisherId: string, msgChainId: string],
  prevMsgRef: [timestamp: number, sequenceNumber: number] | null,
  messageType: number,
  contentType: number,
  encryptionType: number,
  groupKeyId: string | null,
  serializedContent: string,
  newGroupKey: string | null,
  signatureType: number,
  signature: string,
];

/** Sequence numbers stay far below MAX_SAFE_INTEGER, so a chain's next number is always exact. */
export const MAX_SEQUENCE_NUMBER = 2 ** 31 - 1;
/** Partitions are 32-bit integers in both databases. */
export const MAX_PARTITION = 2 ** 31 - 1;

export const nonNegativeInt = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
export const sequenceNumberSchema = v.pipe(nonNegativeInt, v.maxValue(MAX_SEQUENCE_NUMBER, `must be at most ${MAX_SEQUENCE_NUMBER}`));

/** Shape of a RawMessage as received from a client; signature and JSON content are checked separately. */
export const rawMessageSchema = v.tuple([
  v.literal(PROTOCOL_VERSION),
  v.tuple([
    v.pipe(v.string(), v.minLength(1)),
    v.pipe(nonNegativeInt, v.maxValue(MAX_PARTITION)),
    nonNegativeInt,
    sequenceNumberSchema,
    // Publisher ids are lower-case addresses: filters compare them as exact strings.
    v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/, "publisherId must be a lower-case 0x address")),
    v.pipe(v.string(), v.minLength(1)),
  ]),
  v.nullable(v.tuple([nonNegativeInt, sequenceNumberSchema])),
  v.picklist([27, 28, 29]),
  nonNegativeInt,
  v.picklist([0, 1, 2]),
  v.nullable(v.string()),
  v.string(),
  v.nullable(v.string()),
  v.literal(SIGNATURE_TYPE_ETH),
  v.string(),
]);

export const messageIdOf = (raw: RawMessage): MessageId => {
  const [streamId, streamPartition, timestamp, sequenceNumber, publisherId, msgChainId] = raw[1];
  return { streamId, streamPartition, timestamp, sequenceNumber, publisherId, msgChainId };
};

/** The string Streamr v32 signs: id fields, previous reference, content and new group key, concatenated. */
export function signingPayload(raw: RawMessage): string {
  const [streamId, partition, timestamp, sequenceNumber, publisherId, msgChainId] = raw[1];
  const prev = raw[2] ? `${raw[2][0]}${raw[2][1]}` : "";
  return `${streamId}${partition}${timestamp}${sequenceNumber}${publisherId}${msgChainId}${prev}${raw[7]}${raw[8] ?? ""}`;
}

/** A plain, unencrypted JSON message signed by `secretKey`, whose address must be `id.publisherId`. */
export function createSignedMessage(id: MessageId, prevMsgRef: MessageRef | null, serializedContent: string, secretKey: Uint8Array): RawMessage {
  const raw: RawMessage = [
    PROTOCOL_VERSION,
    [id.streamId, id.streamPartition, id.timestamp, id.sequenceNumber, id.publisherId, id.msgChainId],
    prevMsgRef ? [prevMsgRef.timestamp, prevMsgRef.sequenceNumber] : null,
    MESSAGE_TYPE_MESSAGE,
    CONTENT_TYPE_JSON,
    ENCRYPTION_NONE,
    null,
    serializedContent,
    null,
    SIGNATURE_TYPE_ETH,
    "",
  ];
  raw[10] = signPersonalMessage(signingPayload(raw), secretKey);
  return raw;
}

export function isSignatureValid(raw: RawMessage): boolean {
  return recoverPersonalMessageSigner(signingPayload(raw), raw[10]) === (raw[1][4] as Address);
}

const hasJsonContent = (raw: RawMessage): boolean => raw[4] === CONTENT_TYPE_JSON && raw[5] === ENCRYPTION_NONE;

/** Unencrypted JSON content must parse, or the object form could not be produced later. */
export function isContentReadable(raw: RawMessage): boolean {
  if (!hasJsonContent(raw)) return true;
  try {
    JSON.parse(raw[7]);
    return true;
  } catch {
    return false;
  }
}

/**
 * The object form of a stored message as JSON text:
 * `{"metadata":{"id":{…},"prevMsgRef":{timestamp,sequenceNumber}|null,"messageType","contentType","encryptionType",
 * "groupKeyId","newGroupKey","signature"},"content":…}`. Unencrypted JSON content is spliced in as stored
 * (it was checked to parse on the way in); other content stays a string.
 */
export function objectFormJson(raw: RawMessage): string {
  const [streamId, partition, timestamp, sequenceNumber, publisherId, msgChainId] = raw[1];
  const text = JSON.stringify;
  const id = `{"streamId":${text(streamId)},"streamPartition":${partition},"timestamp":${timestamp},"sequenceNumber":${sequenceNumber},"publisherId":${text(publisherId)},"msgChainId":${text(msgChainId)}}`;
  const prev = raw[2] ? `{"timestamp":${raw[2][0]},"sequenceNumber":${raw[2][1]}}` : "null";
  const content = hasJsonContent(raw) ? raw[7] : text(raw[7]);
  return `{"metadata":{"id":${id},"prevMsgRef":${prev},"messageType":${raw[3]},"contentType":${raw[4]},"encryptionType":${raw[5]},"groupKeyId":${text(raw[6])},"newGroupKey":${text(raw[8])},"signature":${text(raw[10])}},"content":${content}}`;
}

/** The stored texts of a message: `raw` is its RawMessage as JSON.stringify prints it, `object` its object form JSON. */
export type MessageText = "raw" | "object";

export interface StoredMessage extends Record<MessageText, string> {
  id: MessageId;
}

/** Both stored texts of a message, computed once when it is stored. */
export const storedMessageOf = (raw: RawMessage): StoredMessage => ({ id: messageIdOf(raw), raw: JSON.stringify(raw), object: objectFormJson(raw) });

export interface MessageObject {
  metadata: {
    id: MessageId;
    prevMsgRef: MessageRef | null;
    messageType: number;
    contentType: number;
    encryptionType: number;
    groupKeyId: string | null;
    newGroupKey: string | null;
    signature: string;
  };
  content: unknown;
}

/**
 * Back from the object form to the RawMessage. Exact when the stored content was compact JSON
 * (JSON.stringify output), which holds for everything this node signs.
 */
export function rawFromObject({ metadata: m, content }: MessageObject): RawMessage {
  const unencryptedJson = m.contentType === CONTENT_TYPE_JSON && m.encryptionType === ENCRYPTION_NONE;
  return [
    PROTOCOL_VERSION,
    [m.id.streamId, m.id.streamPartition, m.id.timestamp, m.id.sequenceNumber, m.id.publisherId, m.id.msgChainId],
    m.prevMsgRef ? [m.prevMsgRef.timestamp, m.prevMsgRef.sequenceNumber] : null,
    m.messageType,
    m.contentType,
    m.encryptionType,
    m.groupKeyId,
    unencryptedJson ? JSON.stringify(content) : String(content),
    m.newGroupKey,
    SIGNATURE_TYPE_ETH,
    m.signature,
  ];
}
