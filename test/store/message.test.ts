import { describe, expect, test } from "bun:test";
import { hexToBytes } from "@noble/hashes/utils.js";
import { addressOfSecretKey } from "../../src/core/eth-signature.ts";
import {
  createSignedMessage,
  isContentReadable,
  isSignatureValid,
  objectFormJson,
  rawFromObject,
  signingPayload,
  type MessageId,
  type MessageObject,
  type RawMessage,
} from "../../src/store/message.ts";

const KEY = hexToBytes("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318");
const id: MessageId = { streamId: "0xabc/stream", streamPartition: 3, timestamp: 1700000000000, sequenceNumber: 2, publisherId: addressOfSecretKey(KEY), msgChainId: "chain" };

describe("Streamr v32 messages", () => {
  test("the signing payload concatenates id, previous reference, content and new group key", () => {
    const raw = createSignedMessage(id, { timestamp: 1699999999999, sequenceNumber: 7 }, '{"a":1}', KEY);
    expect(signingPayload(raw)).toBe(`0xabc/stream317000000000002${id.publisherId}chain16999999999997{"a":1}`);
    const first = createSignedMessage(id, null, '{"a":1}', KEY);
    expect(signingPayload(first)).toBe(`0xabc/stream317000000000002${id.publisherId}chain{"a":1}`);
  });

  test("a signed message verifies; any changed field does not", () => {
    const raw = createSignedMessage(id, null, '{"a":1}', KEY);
    expect(raw.slice(3, 10)).toEqual([27, 0, 0, null, '{"a":1}', null, 2]);
    expect(isSignatureValid(raw)).toBe(true);
    const tampered: RawMessage[] = [
      [raw[0], [...raw[1]], raw[2], raw[3], raw[4], raw[5], raw[6], '{"a":2}', raw[8], raw[9], raw[10]],
      [raw[0], [raw[1][0], raw[1][1], raw[1][2] + 1, raw[1][3], raw[1][4], raw[1][5]], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10]],
      [raw[0], [...raw[1]], [1, 0], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10]],
      [raw[0], [raw[1][0], raw[1][1], raw[1][2], raw[1][3], "0x0000000000000000000000000000000000000001", raw[1][5]], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10]],
    ];
    for (const t of tampered) expect(isSignatureValid(t)).toBe(false);
  });

  test("object form: metadata and parsed content, and back to the identical RawMessage", () => {
    const raw = createSignedMessage(id, { timestamp: 5, sequenceNumber: 1 }, JSON.stringify({ x: [1, "é", null] }), KEY);
    const object = JSON.parse(objectFormJson(raw)) as MessageObject;
    expect(object).toEqual({
      metadata: {
        id,
        prevMsgRef: { timestamp: 5, sequenceNumber: 1 },
        messageType: 27,
        contentType: 0,
        encryptionType: 0,
        groupKeyId: null,
        newGroupKey: null,
        signature: raw[10],
      },
      content: { x: [1, "é", null] },
    });
    expect(JSON.stringify(rawFromObject(object))).toBe(JSON.stringify(raw));
  });

  test("encrypted content stays a string in the object form", () => {
    const raw: RawMessage = [32, [...createSignedMessage(id, null, "00", KEY)[1]], null, 27, 0, 2, "gk1", "abcdef00", null, 2, "0x"];
    const object = JSON.parse(objectFormJson(raw)) as MessageObject;
    expect(object.content).toBe("abcdef00");
    expect(object.metadata.groupKeyId).toBe("gk1");
    expect(rawFromObject(object)).toEqual(raw);
  });

  test("unencrypted JSON content must parse; encrypted content need not", () => {
    const raw = createSignedMessage(id, null, "{not json", KEY);
    expect(isContentReadable(raw)).toBe(false);
    expect(isContentReadable([raw[0], raw[1], raw[2], raw[3], raw[4], 2, "k", raw[7], raw[8], raw[9], raw[10]])).toBe(true);
  });
});
