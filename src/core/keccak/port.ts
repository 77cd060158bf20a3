/**
 * Keccak-256, Ethereum's hash (not SHA3-256, which pads otherwise), the one port every keccak goes through (EVM
 * attestations and their claims, Ethereum signatures, the store's response digests): two adapters, hash-wasm's
 * WebAssembly build (hash-wasm.ts, servers and the binary; about five times faster than JavaScript on a megabyte,
 * where the notary's attestation, the prover's check of it and the store's message signature each hash a whole
 * answer) and @noble/hashes (noble.ts, the browser bundles, whose pages' CSP allows no WebAssembly). index.ts picks;
 * test/core/keccak/keccak.test.ts holds the two to the same digests.
 */

/** What can be hashed: bytes, or text as its UTF-8 bytes. */
export type KeccakInput = Uint8Array | string;

export interface KeccakStream {
  update(part: KeccakInput): KeccakStream;
  digest(): Uint8Array;
}

export interface Keccak256 {
  /** keccak256 of the parts one after another, without copying them into one buffer; a fresh array. */
  hash(...parts: readonly KeccakInput[]): Uint8Array;
  /** A keccak256 fed over time (a digest that grows while messages stream out), with its own state between parts. */
  stream(): KeccakStream;
}
