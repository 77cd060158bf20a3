/**
 * `cli notary keygen`: writes a notary key pair in openssl-compatible PEM: notary.key (PKCS#8,
 * mode 0600) and notary.pub (SPKI), the file `cli verify --notary-pub-key` pins.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineCommand } from "citty";
import { AppError } from "../errors.ts";
import type { SignatureAlgorithm } from "../proof/format.ts";
import { decodePublicKeyPem, encodePrivateKeyPem, generateKey, publicKeyFingerprint } from "../proof/keys.ts";

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

export default defineCommand({
  meta: { name: "keygen", description: "Generate the notary's signing key pair" },
  args: {
    out: { type: "string", required: true, description: "Folder to write notary.key and notary.pub into (created if missing)" },
    algorithm: { type: "enum", options: ["secp256k1", "secp256r1"], default: "secp256k1", description: "Signature curve" },
    force: { type: "boolean", default: false, description: "Overwrite existing key files" },
  },
  run({ args }) {
    const out = args.out;
    if (typeof out !== "string" || out === "") throw new AppError("usage", "--out needs a folder path");
    const privatePath = join(out, PRIVATE_KEY_FILE);
    const publicPath = join(out, PUBLIC_KEY_FILE);
    const existing = [privatePath, publicPath].filter((path) => existsSync(path));
    if (existing.length > 0 && !args.force) {
      throw new AppError("usage", `refusing to overwrite ${existing.join(" and ")} (use --force to replace)`);
    }
    try {
      mkdirSync(out, { recursive: true });
    } catch (error) {
      throw new AppError("file_unreadable", `cannot create ${out}: ${(error as Error).message}`);
    }
    const key = generateKey(args.algorithm as SignatureAlgorithm);
    writeNew(privatePath, encodePrivateKeyPem(key), 0o600, args.force);
    writeNew(publicPath, key.publicKeyPem, 0o644, args.force);
    console.log(`wrote ${privatePath} (private, mode 0600) and ${publicPath}`);
    console.log(`notary key ${publicKeyFingerprint(decodePublicKeyPem(key.publicKeyPem))} (${key.algorithm})`);
  },
});
