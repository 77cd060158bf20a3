import { expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { parseOrThrow } from "../../src/core/schema.ts";
import * as v from "valibot";
import { revealedKeysSchema } from "../../src/tls/verify-session.ts";

/** The notary's reading of revealed keys: bad shapes are refused with a message that never repeats a key. */

const secret = "ab".repeat(32);

test.each([
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret.toUpperCase(), serverApplicationTrafficSecret: secret }, /serverHandshakeTrafficSecret: expected 4 to 64 bytes of lower-case hex/],
  [{ version: "TLS1.2", serverWriteKey: `${secret}0`, serverWriteIv: "00".repeat(4) }, /serverWriteKey: expected 4 to 64 bytes of lower-case hex/],
  // A TLS 1.2 request is revealed by its master secret only, never by client write keys (verify-tls12-master.ts).
  [{ version: "TLS1.2", serverWriteKey: secret, serverWriteIv: "00".repeat(4), clientWriteKey: secret, clientWriteIv: "00".repeat(4) }, /unknown key "clientWriteKey"/],
  [{ version: "TLS1.2", masterSecret: "zz".repeat(48) }, /masterSecret: expected 4 to 64 bytes of lower-case hex/],
  [{ version: "TLS1.4", serverWriteKey: secret, serverWriteIv: secret }, /expected version "TLS1\.2" or "TLS1\.3"/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret }, /missing key "serverApplicationTrafficSecret"/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: [{ records: 0, key: secret, iv: secret }] }, /clientEpochs\[0\]\.records: expected at least 1 record/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: [{ records: 2, secret }] }, /unknown key "clientEpochs\[0\]\.secret"/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: Array.from({ length: 34 }, () => ({ records: 2 })) }, /clientEpochs: expected at most 33 epochs/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: [] }, /clientEpochs: expected at least 1 epoch/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: 5, serverApplicationTrafficSecret: secret }, /serverHandshakeTrafficSecret: expected a hex string/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: "all" }, /clientEpochs: expected an array/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: [{ records: "2" }] }, /clientEpochs\[0\]\.records: expected a number/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: [{ records: 1.5 }] }, /clientEpochs\[0\]\.records: expected an integer/],
  [{ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, clientEpochs: [{ records: 2 ** 20 + 1 }] }, /clientEpochs\[0\]\.records: expected at most 1048576 records/],
])("%j is refused", (input, message) => {
  let caught: unknown;
  try {
    parseOrThrow(revealedKeysSchema, input, "invalid_body", { where: "keys" });
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect((caught as AppError).message).toMatch(message);
  expect((caught as AppError).message.toLowerCase()).not.toContain(secret);
});

test("the bounds: 4 to 64 bytes of hex, 1 to 2^20 records an epoch, 1 to 33 epochs", () => {
  const keys = (over: Record<string, unknown>) => ({ version: "TLS1.3", serverHandshakeTrafficSecret: secret, serverApplicationTrafficSecret: secret, ...over });
  const accepted = (input: unknown) => v.safeParse(revealedKeysSchema, input).success;
  expect(accepted(keys({ serverHandshakeTrafficSecret: "ab".repeat(4) }))).toBe(true);
  expect(accepted(keys({ serverHandshakeTrafficSecret: "ab".repeat(3) }))).toBe(false);
  expect(accepted(keys({ serverHandshakeTrafficSecret: "ab".repeat(64) }))).toBe(true);
  expect(accepted(keys({ serverHandshakeTrafficSecret: "ab".repeat(65) }))).toBe(false);
  expect(accepted(keys({ serverHandshakeTrafficSecret: ` ${secret}` }))).toBe(false);
  expect(accepted(keys({ clientEpochs: [{ records: 2 ** 20, key: secret, iv: secret }] }))).toBe(true);
  expect(accepted(keys({ clientEpochs: [{ records: 2 ** 20 + 1, key: secret, iv: secret }] }))).toBe(false);
  expect(accepted(keys({ clientEpochs: [{ records: 1.5 }] }))).toBe(false);
  expect(accepted(keys({ clientEpochs: [{ records: 1 }] }))).toBe(true);
  expect(accepted(keys({ clientEpochs: Array.from({ length: 33 }, () => ({ records: 2 })) }))).toBe(true);
  expect(accepted({ version: "TLS1.2", masterSecret: "ab".repeat(48) })).toBe(true);
  expect(accepted({ version: "TLS1.2", serverWriteKey: secret, serverWriteIv: "00".repeat(4) })).toBe(true);
});
