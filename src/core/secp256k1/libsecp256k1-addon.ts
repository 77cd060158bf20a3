/**
 * The libsecp256k1 adapter (ecdsa.ts) through the `secp256k1` package's prebuilt N-API addon: native code, four to
 * six times the wasm build's speed (BENCHMARKS.md). Only the prebuilt addons are loaded, each by a path the bundler
 * sees, so that the binary embeds them; a platform with none of them, or one whose loader refuses them, gets
 * undefined here and the wasm build (libsecp256k1.ts picks).
 */
import { recoveryIdOf, type Secp256k1Ecdsa, undefinedOnThrow } from "./ecdsa.ts";

/** The package's wrapper (lib/index.js) over its addon: input checks throw, as tiny-secp256k1's do. */
export interface AddonLibrary {
  ecdsaSign(digest: Uint8Array, secretKey: Uint8Array): { signature: Uint8Array; recid: number };
  ecdsaVerify(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean;
  ecdsaRecover(signature: Uint8Array, recovery: number, digest: Uint8Array, compressed: boolean): Uint8Array;
}

type AddonLoader = () => unknown;

/** The prebuilt addons by platform and processor, most likely first (Linux: the same processor, two C libraries). */
const PREBUILT_ADDONS: Readonly<Record<string, readonly AddonLoader[]>> = {
  "linux-x64": [() => require("secp256k1/prebuilds/linux-x64/secp256k1.glibc.node"), () => require("secp256k1/prebuilds/linux-x64/secp256k1.musl.node")],
  "darwin-arm64": [() => require("secp256k1/prebuilds/darwin-arm64/secp256k1.node")],
};

export const prebuiltAddons = (platform: string, arch: string): readonly AddonLoader[] => PREBUILT_ADDONS[`${platform}-${arch}`] ?? [];

/** The library over the first addon that loads, or undefined when none does. */
export function loadLibrary(loaders: readonly AddonLoader[]): AddonLibrary | undefined {
  for (const load of loaders) {
    try {
      const addon = load() as { Secp256k1: new () => unknown };
      return (require("secp256k1/lib/index.js") as (addon: unknown) => AddonLibrary)(new addon.Secp256k1());
    } catch {
      // Another C library's build, or a loader that refuses addons: the next, else the wasm build.
    }
  }
  return undefined;
}

function adapterOf(library: AddonLibrary): Secp256k1Ecdsa {
  return {
    sign: (digest, secretKey) => library.ecdsaSign(digest, secretKey).signature,
    // libsecp256k1's verify refuses a high-s signature: it never normalizes one first.
    verify: (signature, digest, publicKey) => undefinedOnThrow(() => library.ecdsaVerify(signature, digest, publicKey)) ?? false,
    signRecoverable(digest, secretKey) {
      const { signature, recid } = library.ecdsaSign(digest, secretKey);
      return { signature, recovery: recoveryIdOf(recid) };
    },
    recover: (signature, recovery, digest) => undefinedOnThrow(() => library.ecdsaRecover(signature, recovery, digest, false)),
  };
}

const library = loadLibrary(prebuiltAddons(process.platform, process.arch));

/** The addon's adapter, or undefined where no prebuilt addon loads. */
export const ecdsa: Secp256k1Ecdsa | undefined = library && adapterOf(library);
