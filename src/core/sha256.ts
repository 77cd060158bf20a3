/**
 * SHA-256 where the verifier runs: Bun's native hasher (about ten times @noble/hashes on a megabyte, the digest a
 * proof's signature covers), and @noble/hashes in browsers (the viewer page, `tlsproof/client`), which have no
 * synchronous native SHA-256.
 */
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";

/** Bun's hasher, when this runs in Bun. */
const BunHasher = (globalThis as { Bun?: { CryptoHasher: typeof Bun.CryptoHasher } }).Bun?.CryptoHasher;

// A copy: the hasher answers with a Buffer, which may sit in a shared pool.
const nativeSha256 = (data: Uint8Array): Uint8Array => new Uint8Array(new BunHasher!("sha256").update(data).digest());

/** The two ways, for the test that holds them to the same digests. */
export const sha256Adapters = { native: BunHasher ? nativeSha256 : undefined, portable: nobleSha256 };

export const sha256: (data: Uint8Array) => Uint8Array = sha256Adapters.native ?? nobleSha256;
