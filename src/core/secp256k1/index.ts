/**
 * ECDSA over secp256k1 (ecdsa.ts): libsecp256k1 here; the browser bundles resolve this import to the @noble/curves
 * adapter instead (src/core/build-plugins.ts, `browserAdapters`).
 */
export { ecdsa } from "./libsecp256k1.ts";
export type { Secp256k1Ecdsa } from "./ecdsa.ts";
