import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { TAG_LENGTH, openAead, sealAead } from "../../src/tls/aead.ts";
import { MAX_PLAINTEXT, RecordOpener, RecordSealer, plaintextLength12 } from "../../src/tls/record-protection.ts";
import { recordAt } from "../../src/tls/records.ts";
import { cipherSuiteOf } from "../../src/tls/suites.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * Record protection on records sealed here: TLS 1.3 records open in sequence only, a record that does not
 * authenticate leaves the sequence where it was, and the AEADs refuse any changed byte.
 */

const keysOf = (suite: ReturnType<typeof cipherSuiteOf>) => ({ key: new Uint8Array(randomBytes(suite.keyLength)), iv: new Uint8Array(randomBytes(12)) });

test.each([0x1301, 0x1302, 0x1303])("TLS 1.3 suite id %d: sealed records open in order, under their sequence numbers only", (id) => {
  const suite = cipherSuiteOf(id, "TLS1.3");
  const keys = keysOf(suite);
  const sealer = new RecordSealer(suite, keys);
  const records = [sealer.seal(23, Uint8Array.of(1, 2)), sealer.seal(22, Uint8Array.of(3)), sealer.seal(21, Uint8Array.of(1, 0))].map((bytes) => recordAt(bytes, 0, "server")!);
  expect(records[0]!.header).toEqual(Uint8Array.of(23, 3, 3, 0, 2 + 1 + TAG_LENGTH));
  const opener = new RecordOpener(suite, keys, "the key", "server");
  // Out of order: the second record is not record 0; trying it leaves the sequence at 0.
  expect(opener.tryOpen(records[1]!)).toBeNull();
  expect(opener.open(records[0]!)).toEqual({ type: 23, content: Uint8Array.of(1, 2) });
  expectRefusal(() => opener.open(records[2]!), "transcript_invalid", /^the server's protected record 1 does not authenticate under the key: the key is wrong or the relayed bytes were changed$/);
  expect(opener.open(records[1]!)).toEqual({ type: 22, content: Uint8Array.of(3) });
  expect(opener.open(records[2]!)).toEqual({ type: 21, content: Uint8Array.of(1, 0) });
});

test("TLS 1.3 padding after the content type is dropped; a record of padding only has no type", () => {
  const suite = cipherSuiteOf(0x1301, "TLS1.3");
  const keys = keysOf(suite);
  const padded = new RecordSealer(suite, keys).seal(0, concatBytes(Uint8Array.of(7, 7, 23), new Uint8Array(5)));
  expect(new RecordOpener(suite, keys, "k", "server").open(recordAt(padded, 0, "server")!)).toEqual({ type: 23, content: Uint8Array.of(7, 7) });
  const empty = new RecordSealer(suite, keys).seal(0, new Uint8Array(4));
  expectRefusal(() => new RecordOpener(suite, keys, "k", "client").open(recordAt(empty, 0, "client")!), "transcript_invalid", /^the client's protected record 0 has no content type$/);
});

test("at most 2^14 bytes of content in a sealed record", () => {
  const suite = cipherSuiteOf(0x1301, "TLS1.3");
  const sealer = new RecordSealer(suite, keysOf(suite));
  expect(sealer.seal(23, new Uint8Array(MAX_PLAINTEXT)).length).toBe(5 + MAX_PLAINTEXT + 1 + TAG_LENGTH);
  expectRefusal(() => sealer.seal(23, new Uint8Array(MAX_PLAINTEXT + 1)), "internal", /^a TLS record holds at most 16384 bytes$/);
});

test("TLS 1.2: a fragment too short for its explicit nonce and tag does not authenticate; plaintext lengths by suite", () => {
  const gcm = cipherSuiteOf(0xc02b, "TLS1.2");
  const chacha = cipherSuiteOf(0xcca9, "TLS1.2");
  const opener = new RecordOpener(gcm, { key: new Uint8Array(16), iv: new Uint8Array(4) }, "k", "server");
  const short = Uint8Array.of(23, 3, 3, 0, 23, ...new Uint8Array(23));
  expect(opener.tryOpen(recordAt(short, 0, "server")!)).toBeNull();
  expect(plaintextLength12(gcm, 100)).toBe(100 - 16 - 8);
  expect(plaintextLength12(chacha, 100)).toBe(100 - 16);
});

test.each(["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"] as const)("%s opens what it sealed, and nothing changed or cut", (aead) => {
  const key = new Uint8Array(randomBytes(aead === "aes-128-gcm" ? 16 : 32));
  const nonce = new Uint8Array(randomBytes(12));
  const aad = Uint8Array.of(1, 2, 3);
  const plaintext = new Uint8Array(randomBytes(40));
  const sealed = sealAead(aead, key, nonce, aad, plaintext);
  expect(sealed.length).toBe(40 + TAG_LENGTH);
  expect(openAead(aead, key, nonce, aad, sealed)).toEqual(plaintext);
  expect(openAead(aead, key, nonce, aad, sealAead(aead, key, nonce, aad, new Uint8Array(0)))).toEqual(new Uint8Array(0));
  const changed = sealed.slice();
  changed[3]! ^= 1;
  expect(openAead(aead, key, nonce, aad, changed)).toBeNull();
  expect(openAead(aead, key, nonce, Uint8Array.of(1, 2, 4), sealed)).toBeNull();
  expect(openAead(aead, key, nonce, aad, sealed.subarray(0, TAG_LENGTH - 1))).toBeNull();
  expect(openAead(aead, key, nonce, aad, sealed.subarray(0, TAG_LENGTH))).toBeNull();
});
