/**
 * The client's ephemeral key shares (RFC 8446 §4.2.8, §7.4): X25519 (32-byte public values; a low-order one, whose
 * shared secret is all zeros, is refused) and P-256 (uncompressed points; the shared secret is the x coordinate; a point off the curve is
 * refused). On node:crypto, native in Bun and Node: @noble/curves computes the same in JavaScript at several
 * times the cost, which was most of the client's own time per connection.
 */
import { createECDH, createPublicKey, diffieHellman, generateKeyPairSync } from "node:crypto";
import { AppError } from "../../core/errors.ts";

export type KeyShareGroup = "x25519" | "p256";

export const GROUP_IDS: Readonly<Record<KeyShareGroup, number>> = { x25519: 0x001d, p256: 0x0017 };

export const groupOfId = (id: number): KeyShareGroup | undefined => (Object.keys(GROUP_IDS) as KeyShareGroup[]).find((group) => GROUP_IDS[group] === id);

export interface KeyShare {
  group: KeyShareGroup;
  publicKey: Uint8Array;
  /** The ECDHE shared secret with the server's public value. */
  agree(serverPublic: Uint8Array): Uint8Array;
}

const badShare = (group: KeyShareGroup): AppError => new AppError("tls_untrusted", `the server's ${group} key share is not a valid public value`);

/** The DER SubjectPublicKeyInfo prefix of an X25519 key (RFC 8410): the raw 32 bytes follow. */
const X25519_SPKI_PREFIX = Uint8Array.of(0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x03, 0x21, 0x00);

function x25519Share(): KeyShare {
  const { privateKey, publicKey } = generateKeyPairSync("x25519");
  return {
    group: "x25519",
    publicKey: new Uint8Array(publicKey.export({ format: "der", type: "spki" })).subarray(X25519_SPKI_PREFIX.length),
    agree(serverPublic) {
      if (serverPublic.length !== 32) throw badShare("x25519");
      try {
        const peer = createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, serverPublic]), format: "der", type: "spki" });
        // Refuses a low-order point, whose shared secret is all zeros (RFC 7748 §6.1; BoringSSL and OpenSSL both).
        return new Uint8Array(diffieHellman({ privateKey, publicKey: peer }));
      } catch {
        throw badShare("x25519");
      }
    },
  };
}

function p256Share(): KeyShare {
  const ecdh = createECDH("prime256v1");
  return {
    group: "p256",
    publicKey: new Uint8Array(ecdh.generateKeys()),
    agree(serverPublic) {
      if (serverPublic.length !== 65 || serverPublic[0] !== 4) throw badShare("p256");
      try {
        return new Uint8Array(ecdh.computeSecret(serverPublic));
      } catch {
        throw badShare("p256");
      }
    },
  };
}

export const newKeyShare = (group: KeyShareGroup): KeyShare => (group === "x25519" ? x25519Share() : p256Share());
