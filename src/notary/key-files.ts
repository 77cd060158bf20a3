import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../core/errors.ts";
import { makePrivateDir } from "../base/private-files.ts";
import type { SignatureAlgorithm } from "../proof/format.ts";
import { encodePrivateKeyPem, generateKey, type NotaryKey, readPrivateKeyFile } from "../proof/keys.ts";

export const PRIVATE_KEY_FILE = "notary.key";
export const PUBLIC_KEY_FILE = "notary.pub";

function writeNew(path: string, text: string, mode: number, force: boolean): void {
  if (force) rmSync(path, { force: true });
  try {
    // "wx": never follow or truncate a file that appeared meanwhile; the mode applies on creation only.
    writeFileSync(path, text, { flag: "wx", mode });
  } catch (error) {
    throw new AppError("file_unreadable", `cannot write ${path}: ${(error as Error).message}`);
  }
}

/** Writes notary.key (PKCS#8, 0600) and notary.pub (SPKI) into `dir`, which is created if missing. */
export function writeKeyPair(dir: string, algorithm: SignatureAlgorithm, force: boolean): NotaryKey {
  const privatePath = join(dir, PRIVATE_KEY_FILE);
  const publicPath = join(dir, PUBLIC_KEY_FILE);
  const existing = [privatePath, publicPath].filter((path) => existsSync(path));
  if (existing.length > 0 && !force) {
    throw new AppError("usage", `refusing to overwrite ${existing.join(" and ")} (use --force to replace)`);
  }
  try {
    makePrivateDir(dir);
  } catch (error) {
    throw new AppError("file_unreadable", `cannot create ${dir}: ${(error as Error).message}`);
  }
  const key = generateKey(algorithm);
  writeNew(privatePath, encodePrivateKeyPem(key), 0o600, force);
  writeNew(publicPath, key.publicKeyPem, 0o644, force);
  return key;
}

/** The key kept in a data folder, made on first use; notary.pub is rewritten so it always matches. */
export function loadOrCreateKey(dir: string): NotaryKey {
  const privatePath = join(dir, PRIVATE_KEY_FILE);
  if (!existsSync(privatePath)) return writeKeyPair(dir, "secp256k1", true);
  const key = readPrivateKeyFile(privatePath);
  writeFileSync(join(dir, PUBLIC_KEY_FILE), key.publicKeyPem, { mode: 0o644 });
  return key;
}
