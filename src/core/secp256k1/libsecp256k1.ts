/** libsecp256k1 for code that runs in Bun: its prebuilt native addon where one loads, else its wasm build. */
import { ecdsa as addon } from "./libsecp256k1-addon.ts";
import type { Secp256k1Ecdsa } from "./ecdsa.ts";

/** Which build signs and checks here: said in the prover's and the notary's start-up line. */
export const LIBSECP256K1_BUILD: "addon" | "wasm" = addon ? "addon" : "wasm";

// Required only without the addon: tiny-secp256k1 compiles its wasm when loaded (some 50 ms of a command's start).
export const ecdsa: Secp256k1Ecdsa = addon ?? (require("./libsecp256k1-wasm.ts") as typeof import("./libsecp256k1-wasm.ts")).ecdsa;
