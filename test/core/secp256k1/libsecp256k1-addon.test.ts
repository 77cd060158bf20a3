/**
 * Which prebuilt addon a server loads (src/core/secp256k1/libsecp256k1-addon.ts): the platform's builds in order, the
 * first that this system's loader accepts, none when it refuses them all (then libsecp256k1.ts takes the wasm build).
 * The adapter's answers are held to the others' in ecdsa.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { loadLibrary, prebuiltAddons } from "../../../src/core/secp256k1/libsecp256k1-addon.ts";

const refused = () => {
  throw new Error("this system's loader refuses the build");
};

describe("libsecp256k1's prebuilt addon", () => {
  test("Linux on x64 has two builds (glibc, then musl), macOS on arm64 one, other platforms none", () => {
    expect(prebuiltAddons("linux", "x64")).toHaveLength(2);
    expect(prebuiltAddons("darwin", "arm64")).toHaveLength(1);
    for (const [platform, arch] of [["linux", "arm64"], ["darwin", "x64"], ["win32", "x64"]] as const) expect(prebuiltAddons(platform, arch)).toEqual([]);
  });

  test.if(process.platform === "linux" && process.arch === "x64")("on glibc Linux: the glibc build loads and signs; the musl build alone is refused, so none loads", () => {
    const [glibc, musl] = prebuiltAddons("linux", "x64");
    const library = loadLibrary([refused, glibc!]);
    expect(library?.ecdsaSign(new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)).signature).toHaveLength(64);
    expect(loadLibrary([musl!])).toBeUndefined();
    expect(loadLibrary(prebuiltAddons("darwin", "arm64"))).toBeUndefined();
  });

  test("no build, or only builds the system refuses: none", () => {
    expect(loadLibrary([])).toBeUndefined();
    expect(loadLibrary([refused, refused])).toBeUndefined();
  });
});
