/** The hash-wasm adapter (port.ts): one WebAssembly instance per thread, made when the module loads. */
import { createKeccak } from "hash-wasm";
import type { Keccak256, KeccakStream } from "./port.ts";

const hasher = await createKeccak(256);

export const keccak: Keccak256 = {
  hash(...parts) {
    hasher.init();
    for (const part of parts) hasher.update(part);
    return hasher.digest("binary");
  },
  stream() {
    // The instance is shared: a stream saves its state after each part and loads it back for the next.
    let state = hasher.init().save();
    const stream: KeccakStream = {
      update(part) {
        state = hasher.load(state).update(part).save();
        return stream;
      },
      digest: () => hasher.load(state).digest("binary"),
    };
    return stream;
  },
};
