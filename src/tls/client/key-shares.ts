/**
 * The client's ephemeral key shares (RFC 8446 §4.2.8, §7.4): X25519 (32-byte public values; an all-zero shared
 * secret is refused) and P-256 (uncompressed points; the shared secret is the x coordinate), on @noble/curves,
 * which refuses a point off the curve.
 */
import { x25519 } from "@noble/curves/ed25519.js";
import { p256 } from "@noble/curves/nist.js";
import { AppError } from "../../errors.ts";

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

export function newKeyShare(group: KeyShareGroup): KeyShare {
  if (group === "x25519") {
    const secret = x25519.utils.randomSecretKey();
    return {
      group,
      publicKey: x25519.getPublicKey(secret),
      agree(serverPublic) {
        if (serverPublic.length !== 32) throw badShare(group);
        const shared = x25519.getSharedSecret(secret, serverPublic);
        if (shared.every((byte) => byte === 0)) throw badShare(group);
        return shared;
      },
    };
  }
  const secret = p256.utils.randomSecretKey();
  return {
    group,
    publicKey: p256.getPublicKey(secret, false),
    agree(serverPublic) {
      if (serverPublic.length !== 65 || serverPublic[0] !== 4) throw badShare(group);
      try {
        return p256.getSharedSecret(secret, serverPublic, true).slice(1);
      } catch {
        throw badShare(group);
      }
    },
  };
}
