/**
 * Keccak-256 (port.ts): hash-wasm here; the browser bundles resolve that import to the @noble/hashes adapter instead
 * (src/core/build-plugins.ts, `browserAdapters`).
 */
import { keccak } from "./hash-wasm.ts";

export const keccak256 = keccak.hash;
export const keccak256Stream = keccak.stream;
export type { KeccakInput, KeccakStream } from "./port.ts";
