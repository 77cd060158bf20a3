import { describe, expect, test } from "bun:test";
import { createECDH } from "node:crypto";
import { newKeyShare } from "../../../src/tls/client/key-shares.ts";
import { appErrorOf } from "../../../testkit/app-error.ts";

/** The refusal of an agreement, or undefined when it gave a secret. */
function refusal(agree: () => Uint8Array): string | undefined {
  const refused = appErrorOf(agree);
  if (refused) expect(refused.code).toBe("tls_untrusted");
  return refused?.message;
}

describe("our client's key shares take only the server's share in its exact wire form", () => {
  test("X25519: 32 bytes agree on one secret; a 33-byte share (which node:crypto would take) and a 31-byte one are refused", () => {
    const client = newKeyShare("x25519");
    const server = newKeyShare("x25519");
    expect(Buffer.from(client.agree(server.publicKey)).equals(Buffer.from(server.agree(client.publicKey)))).toBe(true);
    expect(refusal(() => client.agree(Uint8Array.of(...server.publicKey, 0)))).toBe("the server's x25519 key share is not a valid public value");
    expect(refusal(() => client.agree(server.publicKey.subarray(0, 31)))).toBe("the server's x25519 key share is not a valid public value");
  });

  test("P-256: an uncompressed point agrees; the same point compressed (which node:crypto would take) is refused, as TLS 1.3 says", () => {
    const client = newKeyShare("p256");
    const server = createECDH("prime256v1");
    const uncompressed = new Uint8Array(server.generateKeys());
    expect(Buffer.from(client.agree(uncompressed)).equals(server.computeSecret(client.publicKey))).toBe(true);
    const compressed = new Uint8Array(server.getPublicKey(undefined, "compressed"));
    expect(compressed).toHaveLength(33);
    expect(refusal(() => client.agree(compressed))).toBe("the server's p256 key share is not a valid public value");
  });
});
