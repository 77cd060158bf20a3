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

  test("this platform's builds: the first the loader accepts signs (after one refused); another platform's build is refused", () => {
    const addonPlatform = (process.platform === "linux" && process.arch === "x64") || (process.platform === "darwin" && process.arch === "arm64");
    const library = loadLibrary([refused, ...prebuiltAddons(process.platform, process.arch)]);
    expect(library !== undefined).toBe(addonPlatform);
    if (library) expect(library.ecdsaSign(new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)).signature).toHaveLength(64);
    const [platform, arch] = process.platform === "darwin" ? ["linux", "x64"] : ["darwin", "arm64"];
    expect(loadLibrary(prebuiltAddons(platform, arch))).toBeUndefined();
  });

  test("no build, or only builds the system refuses: none", () => {
    expect(loadLibrary([])).toBeUndefined();
    expect(loadLibrary([refused, refused])).toBeUndefined();
  });
});
