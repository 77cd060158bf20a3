/** The @noble/hashes adapter (port.ts): for bundles that cannot compile WebAssembly (the browser's). */
import { keccak_256 } from "@noble/hashes/sha3.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";
import type { Keccak256, KeccakInput, KeccakStream } from "./port.ts";

const bytesOf = (part: KeccakInput): Uint8Array => (typeof part === "string" ? utf8ToBytes(part) : part);

export const keccak: Keccak256 = {
  hash(...parts) {
    const hasher = keccak_256.create();
    for (const part of parts) hasher.update(bytesOf(part));
    return hasher.digest();
  },
  stream() {
    const hasher = keccak_256.create();
    const stream: KeccakStream = {
      update(part) {
        hasher.update(bytesOf(part));
        return stream;
      },
      digest: () => hasher.digest(),
    };
    return stream;
  },
};
