/**
 * Where the crypto adapters need the bundler: the binary carries libsecp256k1's wasm as a file of its own
 * (tiny-secp256k1 reads it from beside its module, which a binary does not have), and the browser bundles take the
 * @noble adapters of secp256k1 (secp256k1/ecdsa.ts: a browser cannot load that wasm as tiny-secp256k1 asks) and of
 * keccak (keccak/port.ts: the viewer's CSP allows no WebAssembly, nor may a client's page).
 */
import { join } from "node:path";

/** The binary: tiny-secp256k1's wasm loader reads the wasm the binary embeds. */
export const libsecp256k1InBinary: Bun.BunPlugin = {
  name: "libsecp256k1-in-binary",
  setup(build) {
    build.onLoad({ filter: /tiny-secp256k1\/lib\/wasm_loader\.js$/ }, () => ({
      loader: "js",
      contents: [
        'import wasmPath from "./secp256k1.wasm" with { type: "file" };',
        'import { readFileSync } from "node:fs";',
        'import * as rand from "./rand.js";',
        'import * as validate_error from "./validate_error.js";',
        'const imports = { "./rand.js": rand, "./validate_error.js": validate_error };',
        "export default new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmPath)), imports).exports;",
      ].join("\n"),
    }));
  },
};

/** The browser bundles (the client package, the viewer page): the @noble adapters. */
export const browserAdapters: Bun.BunPlugin = {
  name: "crypto-in-browsers",
  setup(build) {
    build.onResolve({ filter: /\/libsecp256k1\.ts$/ }, () => ({ path: join(import.meta.dir, "secp256k1", "noble.ts") }));
    build.onResolve({ filter: /\/hash-wasm\.ts$/ }, () => ({ path: join(import.meta.dir, "keccak", "noble.ts") }));
  },
};
