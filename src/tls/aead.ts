/**
 * AEAD sealing and opening for the accepted suites. AES-GCM runs in node:crypto; ChaCha20-Poly1305 (RFC 8439),
 * which Bun's node:crypto lacks, in @noble/ciphers. Opening checks the 16-byte tag before any plaintext is returned.
 */
import { createCipheriv, createDecipheriv } from "node:crypto";
import { chacha20poly1305 } from "@noble/ciphers/chacha.js";
import type { AeadName } from "./suites.ts";

export const TAG_LENGTH = 16;

/** The plaintext of `sealed` (ciphertext then tag), or null when the tag does not authenticate it. */
export function openAead(aead: AeadName, key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array | null {
  if (sealed.length < TAG_LENGTH) return null;
  if (aead === "chacha20-poly1305") {
    try {
      return chacha20poly1305(key, nonce, aad).decrypt(sealed);
    } catch {
      return null;
    }
  }
  const cut = sealed.length - TAG_LENGTH;
  const decipher = createDecipheriv(aead, key, nonce, { authTagLength: TAG_LENGTH });
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(cut));
  const head = decipher.update(sealed.subarray(0, cut));
  try {
    const tail = decipher.final();
    return tail.length === 0 ? new Uint8Array(head) : new Uint8Array(Buffer.concat([head, tail]));
  } catch {
    return null;
  }
}

/** `plaintext` encrypted, then its tag. */
export function sealAead(aead: AeadName, key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  if (aead === "chacha20-poly1305") return chacha20poly1305(key, nonce, aad).encrypt(plaintext);
  const cipher = createCipheriv(aead, key, nonce, { authTagLength: TAG_LENGTH });
  cipher.setAAD(aad);
  return new Uint8Array(Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]));
}
