import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../../src/core/errors.ts";
import { addressOfSecretKey } from "../../src/core/eth-signature.ts";
import { loadNodeKey, NODE_KEY_FILE } from "../../src/store/node-key.ts";
import { tempDir } from "./backends.ts";

const dirs: string[] = [];
const newDir = () => {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("node key", () => {
  test("is created once with mode 0600 and the same address comes back", () => {
    const dir = join(newDir(), "nested", "data");
    const key = loadNodeKey(dir);
    expect(key.address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(key.address).toBe(addressOfSecretKey(key.secretKey));
    const path = join(dir, NODE_KEY_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8").trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(loadNodeKey(dir).address).toBe(key.address);
  });

  test("different folders get different keys", () => {
    expect(loadNodeKey(newDir()).address).not.toBe(loadNodeKey(newDir()).address);
  });

  test("a damaged key file is a config error, not a silently new key", () => {
    const dir = newDir();
    writeFileSync(join(dir, NODE_KEY_FILE), "zz\n");
    expect(() => loadNodeKey(dir)).toThrow(AppError);
    writeFileSync(join(dir, NODE_KEY_FILE), `${"0".repeat(64)}\n`);
    expect(() => loadNodeKey(dir)).toThrow(/invalid secp256k1 key/);
  });
});
