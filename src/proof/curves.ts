/**
 * The two named curves of notary keys, as @noble/curves implements them. Apart from keys.ts, whose types the
 * client package's declarations name: those must not need @noble/curves' types, which the package does not ship.
 */
import { p256 } from "@noble/curves/nist.js";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import type { SignatureAlgorithm } from "./format.ts";

const curves = { secp256k1, secp256r1: p256 } as const;
export const curveOf = (algorithm: SignatureAlgorithm) => curves[algorithm];
