import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { sha256, sha256Adapters } from "../../src/core/sha256.ts";

test("SHA-256: Bun's hasher here, @noble/hashes in browsers, the same digests as node:crypto", () => {
  const native = sha256Adapters.native;
  expect(native).toBeDefined();
  expect(sha256).toBe(native!);
  const samples = [new Uint8Array(0), new TextEncoder().encode("abc"), ...[55, 56, 63, 64, 65, 1000, 65536].map((n) => crypto.getRandomValues(new Uint8Array(n)))];
  for (const data of samples) {
    const expected = new Uint8Array(createHash("sha256").update(data).digest());
    expect(native!(data)).toEqual(expected);
    expect(sha256Adapters.portable(data)).toEqual(expected);
  }
});
