/**
 * `cli notary keygen`: writes a notary key pair in openssl-compatible PEM: notary.key (PKCS#8,
 * mode 0600) and notary.pub (SPKI), the file `cli verify --notary-pub-key` pins.
 */
import { join } from "node:path";
import { defineCommand } from "citty";
import { AppError } from "../core/errors.ts";
import { PRIVATE_KEY_FILE, PUBLIC_KEY_FILE, writeKeyPair } from "../notary/key-files.ts";
import type { SignatureAlgorithm } from "../proof/format.ts";
import { decodePublicKeyPem, publicKeyFingerprint } from "../proof/keys.ts";
import { cliIo } from "./io.ts";

export default defineCommand({
  meta: { name: "keygen", description: "Generate the notary's signing key pair" },
  args: {
    out: { type: "string", valueHint: "dir", required: true, description: "Folder to write notary.key and notary.pub into (created if missing)" },
    algorithm: { type: "enum", options: ["secp256k1", "secp256r1"], default: "secp256k1", description: "Signature curve" },
    force: { type: "boolean", default: false, description: "Overwrite existing key files" },
  },
  async run({ args }) {
    const out = args.out;
    if (typeof out !== "string" || out === "") throw new AppError("usage", "--out needs a folder path");
    const key = writeKeyPair(out, args.algorithm as SignatureAlgorithm, args.force);
    await cliIo().stdout.write(
      `wrote ${join(out, PRIVATE_KEY_FILE)} (private, mode 0600) and ${join(out, PUBLIC_KEY_FILE)}\n` +
        `notary key ${publicKeyFingerprint(decodePublicKeyPem(key.publicKeyPem))} (${key.algorithm})\n`,
    );
  },
});
